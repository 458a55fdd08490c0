-- 11: a process still alive long after SIGKILL (uninterruptible sleep): its scope goes on
-- without it; its row stays live until it finally ends.
ALTER TABLE processes ADD COLUMN unkillable INTEGER NOT NULL DEFAULT 0;
