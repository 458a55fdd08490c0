-- 42: fair shares of a host's snapshot budget. What a host runs — its started snapshots by
-- owner, and its started crawls — is read at each snapshot claim by these indexes, whatever the
-- queue's length.
CREATE INDEX snapshots_running ON snapshots(owner_id, crawl_id) WHERE status = 'started';
CREATE INDEX crawls_running ON crawls(owner_id) WHERE status = 'started';
