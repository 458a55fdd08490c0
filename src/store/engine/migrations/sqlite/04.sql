-- 4: how often a crawl or snapshot was put back after its worker died (for back-off).
ALTER TABLE crawls ADD COLUMN restarts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN restarts INTEGER NOT NULL DEFAULT 0;
