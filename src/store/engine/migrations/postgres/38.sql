-- 38: crawls taken from an ArchiveBox collection's queue (`[archivebox] serve_queue`). A crawl's
-- own config (`env`: a JSON object of variables its hooks get above every other setting — the
-- frozen config of the ArchiveBox Crawl it runs). Each served crawl's link to its Crawl
-- (ArchiveBox's id, once; the ArchiveBox user who queued it, under whose directory its snapshots
-- are filed), the Crawl's status as the last turn saw it (a change since then was
-- made in ArchiveBox, and abxd follows it), and when abxd let go of it; and which of its
-- snapshots are whole in ArchiveBox (not sent again). Both go with their crawl or snapshot.
ALTER TABLE crawls ADD COLUMN env TEXT NOT NULL DEFAULT '{}';
CREATE TABLE archivebox_crawls (
    archivebox_id TEXT PRIMARY KEY,
    crawl_id      BIGINT NOT NULL UNIQUE REFERENCES crawls(id) ON DELETE CASCADE,
    owner         TEXT NOT NULL,
    seen          TEXT,
    released_at   BIGINT
);
CREATE INDEX archivebox_crawls_held ON archivebox_crawls(crawl_id) WHERE released_at IS NULL;
CREATE TABLE archivebox_mirrored (
    snapshot_id   BIGINT PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE
);
