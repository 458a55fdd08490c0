-- 39: an ArchiveBox Crawl may be run by several crawls, one after another: its first run, then a
-- run for each time ArchiveBox queues some of its Snapshots again (its UI's "Redo", "Redo
-- failed", a Snapshot left unfinished by ArchiveBox's own runner) — a *redo*, whose snapshots
-- are ArchiveBox's (same ids) and whose files replace theirs. The link is the crawl's, once; an
-- ArchiveBox Crawl is held by one crawl at a time.
ALTER TABLE archivebox_crawls DROP CONSTRAINT archivebox_crawls_pkey;
ALTER TABLE archivebox_crawls DROP CONSTRAINT archivebox_crawls_crawl_id_key;
ALTER TABLE archivebox_crawls ADD PRIMARY KEY (crawl_id);
ALTER TABLE archivebox_crawls ADD COLUMN redo INTEGER NOT NULL DEFAULT 0;
DROP INDEX archivebox_crawls_held;
CREATE UNIQUE INDEX archivebox_crawls_held ON archivebox_crawls(archivebox_id)
    WHERE released_at IS NULL;
CREATE INDEX archivebox_crawls_of ON archivebox_crawls(archivebox_id);
