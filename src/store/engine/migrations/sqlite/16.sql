-- 16: machines — every daemon registers the host it runs on (its stable id, hostname, boot,
-- version, start and, on a shared store, a heartbeat), and every process row names the
-- machine its process runs on (NULL: written before there were machines; this host's).
CREATE TABLE machines (
    id            TEXT PRIMARY KEY,
    hostname      TEXT NOT NULL,
    boot_id       TEXT NOT NULL,
    version       TEXT NOT NULL,
    started_at    INTEGER NOT NULL,
    heartbeat_at  INTEGER NOT NULL
);
ALTER TABLE processes ADD COLUMN machine_id TEXT;
