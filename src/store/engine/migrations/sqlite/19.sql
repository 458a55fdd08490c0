-- 19: a crawl's rules (`domain::CrawlRules`, JSON: its allow/deny lists, scope and limits),
-- and which limit ended a crawl or a snapshot, if one did.
ALTER TABLE crawls ADD COLUMN rules TEXT NOT NULL DEFAULT '{}';
ALTER TABLE crawls ADD COLUMN ended_by TEXT;
ALTER TABLE snapshots ADD COLUMN ended_by TEXT;
