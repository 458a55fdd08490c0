-- 41: politeness per host. A snapshot's host key (its URL's registrable domain, an IP literal
-- by address, '' for what is no network host; NULL until abxd keyed it: rows of earlier
-- versions are keyed when the daemon starts). `hosts`: one shared record per host key — when the
-- last start on it was (each claimer holds it to its own delay) and when the next may be, as
-- shown, and its cool-down after it said 429 or 503. `backoff_counts`: the
-- back-offs by reason, for `/metrics`. `host_lanes`: per crawl and host key with queued
-- snapshots, when that lane is next looked at — what the claim reads by index instead of walking
-- the queue; kept by the triggers below, so that every way a snapshot becomes queued (added,
-- requeued, recovered, retried) is seen.
ALTER TABLE snapshots ADD COLUMN host_key TEXT;
ALTER TABLE snapshots ADD COLUMN backoffs INTEGER NOT NULL DEFAULT 0;
CREATE INDEX snapshots_unkeyed ON snapshots(id) WHERE host_key IS NULL;
CREATE INDEX snapshots_lane ON snapshots(crawl_id, host_key, retry_at, id) WHERE status = 'queued';
CREATE INDEX snapshots_host_started ON snapshots(host_key) WHERE status = 'started';
CREATE INDEX snapshots_host_queued ON snapshots(host_key) WHERE status = 'queued';
-- A crawl's `--priority`: queued crawls are claimed highest first.
ALTER TABLE crawls ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
CREATE INDEX crawls_by_priority ON crawls(priority DESC, retry_at, id) WHERE status = 'queued';
CREATE TABLE hosts (
    key             TEXT PRIMARY KEY,
    last_start_at   INTEGER NOT NULL DEFAULT 0,
    next_start_at   INTEGER NOT NULL DEFAULT 0,
    cooldown_until  INTEGER NOT NULL DEFAULT 0,
    cooldown_reason TEXT,
    backoffs        INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE backoff_counts (
    reason  TEXT PRIMARY KEY,
    count   INTEGER NOT NULL
);
CREATE TABLE host_lanes (
    crawl_id  INTEGER NOT NULL,
    host_key  TEXT NOT NULL,
    due_at    INTEGER NOT NULL,
    PRIMARY KEY (crawl_id, host_key)
);
CREATE INDEX host_lanes_due ON host_lanes(crawl_id, due_at);
CREATE INDEX host_lanes_all_due ON host_lanes(due_at);
CREATE INDEX host_lanes_by_host ON host_lanes(host_key);
CREATE TRIGGER snapshots_lane_insert AFTER INSERT ON snapshots
    WHEN NEW.status = 'queued' AND NEW.host_key IS NOT NULL BEGIN
    INSERT INTO host_lanes (crawl_id, host_key, due_at)
        VALUES (NEW.crawl_id, NEW.host_key, NEW.retry_at)
        ON CONFLICT (crawl_id, host_key) DO UPDATE SET due_at = min(due_at, excluded.due_at);
END;
CREATE TRIGGER snapshots_lane_update AFTER UPDATE OF status, retry_at, host_key ON snapshots
    WHEN NEW.status = 'queued' AND NEW.host_key IS NOT NULL BEGIN
    INSERT INTO host_lanes (crawl_id, host_key, due_at)
        VALUES (NEW.crawl_id, NEW.host_key, NEW.retry_at)
        ON CONFLICT (crawl_id, host_key) DO UPDATE SET due_at = min(due_at, excluded.due_at);
END;
CREATE TRIGGER snapshots_host_freed AFTER UPDATE OF status ON snapshots
    WHEN OLD.status = 'started' AND NEW.status != 'started' AND OLD.host_key IS NOT NULL BEGIN
    UPDATE host_lanes SET due_at = 0 WHERE host_key = OLD.host_key AND due_at > 0;
END;
