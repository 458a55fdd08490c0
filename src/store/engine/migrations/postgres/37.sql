-- 37: what a `/metrics` scrape reads besides the counts, from indexes that grow with the work
-- at hand, not with the history: the hooks started since the last scrape (by start time; every
-- process row was read), and the oldest due of the queued snapshots (every snapshot row was
-- read; their number now comes from the crawls' kept counts).
CREATE INDEX processes_hooks_started ON processes(started_at) WHERE kind = 'hook';
CREATE INDEX snapshots_queued ON snapshots(retry_at) WHERE status = 'queued';
