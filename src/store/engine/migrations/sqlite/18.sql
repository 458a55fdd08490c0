-- 18: URLs hooks discovered that `url_rule` refused, counted per crawl and reason, with the
-- first few of them (a line each) to show.
CREATE TABLE refused_urls (
    crawl_id    INTEGER NOT NULL REFERENCES crawls(id),
    reason      TEXT NOT NULL,
    count       INTEGER NOT NULL,
    first_urls  TEXT NOT NULL,
    PRIMARY KEY (crawl_id, reason)
);
