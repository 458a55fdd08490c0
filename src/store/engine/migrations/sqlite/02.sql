-- 2: the work queue — crawls, their snapshots, and one result per hook run.
CREATE TABLE crawls (
    id            INTEGER PRIMARY KEY,
    urls          TEXT NOT NULL,          -- JSON array of strings
    max_depth     INTEGER NOT NULL CHECK (max_depth >= 0),
    plugins       TEXT,                   -- JSON array of plugin names; NULL = all enabled
    config        TEXT NOT NULL DEFAULT '{}', -- JSON object: per-crawl overrides
    status        TEXT NOT NULL CHECK (status IN ('queued', 'started', 'sealed')),
    outcome       TEXT CHECK (outcome IN ('finished', 'cancelled')),
    retry_at      INTEGER NOT NULL,       -- unix ms; in the future = owned (a lease)
    owner_id      INTEGER REFERENCES processes(id),
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    sealed_at     INTEGER,
    CHECK ((status = 'sealed') = (sealed_at IS NOT NULL))
);
CREATE INDEX crawls_due ON crawls(retry_at) WHERE status != 'sealed';

CREATE TABLE snapshots (
    id            INTEGER PRIMARY KEY,
    crawl_id      INTEGER NOT NULL REFERENCES crawls(id),
    url           TEXT NOT NULL,
    depth         INTEGER NOT NULL CHECK (depth >= 0),
    status        TEXT NOT NULL CHECK (status IN ('queued', 'started', 'sealed')),
    retry_at      INTEGER NOT NULL,
    owner_id      INTEGER REFERENCES processes(id),
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    sealed_at     INTEGER,
    UNIQUE (crawl_id, url),
    CHECK ((status = 'sealed') = (sealed_at IS NOT NULL))
);
CREATE INDEX snapshots_due ON snapshots(crawl_id, retry_at) WHERE status != 'sealed';

CREATE TABLE results (
    id            INTEGER PRIMARY KEY,
    crawl_id      INTEGER NOT NULL REFERENCES crawls(id),
    snapshot_id   INTEGER REFERENCES snapshots(id),  -- NULL for crawl hooks
    plugin        TEXT NOT NULL,
    hook          TEXT NOT NULL,          -- the hook's file name
    status        TEXT NOT NULL CHECK (status IN
                      ('queued', 'started', 'succeeded', 'failed', 'skipped')),
    process_id    INTEGER REFERENCES processes(id),  -- the latest run
    attempts      INTEGER NOT NULL DEFAULT 0,
    output        TEXT,
    output_files  TEXT NOT NULL DEFAULT '[]', -- JSON array of paths relative to the hook dir
    output_size   INTEGER NOT NULL DEFAULT 0,
    started_at    INTEGER,
    ended_at      INTEGER
);
CREATE UNIQUE INDEX results_per_hook ON results(crawl_id, COALESCE(snapshot_id, 0), hook);
CREATE INDEX processes_by_crawl ON processes(crawl_id);
