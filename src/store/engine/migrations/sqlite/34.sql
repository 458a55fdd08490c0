-- 34: finished process rows by when they ended: what `/metrics` reads at each scrape (the runs
-- ended since its last one) was a read of every final row — over 150 ms once a host had run a
-- few tens of thousands of snapshots, and growing with its history.
CREATE INDEX processes_ended ON processes(status, ended_at);
