-- 21: UUIDv7 ids beside abxd's own, as abx-dl and ArchiveBox know crawls, snapshots and
-- results (`uuid7`); rows written before get random ones.
ALTER TABLE crawls ADD COLUMN uuid TEXT;
ALTER TABLE snapshots ADD COLUMN uuid TEXT;
ALTER TABLE results ADD COLUMN uuid TEXT;
UPDATE crawls SET uuid = lower(hex(randomblob(16)));
UPDATE snapshots SET uuid = lower(hex(randomblob(16)));
UPDATE results SET uuid = lower(hex(randomblob(16)));
