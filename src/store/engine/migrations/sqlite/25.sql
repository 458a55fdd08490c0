-- 25: what a running crawl's snapshots wait for, said by its crawl worker for `abxctl
-- status` (admission: memory, browsers); NULL: nothing waits.
ALTER TABLE crawls ADD COLUMN admission TEXT;
