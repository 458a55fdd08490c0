-- 1: the process table.
CREATE TABLE processes (
    id            INTEGER PRIMARY KEY,
    parent_id     INTEGER REFERENCES processes(id),
    kind          TEXT NOT NULL CHECK (kind IN
                      ('orchestrator', 'crawl_worker', 'snapshot_worker', 'hook', 'child')),
    crawl_id      INTEGER,
    snapshot_id   INTEGER,
    result_id     INTEGER,
    pid           INTEGER,
    boot_id       TEXT,
    start_ticks   INTEGER,
    pgid          INTEGER,
    argv          TEXT NOT NULL,          -- JSON array of strings
    cwd           TEXT NOT NULL,
    stdout_path   TEXT,
    stderr_path   TEXT,
    timeout_ms    INTEGER,
    deadline_at   INTEGER,                -- unix ms
    status        TEXT NOT NULL CHECK (status IN
                      ('starting', 'running', 'stopping', 'exited', 'lost')),
    created_at    INTEGER NOT NULL,       -- unix ms, all times below too
    started_at    INTEGER,
    sigterm_at    INTEGER,
    sigkill_at    INTEGER,
    exit_code     INTEGER,
    exit_signal   INTEGER,
    ended_at      INTEGER,
    end_reason    TEXT CHECK (end_reason IN
                      ('exited', 'timeout', 'killed', 'orphan_reaped', 'lost',
                       'spawn_failed', 'unknown')),
    end_detail    TEXT,
    CHECK ((status IN ('exited', 'lost')) = (ended_at IS NOT NULL)),
    CHECK (pid IS NULL OR (boot_id IS NOT NULL AND start_ticks IS NOT NULL))
);
CREATE INDEX processes_running ON processes(status)
    WHERE status IN ('starting', 'running', 'stopping');
CREATE INDEX processes_children ON processes(parent_id);
