-- 13: the user a row's process runs as (its real uid): a teardown never signals a process
-- that runs as another user than its row says (a row from another database).
ALTER TABLE processes ADD COLUMN uid INTEGER;
