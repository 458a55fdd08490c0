-- 39: an ArchiveBox Crawl may be run by several crawls, one after another: its first run, then a
-- run for each time ArchiveBox queues some of its Snapshots again (its UI's "Redo", "Redo
-- failed", a Snapshot left unfinished by ArchiveBox's own runner) — a *redo*, whose snapshots
-- are ArchiveBox's (same ids) and whose files replace theirs. The link is the crawl's, once; an
-- ArchiveBox Crawl is held by one crawl at a time.
CREATE TABLE archivebox_crawls_39 (
    archivebox_id TEXT NOT NULL,
    crawl_id      INTEGER PRIMARY KEY REFERENCES crawls(id) ON DELETE CASCADE,
    owner         TEXT NOT NULL,
    seen          TEXT,
    released_at   INTEGER,
    redo          INTEGER NOT NULL DEFAULT 0
);
INSERT INTO archivebox_crawls_39 (archivebox_id, crawl_id, owner, seen, released_at)
    SELECT archivebox_id, crawl_id, owner, seen, released_at FROM archivebox_crawls;
DROP TABLE archivebox_crawls;
ALTER TABLE archivebox_crawls_39 RENAME TO archivebox_crawls;
CREATE UNIQUE INDEX archivebox_crawls_held ON archivebox_crawls(archivebox_id)
    WHERE released_at IS NULL;
CREATE INDEX archivebox_crawls_of ON archivebox_crawls(archivebox_id);
