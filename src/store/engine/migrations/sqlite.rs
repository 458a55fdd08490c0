//! The SQLite schema's migrations, in order: the schema at version N is what applying the first N
//! gives (`super::migrate_to`). PostgreSQL's are in `postgres` (a baseline, then the same steps).

/// Each entry takes the schema from version `index` to version `index + 1`.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: the process table.
    r#"
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
    "#,
    // 2: the work queue — crawls, their snapshots, and one result per hook run.
    r#"
    CREATE TABLE crawls (
        id            INTEGER PRIMARY KEY,
        urls          TEXT NOT NULL,          -- JSON array of strings
        max_depth     INTEGER NOT NULL CHECK (max_depth >= 0),
        plugins       TEXT,                   -- JSON array of plugin names; NULL = all enabled
        config        TEXT NOT NULL DEFAULT '{}', -- JSON object: per-crawl overrides
        status        TEXT NOT NULL CHECK (status IN ('queued', 'started', 'sealed')),
        outcome       TEXT CHECK (outcome IN ('finished', 'cancelled')),
        retry_at      INTEGER NOT NULL,       -- unix ms; in the future = owned (a lease)
        owner_id      INTEGER REFERENCES processes(id),
        created_at    INTEGER NOT NULL,
        started_at    INTEGER,
        sealed_at     INTEGER,
        CHECK ((status = 'sealed') = (sealed_at IS NOT NULL))
    );
    CREATE INDEX crawls_due ON crawls(retry_at) WHERE status != 'sealed';

    CREATE TABLE snapshots (
        id            INTEGER PRIMARY KEY,
        crawl_id      INTEGER NOT NULL REFERENCES crawls(id),
        url           TEXT NOT NULL,
        depth         INTEGER NOT NULL CHECK (depth >= 0),
        status        TEXT NOT NULL CHECK (status IN ('queued', 'started', 'sealed')),
        retry_at      INTEGER NOT NULL,
        owner_id      INTEGER REFERENCES processes(id),
        created_at    INTEGER NOT NULL,
        started_at    INTEGER,
        sealed_at     INTEGER,
        UNIQUE (crawl_id, url),
        CHECK ((status = 'sealed') = (sealed_at IS NOT NULL))
    );
    CREATE INDEX snapshots_due ON snapshots(crawl_id, retry_at) WHERE status != 'sealed';

    CREATE TABLE results (
        id            INTEGER PRIMARY KEY,
        crawl_id      INTEGER NOT NULL REFERENCES crawls(id),
        snapshot_id   INTEGER REFERENCES snapshots(id),  -- NULL for crawl hooks
        plugin        TEXT NOT NULL,
        hook          TEXT NOT NULL,          -- the hook's file name
        status        TEXT NOT NULL CHECK (status IN
                          ('queued', 'started', 'succeeded', 'failed', 'skipped')),
        process_id    INTEGER REFERENCES processes(id),  -- the latest run
        attempts      INTEGER NOT NULL DEFAULT 0,
        output        TEXT,
        output_files  TEXT NOT NULL DEFAULT '[]', -- JSON array of paths relative to the hook dir
        output_size   INTEGER NOT NULL DEFAULT 0,
        started_at    INTEGER,
        ended_at      INTEGER
    );
    CREATE UNIQUE INDEX results_per_hook ON results(crawl_id, COALESCE(snapshot_id, 0), hook);
    CREATE INDEX processes_by_crawl ON processes(crawl_id);
    "#,
    // 3: descendants and teardown — one row per real process, leaks, SIGKILL deadlines, and the
    // id that makes this database's process markers unique on the machine.
    r#"
    CREATE TABLE meta (
        key           TEXT PRIMARY KEY,
        value         TEXT NOT NULL
    );
    INSERT INTO meta (key, value) VALUES ('instance_id', lower(hex(randomblob(8))));
    ALTER TABLE processes ADD COLUMN leaking INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE processes ADD COLUMN kill_at INTEGER;   -- unix ms: when SIGKILL is due
    CREATE UNIQUE INDEX processes_identity ON processes(boot_id, pid, start_ticks)
        WHERE pid IS NOT NULL;
    "#,
    // 4: how often a crawl or snapshot was put back after its worker died (for back-off).
    r#"
    ALTER TABLE crawls ADD COLUMN restarts INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE snapshots ADD COLUMN restarts INTEGER NOT NULL DEFAULT 0;
    "#,
    // 5: per-crawl config overrides were never written nor read: the column goes.
    r#"
    ALTER TABLE crawls DROP COLUMN config;
    "#,
    // 6: the abx-plugins contract — a `noresults` result status (a hook that ran and found
    // nothing to archive), and the tags hooks report on a snapshot. SQLite cannot change a
    // CHECK, so the results table is rebuilt with its rows.
    r#"
    CREATE TABLE results_new (
        id            INTEGER PRIMARY KEY,
        crawl_id      INTEGER NOT NULL REFERENCES crawls(id),
        snapshot_id   INTEGER REFERENCES snapshots(id),  -- NULL for crawl hooks
        plugin        TEXT NOT NULL,
        hook          TEXT NOT NULL,          -- the hook's file name
        status        TEXT NOT NULL CHECK (status IN
                          ('queued', 'started', 'succeeded', 'noresults', 'failed', 'skipped')),
        process_id    INTEGER REFERENCES processes(id),  -- the latest run
        attempts      INTEGER NOT NULL DEFAULT 0,
        output        TEXT,
        output_files  TEXT NOT NULL DEFAULT '[]', -- JSON array of paths relative to the hook dir
        output_size   INTEGER NOT NULL DEFAULT 0,
        started_at    INTEGER,
        ended_at      INTEGER
    );
    INSERT INTO results_new SELECT id, crawl_id, snapshot_id, plugin, hook, status, process_id,
        attempts, output, output_files, output_size, started_at, ended_at FROM results;
    DROP TABLE results;
    ALTER TABLE results_new RENAME TO results;
    CREATE UNIQUE INDEX results_per_hook ON results(crawl_id, COALESCE(snapshot_id, 0), hook);
    CREATE TABLE tags (
        snapshot_id   INTEGER NOT NULL REFERENCES snapshots(id),
        name          TEXT NOT NULL,
        PRIMARY KEY (snapshot_id, name)
    );
    "#,
    // 7: binaries `abxd install` provisioned: a plugin whose declared binaries are not here does
    // not run (its hooks would otherwise install them on their own clock, mid-crawl).
    r#"
    CREATE TABLE binaries (
        name          TEXT PRIMARY KEY,       -- as declared, placeholders filled
        plugin        TEXT NOT NULL,          -- the plugin it was installed for
        detail        TEXT NOT NULL,          -- what the installer said (version, path)
        installed_at  INTEGER NOT NULL
    );
    "#,
    // 8: a process found as an unknown child of a supervising process — it left its hook's tree
    // (cleared its marker, changed session) and was re-parented to the subreaper.
    r#"
    ALTER TABLE processes ADD COLUMN escaped INTEGER NOT NULL DEFAULT 0;
    "#,
    // 9: the inode of a process's pidfd (pidfs, Linux ≥ 6.9), unique within a boot: a pid taken
    // again within one start tick by another process is another identity, and the unique index
    // tells the two apart (rows from before it have none: 0 in the index).
    r#"
    ALTER TABLE processes ADD COLUMN pidfd_ino INTEGER;
    DROP INDEX processes_identity;
    CREATE UNIQUE INDEX processes_identity
        ON processes(boot_id, pid, start_ticks, COALESCE(pidfd_ino, 0))
        WHERE pid IS NOT NULL;
    "#,
    // 10: cgroup containment — the cgroup a row's process ran in, and what the cgroup measured
    // of it (CPU time of it and its descendants, peak memory where the controller is enabled).
    r#"
    ALTER TABLE processes ADD COLUMN cgroup TEXT;
    ALTER TABLE processes ADD COLUMN cpu_usec INTEGER;
    ALTER TABLE processes ADD COLUMN memory_peak INTEGER;
    "#,
    // 11: a process still alive long after SIGKILL (uninterruptible sleep): its scope goes on
    // without it; its row stays live until it finally ends.
    r#"
    ALTER TABLE processes ADD COLUMN unkillable INTEGER NOT NULL DEFAULT 0;
    "#,
    // 12: times that decide are on the boot clock (`boot_clock_ms`), never the wall clock: a
    // row's deadline as well (`deadline_at` stays, for people); crawls' and snapshots' `retry_at`
    // are boot-clock ms from now on (rebased at each start in another boot).
    r#"
    ALTER TABLE processes ADD COLUMN deadline_clock INTEGER;
    "#,
    // 13: the user a row's process runs as (its real uid): a teardown never signals a process
    // that runs as another user than its row says (a row from another database).
    r#"
    ALTER TABLE processes ADD COLUMN uid INTEGER;
    "#,
    // 14: operator actions — a `cancelled` result status (a result left open when its crawl was
    // cancelled: it neither ran to its end nor failed). The results table is rebuilt, as in 6.
    r#"
    CREATE TABLE results_new (
        id            INTEGER PRIMARY KEY,
        crawl_id      INTEGER NOT NULL REFERENCES crawls(id),
        snapshot_id   INTEGER REFERENCES snapshots(id),  -- NULL for crawl hooks
        plugin        TEXT NOT NULL,
        hook          TEXT NOT NULL,          -- the hook's file name
        status        TEXT NOT NULL CHECK (status IN
                          ('queued', 'started', 'succeeded', 'noresults', 'failed', 'skipped',
                           'cancelled')),
        process_id    INTEGER REFERENCES processes(id),  -- the latest run
        attempts      INTEGER NOT NULL DEFAULT 0,
        output        TEXT,
        output_files  TEXT NOT NULL DEFAULT '[]', -- JSON array of paths relative to the hook dir
        output_size   INTEGER NOT NULL DEFAULT 0,
        started_at    INTEGER,
        ended_at      INTEGER
    );
    INSERT INTO results_new SELECT id, crawl_id, snapshot_id, plugin, hook, status, process_id,
        attempts, output, output_files, output_size, started_at, ended_at FROM results;
    DROP TABLE results;
    ALTER TABLE results_new RENAME TO results;
    CREATE UNIQUE INDEX results_per_hook ON results(crawl_id, COALESCE(snapshot_id, 0), hook);
    "#,
    // 15: `abxctl pause` — while a crawl is paused no hook of it starts and no snapshot of it is
    // claimed (running hooks go on); NULL when it runs.
    r#"
    ALTER TABLE crawls ADD COLUMN paused_at INTEGER;
    "#,
    // 16: machines — every daemon registers the host it runs on (its stable id, hostname, boot,
    // version, start and, on a shared store, a heartbeat), and every process row names the
    // machine its process runs on (NULL: written before there were machines; this host's).
    r#"
    CREATE TABLE machines (
        id            TEXT PRIMARY KEY,
        hostname      TEXT NOT NULL,
        boot_id       TEXT NOT NULL,
        version       TEXT NOT NULL,
        started_at    INTEGER NOT NULL,
        heartbeat_at  INTEGER NOT NULL
    );
    ALTER TABLE processes ADD COLUMN machine_id TEXT;
    "#,
    // 17: fenced leases — every crawl and snapshot carries an epoch, incremented whenever it
    // changes hands (claimed, put back, sealed): a worker's writes for it are taken only while
    // the epoch is still the one of its claim.
    r#"
    ALTER TABLE crawls ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE snapshots ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
    "#,
    // 18: URLs hooks discovered that `url_rule` refused, counted per crawl and reason, with the
    // first few of them (a line each) to show.
    r#"
    CREATE TABLE refused_urls (
        crawl_id    INTEGER NOT NULL REFERENCES crawls(id),
        reason      TEXT NOT NULL,
        count       INTEGER NOT NULL,
        first_urls  TEXT NOT NULL,
        PRIMARY KEY (crawl_id, reason)
    );
    "#,
    // 19: a crawl's rules (`domain::CrawlRules`, JSON: its allow/deny lists, scope and limits),
    // and which limit ended a crawl or a snapshot, if one did.
    r#"
    ALTER TABLE crawls ADD COLUMN rules TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE crawls ADD COLUMN ended_by TEXT;
    ALTER TABLE snapshots ADD COLUMN ended_by TEXT;
    "#,
    // 20: a crawl can end `failed` (a crawl hook it cannot go on without failed). SQLite cannot
    // change a CHECK, so the crawls table is rebuilt with its rows (foreign keys are checked
    // after, see `migrate_to`).
    r#"
    CREATE TABLE crawls_new (
        id            INTEGER PRIMARY KEY,
        urls          TEXT NOT NULL,          -- JSON array of strings
        max_depth     INTEGER NOT NULL CHECK (max_depth >= 0),
        plugins       TEXT,                   -- JSON array of plugin names; NULL = all enabled
        status        TEXT NOT NULL CHECK (status IN ('queued', 'started', 'sealed')),
        outcome       TEXT CHECK (outcome IN ('finished', 'cancelled', 'failed')),
        retry_at      INTEGER NOT NULL,       -- unix ms; in the future = owned (a lease)
        owner_id      INTEGER REFERENCES processes(id),
        created_at    INTEGER NOT NULL,
        started_at    INTEGER,
        sealed_at     INTEGER,
        restarts      INTEGER NOT NULL DEFAULT 0,
        paused_at     INTEGER,
        epoch         INTEGER NOT NULL DEFAULT 0,
        rules         TEXT NOT NULL DEFAULT '{}',
        ended_by      TEXT,
        CHECK ((status = 'sealed') = (sealed_at IS NOT NULL))
    );
    INSERT INTO crawls_new SELECT id, urls, max_depth, plugins, status, outcome, retry_at,
        owner_id, created_at, started_at, sealed_at, restarts, paused_at, epoch, rules, ended_by
        FROM crawls;
    DROP TABLE crawls;
    ALTER TABLE crawls_new RENAME TO crawls;
    CREATE INDEX crawls_due ON crawls(retry_at) WHERE status != 'sealed';
    "#,
    // 21: UUIDv7 ids beside abxd's own, as abx-dl and ArchiveBox know crawls, snapshots and
    // results (`uuid7`); rows written before get random ones.
    r#"
    ALTER TABLE crawls ADD COLUMN uuid TEXT;
    ALTER TABLE snapshots ADD COLUMN uuid TEXT;
    ALTER TABLE results ADD COLUMN uuid TEXT;
    UPDATE crawls SET uuid = lower(hex(randomblob(16)));
    UPDATE snapshots SET uuid = lower(hex(randomblob(16)));
    UPDATE results SET uuid = lower(hex(randomblob(16)));
    "#,
    // 22: crawls to export into an ArchiveBox collection (`target`, its data dir; `owner`, the
    // ArchiveBox user they are filed under) — queued at `add` or by `abxctl export`, exported
    // once sealed — with what the export did.
    r#"
    CREATE TABLE exports (
        crawl_id    INTEGER NOT NULL REFERENCES crawls(id),
        target      TEXT NOT NULL,
        owner       TEXT NOT NULL,
        status      TEXT NOT NULL CHECK (status IN ('queued', 'running', 'imported', 'failed')),
        detail      TEXT,
        process_id  INTEGER,             -- the row of its last step (not a reference: rows are pruned)
        updated_at  INTEGER NOT NULL,
        PRIMARY KEY (crawl_id, target)
    );
    "#,
    // 23: binaries as each host resolved them — found (where, which version, by which provider)
    // or not (why, and the variable that names another one) — since a binary on one host is not
    // on another. Rows from before were found on the one host that wrote them (`machine_id` '').
    r#"
    CREATE TABLE binaries_new (
        machine_id    TEXT NOT NULL,          -- identity::machine_id; '' for rows from before
        name          TEXT NOT NULL,          -- as declared, placeholders filled
        plugin        TEXT NOT NULL,          -- the plugin it was resolved for
        override_key  TEXT NOT NULL,          -- the variable naming another one (NODE_BINARY)
        abspath       TEXT,                   -- NULL: not found
        version       TEXT,
        provider      TEXT,                   -- the abxpkg provider that found or installed it
        failure       TEXT,                   -- why it could not be had; NULL: found
        resolved_at   INTEGER NOT NULL,
        PRIMARY KEY (machine_id, name)
    );
    INSERT INTO binaries_new (machine_id, name, plugin, override_key, resolved_at)
        SELECT '', name, plugin, '', installed_at FROM binaries;
    DROP TABLE binaries;
    ALTER TABLE binaries_new RENAME TO binaries;
    "#,
    // 24: UUIDv7 ids of process rows, as a snapshot's `index.jsonl` names its Process records
    // (and each ArchiveResult its `process_id`); rows from before have none.
    r#"
    ALTER TABLE processes ADD COLUMN uuid TEXT;
    "#,
    // 25: what a running crawl's snapshots wait for, said by its crawl worker for `abxctl
    // status` (admission: memory, browsers); NULL: nothing waits.
    r#"
    ALTER TABLE crawls ADD COLUMN admission TEXT;
    "#,
    // 26: schedules (`abxctl schedule`): a crawl made again at each occurrence, linked to it.
    r#"
    CREATE TABLE schedules (
        id            INTEGER PRIMARY KEY,
        urls          TEXT NOT NULL,          -- JSON array, as crawls.urls
        max_depth     INTEGER NOT NULL CHECK (max_depth >= 0),
        plugins       TEXT,                   -- JSON array; NULL: every plugin
        rules         TEXT NOT NULL,          -- JSON, as crawls.rules
        every_ms      INTEGER CHECK (every_ms > 0),
        cron          TEXT,
        anchor_at     INTEGER NOT NULL,       -- unix ms: periods are counted from it
        next_at       INTEGER NOT NULL,       -- unix ms (the store's shared clock)
        paused_at     INTEGER,
        created_at    INTEGER NOT NULL,
        fired         INTEGER NOT NULL DEFAULT 0,
        skipped       INTEGER NOT NULL DEFAULT 0,
        last_note     TEXT,                   -- what its last occurrence did, in words
        uuid          TEXT,
        import        INTEGER NOT NULL DEFAULT 0, -- its one URL is a file to import
        CHECK ((every_ms IS NULL) != (cron IS NULL))
    );
    ALTER TABLE crawls ADD COLUMN schedule_id INTEGER REFERENCES schedules(id);
    CREATE INDEX crawls_by_schedule ON crawls(schedule_id) WHERE schedule_id IS NOT NULL;
    -- What `abxctl add --from FILE` imported (bookmarks, a feed, text), parsed by the plugins
    -- that accept it into the crawl's seeds; NULL: a crawl of the URLs it was given.
    ALTER TABLE crawls ADD COLUMN input TEXT;
    -- Or the file:// URL of what to import, read by the parser hooks themselves (a schedule's
    -- `--from FILE`: read anew at each occurrence, as the hooks' user).
    ALTER TABLE crawls ADD COLUMN import_url TEXT;
    -- (`--only-new` asks whether any crawl archived a URL.)
    CREATE INDEX snapshots_by_url ON snapshots(url);
    "#,
    // 27: a background hook's success that was a session — it ran until its scope (or a hook
    // that waited for it) stopped it — which a later run of the scope starts again.
    // And what this machine's workers' writes found of a busy database (for `/metrics`), added
    // by each worker as it exits.
    r#"
    ALTER TABLE results ADD COLUMN session INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE machines ADD COLUMN worker_busy_writes INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE machines ADD COLUMN worker_refused_writes INTEGER NOT NULL DEFAULT 0;
    "#,
    // 28: a server's alone (a changed schedule wakes every host; a file has one host).
    r#"
    -- nothing
    "#,
    // 29: what ArchiveBox's `add` also says of a crawl — its tags, persona, parser — as JSON
    // (`CrawlOptions`), on a crawl and on the schedule that makes crawls; and what `abxctl
    // status` counts of the last day, indexed.
    r#"
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
    "#,
];
