-- 31: an import's seeds are its depth-0 snapshots, not a list rewritten into its crawl's row
-- (which every snapshot worker of a 100,000-link import read whole): the crawl counts them,
-- and keeps what its scope and its reach need of them — each seed's host and port, once.
ALTER TABLE crawls ADD COLUMN imported_seeds BIGINT NOT NULL DEFAULT 0;
CREATE TABLE seed_hosts (
    crawl_id    BIGINT NOT NULL REFERENCES crawls(id),
    host        TEXT NOT NULL,
    -- (0: the scheme's default port.)
    port        INTEGER NOT NULL,
    PRIMARY KEY (crawl_id, host, port)
);
