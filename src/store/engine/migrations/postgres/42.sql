-- 42: fair shares of a host's snapshot budget (see SQLite's 42.sql).
CREATE INDEX snapshots_running ON snapshots(owner_id, crawl_id) WHERE status = 'started';
CREATE INDEX crawls_running ON crawls(owner_id) WHERE status = 'started';
