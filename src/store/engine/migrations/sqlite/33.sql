-- 33: the columns that name a process row, indexed where they name one: deleting a process row
-- (`prune`) makes the database look for rows that still name it, which without these read
-- every result, snapshot and crawl — per row deleted (a prune of 10 000 rows beside a million
-- results ran for more than ten minutes).
CREATE INDEX results_by_process ON results(process_id) WHERE process_id IS NOT NULL;
CREATE INDEX snapshots_by_owner ON snapshots(owner_id) WHERE owner_id IS NOT NULL;
CREATE INDEX crawls_by_owner ON crawls(owner_id) WHERE owner_id IS NOT NULL;
