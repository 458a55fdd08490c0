-- 5: per-crawl config overrides were never written nor read: the column goes.
ALTER TABLE crawls DROP COLUMN config;
