-- 26: schedules (`abxctl schedule`): a crawl made again at each occurrence, linked to it.
CREATE TABLE schedules (
    id            INTEGER PRIMARY KEY,
    urls          TEXT NOT NULL,          -- JSON array, as crawls.urls
    max_depth     INTEGER NOT NULL CHECK (max_depth >= 0),
    plugins       TEXT,                   -- JSON array; NULL: every plugin
    rules         TEXT NOT NULL,          -- JSON, as crawls.rules
    every_ms      INTEGER CHECK (every_ms > 0),
    cron          TEXT,
    anchor_at     INTEGER NOT NULL,       -- unix ms: periods are counted from it
    next_at       INTEGER NOT NULL,       -- unix ms (the store's shared clock)
    paused_at     INTEGER,
    created_at    INTEGER NOT NULL,
    fired         INTEGER NOT NULL DEFAULT 0,
    skipped       INTEGER NOT NULL DEFAULT 0,
    last_note     TEXT,                   -- what its last occurrence did, in words
    uuid          TEXT,
    import        INTEGER NOT NULL DEFAULT 0, -- its one URL is a file to import
    CHECK ((every_ms IS NULL) != (cron IS NULL))
);
ALTER TABLE crawls ADD COLUMN schedule_id INTEGER REFERENCES schedules(id);
CREATE INDEX crawls_by_schedule ON crawls(schedule_id) WHERE schedule_id IS NOT NULL;
-- What `abxctl add --from FILE` imported (bookmarks, a feed, text), parsed by the plugins
-- that accept it into the crawl's seeds; NULL: a crawl of the URLs it was given.
ALTER TABLE crawls ADD COLUMN input TEXT;
-- Or the file:// URL of what to import, read by the parser hooks themselves (a schedule's
-- `--from FILE`: read anew at each occurrence, as the hooks' user).
ALTER TABLE crawls ADD COLUMN import_url TEXT;
-- (`--only-new` asks whether any crawl archived a URL.)
CREATE INDEX snapshots_by_url ON snapshots(url);
