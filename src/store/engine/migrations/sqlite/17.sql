-- 17: fenced leases — every crawl and snapshot carries an epoch, incremented whenever it
-- changes hands (claimed, put back, sealed): a worker's writes for it are taken only while
-- the epoch is still the one of its claim.
ALTER TABLE crawls ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
