-- 9: the inode of a process's pidfd (pidfs, Linux ≥ 6.9), unique within a boot: a pid taken
-- again within one start tick by another process is another identity, and the unique index
-- tells the two apart (rows from before it have none: 0 in the index).
ALTER TABLE processes ADD COLUMN pidfd_ino INTEGER;
DROP INDEX processes_identity;
CREATE UNIQUE INDEX processes_identity
    ON processes(boot_id, pid, start_ticks, COALESCE(pidfd_ino, 0))
    WHERE pid IS NOT NULL;
