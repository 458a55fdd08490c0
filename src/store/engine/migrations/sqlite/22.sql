-- 22: crawls to export into an ArchiveBox collection (`target`, its data dir; `owner`, the
-- ArchiveBox user they are filed under) — queued at `add` or by `abxctl export`, exported
-- once sealed — with what the export did.
CREATE TABLE exports (
    crawl_id    INTEGER NOT NULL REFERENCES crawls(id),
    target      TEXT NOT NULL,
    owner       TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('queued', 'running', 'imported', 'failed')),
    detail      TEXT,
    process_id  INTEGER,             -- the row of its last step (not a reference: rows are pruned)
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (crawl_id, target)
);
