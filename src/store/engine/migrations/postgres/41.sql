-- 41: politeness per host (see SQLite's 41.sql for what each part is).
ALTER TABLE snapshots ADD COLUMN host_key TEXT;
ALTER TABLE snapshots ADD COLUMN backoffs BIGINT NOT NULL DEFAULT 0;
CREATE INDEX snapshots_unkeyed ON snapshots(id) WHERE host_key IS NULL;
CREATE INDEX snapshots_lane ON snapshots(crawl_id, host_key, retry_at, id) WHERE status = 'queued';
CREATE INDEX snapshots_host_started ON snapshots(host_key) WHERE status = 'started';
CREATE INDEX snapshots_host_queued ON snapshots(host_key) WHERE status = 'queued';
ALTER TABLE crawls ADD COLUMN priority BIGINT NOT NULL DEFAULT 0;
CREATE INDEX crawls_by_priority ON crawls(priority DESC, retry_at, id) WHERE status = 'queued';
CREATE TABLE hosts (
    key             TEXT PRIMARY KEY,
    last_start_at   BIGINT NOT NULL DEFAULT 0,
    next_start_at   BIGINT NOT NULL DEFAULT 0,
    cooldown_until  BIGINT NOT NULL DEFAULT 0,
    cooldown_reason TEXT,
    backoffs        BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE backoff_counts (
    reason  TEXT PRIMARY KEY,
    count   BIGINT NOT NULL
);
CREATE TABLE host_lanes (
    crawl_id  BIGINT NOT NULL,
    host_key  TEXT NOT NULL,
    due_at    BIGINT NOT NULL,
    PRIMARY KEY (crawl_id, host_key)
);
CREATE INDEX host_lanes_due ON host_lanes(crawl_id, due_at);
CREATE INDEX host_lanes_all_due ON host_lanes(due_at);
CREATE INDEX host_lanes_by_host ON host_lanes(host_key);
CREATE FUNCTION snapshot_lane() RETURNS trigger LANGUAGE plpgsql AS $lane$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.status = 'started' AND NEW.status != 'started'
       AND OLD.host_key IS NOT NULL THEN
        UPDATE host_lanes SET due_at = 0 WHERE host_key = OLD.host_key AND due_at > 0;
    END IF;
    IF NEW.status = 'queued' AND NEW.host_key IS NOT NULL THEN
        INSERT INTO host_lanes (crawl_id, host_key, due_at)
            VALUES (NEW.crawl_id, NEW.host_key, NEW.retry_at)
            ON CONFLICT (crawl_id, host_key)
            DO UPDATE SET due_at = LEAST(host_lanes.due_at, excluded.due_at);
    END IF;
    RETURN NULL;
END
$lane$;
CREATE TRIGGER snapshots_lane_insert AFTER INSERT ON snapshots
    FOR EACH ROW EXECUTE FUNCTION snapshot_lane();
CREATE TRIGGER snapshots_lane_update AFTER UPDATE OF status, retry_at, host_key ON snapshots
    FOR EACH ROW EXECUTE FUNCTION snapshot_lane();
