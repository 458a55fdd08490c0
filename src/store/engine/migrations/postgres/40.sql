-- 40: the snapshot whose hooks found a discovered snapshot's URL (its parent; NULL for a seed),
-- which a crawl served from ArchiveBox's queue writes as the Snapshot's `parent_snapshot`, as
-- ArchiveBox's runner does. Not a reference: prune deletes snapshots in any order.
ALTER TABLE snapshots ADD COLUMN parent_id BIGINT;
