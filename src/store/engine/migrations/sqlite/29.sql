-- 29: what ArchiveBox's `add` also says of a crawl — its tags, persona, parser — as JSON
-- (`CrawlOptions`), on a crawl and on the schedule that makes crawls; and what `abxctl
-- status` counts of the last day, indexed.
ALTER TABLE crawls ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
ALTER TABLE schedules ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
-- The time zone a schedule's cron is read in: the one it was added in (an IANA name).
ALTER TABLE schedules ADD COLUMN zone TEXT;
-- (`abxctl status` counts what sealed and failed in the last day.)
CREATE INDEX snapshots_by_sealed_at ON snapshots(sealed_at) WHERE sealed_at IS NOT NULL;
CREATE INDEX results_failed_by_end ON results(ended_at) WHERE status = 'failed';
-- The hosts of a fleet that did their part of an export (JSON array of machine ids): each
-- copies the snapshots that ran on it.
ALTER TABLE exports ADD COLUMN done_by TEXT NOT NULL DEFAULT '[]';
