-- 27: a background hook's success that was a session — it ran until its scope (or a hook
-- that waited for it) stopped it — which a later run of the scope starts again.
-- And what this machine's workers' writes found of a busy database (for `/metrics`), added
-- by each worker as it exits.
ALTER TABLE results ADD COLUMN session INTEGER NOT NULL DEFAULT 0;
ALTER TABLE machines ADD COLUMN worker_busy_writes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE machines ADD COLUMN worker_refused_writes INTEGER NOT NULL DEFAULT 0;
