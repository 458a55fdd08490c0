-- 24: UUIDv7 ids of process rows, as a snapshot's `index.jsonl` names its Process records
-- (and each ArchiveResult its `process_id`); rows from before have none.
ALTER TABLE processes ADD COLUMN uuid TEXT;
