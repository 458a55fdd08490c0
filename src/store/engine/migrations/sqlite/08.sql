-- 8: a process found as an unknown child of a supervising process — it left its hook's tree
-- (cleared its marker, changed session) and was re-parented to the subreaper.
ALTER TABLE processes ADD COLUMN escaped INTEGER NOT NULL DEFAULT 0;
