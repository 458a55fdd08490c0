-- 3: descendants and teardown — one row per real process, leaks, SIGKILL deadlines, and the
-- id that makes this database's process markers unique on the machine.
CREATE TABLE meta (
    key           TEXT PRIMARY KEY,
    value         TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('instance_id', lower(hex(randomblob(8))));
ALTER TABLE processes ADD COLUMN leaking INTEGER NOT NULL DEFAULT 0;
ALTER TABLE processes ADD COLUMN kill_at INTEGER;   -- unix ms: when SIGKILL is due
CREATE UNIQUE INDEX processes_identity ON processes(boot_id, pid, start_ticks)
    WHERE pid IS NOT NULL;
