-- 35: process rows by kind, status and host, for the counts `/metrics` gives at each scrape: a
-- read of the index alone instead of every row of the table (at 250 000 rows 150-215 ms became
-- ~30 ms). Still a read of every row's entry, growing with the history; kept counts, as the
-- crawls' (migration 32), would make it flat.
CREATE INDEX processes_by_kind_status ON processes(kind, status, machine_id);
