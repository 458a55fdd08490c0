-- 20: a crawl can end `failed` (a crawl hook it cannot go on without failed). SQLite cannot
-- change a CHECK, so the crawls table is rebuilt with its rows (foreign keys are checked
-- after, see `migrate_to`).
CREATE TABLE crawls_new (
    id            INTEGER PRIMARY KEY,
    urls          TEXT NOT NULL,          -- JSON array of strings
    max_depth     INTEGER NOT NULL CHECK (max_depth >= 0),
    plugins       TEXT,                   -- JSON array of plugin names; NULL = all enabled
    status        TEXT NOT NULL CHECK (status IN ('queued', 'started', 'sealed')),
    outcome       TEXT CHECK (outcome IN ('finished', 'cancelled', 'failed')),
    retry_at      INTEGER NOT NULL,       -- unix ms; in the future = owned (a lease)
    owner_id      INTEGER REFERENCES processes(id),
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    sealed_at     INTEGER,
    restarts      INTEGER NOT NULL DEFAULT 0,
    paused_at     INTEGER,
    epoch         INTEGER NOT NULL DEFAULT 0,
    rules         TEXT NOT NULL DEFAULT '{}',
    ended_by      TEXT,
    CHECK ((status = 'sealed') = (sealed_at IS NOT NULL))
);
INSERT INTO crawls_new SELECT id, urls, max_depth, plugins, status, outcome, retry_at,
    owner_id, created_at, started_at, sealed_at, restarts, paused_at, epoch, rules, ended_by
    FROM crawls;
DROP TABLE crawls;
ALTER TABLE crawls_new RENAME TO crawls;
CREATE INDEX crawls_due ON crawls(retry_at) WHERE status != 'sealed';
