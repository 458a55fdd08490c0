-- 15: `abxctl pause` — while a crawl is paused no hook of it starts and no snapshot of it is
-- claimed (running hooks go on); NULL when it runs.
ALTER TABLE crawls ADD COLUMN paused_at INTEGER;
