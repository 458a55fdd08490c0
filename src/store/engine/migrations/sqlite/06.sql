-- 6: the abx-plugins contract — a `noresults` result status (a hook that ran and found
-- nothing to archive), and the tags hooks report on a snapshot. SQLite cannot change a
-- CHECK, so the results table is rebuilt with its rows.
CREATE TABLE results_new (
    id            INTEGER PRIMARY KEY,
    crawl_id      INTEGER NOT NULL REFERENCES crawls(id),
    snapshot_id   INTEGER REFERENCES snapshots(id),  -- NULL for crawl hooks
    plugin        TEXT NOT NULL,
    hook          TEXT NOT NULL,          -- the hook's file name
    status        TEXT NOT NULL CHECK (status IN
                      ('queued', 'started', 'succeeded', 'noresults', 'failed', 'skipped')),
    process_id    INTEGER REFERENCES processes(id),  -- the latest run
    attempts      INTEGER NOT NULL DEFAULT 0,
    output        TEXT,
    output_files  TEXT NOT NULL DEFAULT '[]', -- JSON array of paths relative to the hook dir
    output_size   INTEGER NOT NULL DEFAULT 0,
    started_at    INTEGER,
    ended_at      INTEGER
);
INSERT INTO results_new SELECT id, crawl_id, snapshot_id, plugin, hook, status, process_id,
    attempts, output, output_files, output_size, started_at, ended_at FROM results;
DROP TABLE results;
ALTER TABLE results_new RENAME TO results;
CREATE UNIQUE INDEX results_per_hook ON results(crawl_id, COALESCE(snapshot_id, 0), hook);
CREATE TABLE tags (
    snapshot_id   INTEGER NOT NULL REFERENCES snapshots(id),
    name          TEXT NOT NULL,
    PRIMARY KEY (snapshot_id, name)
);
