-- 30: listings that page, and reads that cost the page, not the table: a crawl's snapshots in
-- id order, all or in one status (`abxctl show --page`, the web view), and counted by
-- status; a snapshot's results (each snapshot worker reads its own at its end); a crawl's
-- results counted by status, its failed ones listed; a result's latest run.
CREATE INDEX snapshots_by_crawl ON snapshots(crawl_id, id);
CREATE INDEX snapshots_by_crawl_status ON snapshots(crawl_id, status, id);
CREATE INDEX results_by_snapshot ON results(snapshot_id) WHERE snapshot_id IS NOT NULL;
CREATE INDEX results_by_crawl_status ON results(crawl_id, status, id);
CREATE INDEX processes_by_result ON processes(result_id) WHERE result_id IS NOT NULL;
