//! The store's SQL on both engines: the same statements, values and transactions on the embedded
//! SQLite file and on a real PostgreSQL server (a throwaway cluster started by the test).

mod common;

use abxd::args;
use abxd::store::sql::{Db, Value};
use common::postgres::Postgres;

/// Both engines, each with a fresh database: SQLite in a temp dir, PostgreSQL in a throwaway
/// cluster (kept alive as long as the returned guard).
fn engines() -> (tempfile::TempDir, Option<Postgres>, Vec<Db>) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = rusqlite::Connection::open(dir.path().join("abxd.sqlite3")).unwrap();
    let mut dbs = vec![Db::Sqlite(sqlite)];
    let server = Postgres::start();
    if let Some(server) = &server {
        dbs.push(Db::connect_postgres(&server.url()).unwrap());
    }
    (dir, server, dbs)
}

#[test]
fn values_statements_and_transactions_are_the_same_on_both_engines() {
    let (_dir, _server, dbs) = engines();
    for db in &dbs {
        let engine = format!("{:?}", db.dialect());
        db.execute_batch(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, n BIGINT, flag BIGINT NOT NULL);
             CREATE TABLE u (k TEXT PRIMARY KEY, v TEXT)",
        )
        .unwrap();
        // A value crosses and comes back unchanged, NULL included.
        for (id, name, n) in [(1_i64, Some("a"), Some(-5_i64)), (2, None, None)] {
            db.execute(
                "INSERT INTO t (id, name, n, flag) VALUES (?1, ?2, ?3, ?4)",
                &args![id, name, n, id == 1],
            )
            .unwrap();
        }
        let row = db
            .query_one("SELECT name, n, flag FROM t WHERE id = ?1", &args![1_i64])
            .unwrap();
        assert_eq!(
            row.get::<Option<String>>(0).unwrap().as_deref(),
            Some("a"),
            "{engine}"
        );
        assert_eq!(row.get::<Option<i64>>(1).unwrap(), Some(-5), "{engine}");
        assert!(row.get::<bool>(2).unwrap(), "{engine}");
        let row = db
            .query_one("SELECT name, n FROM t WHERE id = ?1", &args![2_i64])
            .unwrap();
        assert_eq!(row.get::<Option<String>>(0).unwrap(), None, "{engine}");
        // A placeholder used twice, one given as NULL, and `?N IS NULL OR …` (where nothing
        // says its type before `IS NULL`, a CAST must: PostgreSQL types placeholders first).
        let found = db
            .query(
                "SELECT id FROM t WHERE (CAST(?1 AS BIGINT) IS NULL OR id = ?1) ORDER BY id",
                &args![None::<i64>],
            )
            .unwrap();
        assert_eq!(found.len(), 2, "{engine}");
        // A list of ids of any length.
        let ids = db.dialect().integers_of_json("?1");
        let changed = db
            .execute(
                &format!("UPDATE t SET n = 0 WHERE id IN {ids}"),
                &args!["[1, 2, 3]"],
            )
            .unwrap();
        assert_eq!(changed, 2, "{engine}");
        // Upsert and RETURNING.
        for v in ["x", "y"] {
            db.execute(
                "INSERT INTO u (k, v) VALUES ('key', ?1) ON CONFLICT(k) DO UPDATE SET v = ?1",
                &args![v],
            )
            .unwrap();
        }
        let v: String = db
            .query_one("UPDATE u SET v = v || '!' WHERE k = 'key' RETURNING v", &[])
            .unwrap()
            .get(0)
            .unwrap();
        assert_eq!(v, "y!", "{engine}");
        // A transaction with a savepoint rolled back: only what was released stays.
        db.execute(db.dialect().begin_write(), &[]).unwrap();
        assert!(db.in_transaction(), "{engine}");
        db.execute("SAVEPOINT write", &[]).unwrap();
        db.execute("INSERT INTO t (id, flag) VALUES (3, 0)", &[])
            .unwrap();
        db.execute("RELEASE write", &[]).unwrap();
        db.execute("SAVEPOINT write", &[]).unwrap();
        // (A failed statement inside: PostgreSQL aborts until the savepoint is rolled back.)
        assert!(db
            .execute("INSERT INTO t (id, flag) VALUES (3, 0)", &[])
            .is_err());
        db.execute("ROLLBACK TO write", &[]).unwrap();
        db.execute("RELEASE write", &[]).unwrap();
        db.execute("COMMIT", &[]).unwrap();
        assert!(!db.in_transaction(), "{engine}");
        let count: i64 = db
            .query_one("SELECT count(*) FROM t", &[])
            .unwrap()
            .get(0)
            .unwrap();
        assert_eq!(count, 3, "{engine}");
        // A type error names the column, in words.
        let err = db
            .query_one("SELECT name FROM t WHERE id = 1", &[])
            .unwrap()
            .get::<i64>(0)
            .unwrap_err();
        assert_eq!(err.to_string(), "column 0: expected an integer, found text");
        let _ = Value::Null;
    }
}

use abxd::domain::{EndReason, ExitOutcome, Kind, Queue, ResultStatus, WorkStatus};
use abxd::identity;
use abxd::store::{migrations, Moment, NewProcess, ProcessFilter, RetryScope, Store};
use std::time::Duration;

/// The store on both engines: a new SQLite file, and a new PostgreSQL cluster where one can be
/// started (kept alive by the returned guard).
fn stores() -> (tempfile::TempDir, Option<Postgres>, Vec<Store>) {
    let dir = tempfile::tempdir().unwrap();
    let mut stores = vec![Store::open(&dir.path().join("abxd.sqlite3")).unwrap()];
    let server = Postgres::start();
    if let Some(server) = &server {
        stores.push(Store::open_postgres(&server.url()).unwrap());
    }
    (dir, server, stores)
}

fn new_process(kind: Kind, parent_id: Option<i64>, crawl_id: Option<i64>) -> NewProcess {
    NewProcess {
        parent_id,
        kind,
        crawl_id,
        snapshot_id: None,
        result_id: None,
        argv: vec!["a b".into(), "'c'".into()],
        cwd: "/".into(),
        timeout_ms: Some(60_000),
    }
}

#[test]
fn the_schema_is_the_same_on_both_engines() {
    let (_dir, server, stores) = stores();
    let Some(server) = server else {
        return;
    };
    let sqlite = rusqlite::Connection::open(stores[0].path()).unwrap();
    let mut sqlite_tables: Vec<(String, Vec<String>)> = Vec::new();
    let tables: Vec<String> = sqlite
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for table in tables {
        let columns: Vec<String> = sqlite
            .prepare(&format!(
                "SELECT name FROM pragma_table_info('{table}') ORDER BY cid"
            ))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        sqlite_tables.push((table, columns));
    }
    let pg = Db::connect_postgres(&server.url()).unwrap();
    let mut pg_tables: Vec<(String, Vec<String>)> = Vec::new();
    let tables = pg
        .query_map(
            "SELECT table_name FROM information_schema.tables \
             WHERE table_schema = 'public' ORDER BY table_name",
            &[],
            |r| r.get::<String>(0),
        )
        .unwrap();
    for table in tables {
        let columns = pg
            .query_map(
                "SELECT column_name FROM information_schema.columns \
                 WHERE table_schema = 'public' AND table_name = ?1 ORDER BY ordinal_position",
                &args![&table],
                |r| r.get::<String>(0),
            )
            .unwrap();
        pg_tables.push((table, columns));
    }
    assert_eq!(sqlite_tables, pg_tables);
    let index_names = |db: &Db, sql: &str| -> Vec<String> {
        db.query_map(sql, &[], |r| r.get::<String>(0)).unwrap()
    };
    let sqlite_db = Db::Sqlite(sqlite);
    let sqlite_indexes = index_names(
        &sqlite_db,
        "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name",
    );
    let pg_indexes = index_names(
        &pg,
        "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' \
         AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key' ORDER BY indexname",
    );
    assert_eq!(sqlite_indexes, pg_indexes);
    for store in &stores {
        assert_eq!(store.schema_version().unwrap(), migrations::LATEST);
    }
}

#[test]
fn processes_queues_results_and_actions_behave_alike_on_both_engines() {
    let (_dir, _server, mut stores) = stores();
    for store in &mut stores {
        let engine = store.path().display().to_string();
        // The queues: a claim takes the due row once; a snapshot URL is once per crawl.
        let crawl = store
            .crawls()
            .add(
                &abxd::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 1),
                None,
            )
            .unwrap();
        let lease = Duration::from_secs(60);
        let crawl_claim = store
            .queue()
            .claim(Queue::Crawls, None, lease, None)
            .unwrap()
            .unwrap();
        assert_eq!(crawl_claim.id, crawl, "{engine}");
        assert_eq!(
            store
                .queue()
                .claim(Queue::Crawls, None, lease, None)
                .unwrap(),
            None,
            "{engine}"
        );
        let snapshot = store
            .crawls()
            .add_snapshot(crawl, "http://a/", 0)
            .unwrap()
            .unwrap();
        assert_eq!(
            store.crawls().add_snapshot(crawl, "http://a/", 1).unwrap(),
            None,
            "{engine}"
        );
        assert_eq!(
            store.queue().queued_count(Queue::Snapshots).unwrap(),
            1,
            "{engine}"
        );
        assert!(store
            .queue()
            .next_retry_at(Queue::Snapshots, Some(crawl))
            .unwrap()
            .is_some());
        let claim = store
            .queue()
            .claim(Queue::Snapshots, Some(crawl), lease, None)
            .unwrap()
            .unwrap();
        assert_eq!(claim.id, snapshot, "{engine}");
        // The process table: a tree, a spawned process with its identity, its end.
        let worker = store
            .processes()
            .insert(&new_process(Kind::SnapshotWorker, None, Some(crawl)))
            .unwrap();
        assert!(store.queue().set_owner(claim, worker).unwrap(), "{engine}");
        let hook = store
            .processes()
            .insert(&new_process(Kind::Hook, Some(worker), Some(crawl)))
            .unwrap();
        let me = identity::of_pid(std::process::id() as i32).unwrap();
        store
            .processes()
            .record_spawned(
                hook,
                &me,
                me.pid,
                (Some("/o"), None),
                nix::unistd::getuid().as_raw(),
            )
            .unwrap();
        let row = store.processes().get(hook).unwrap().unwrap();
        assert_eq!(row.identity.as_ref(), Some(&me), "{engine}");
        assert_eq!(row.argv, ["a b", "'c'"], "{engine}");
        assert!(row.deadline_at.is_some(), "{engine}");
        assert_eq!(
            store
                .processes()
                .live_row_by_pid(me.pid)
                .unwrap()
                .unwrap()
                .id,
            hook
        );
        let subtree: Vec<i64> = store
            .processes()
            .live_subtree(worker)
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(subtree, [worker, hook], "{engine}");
        let counts = store.processes().live_counts_by_kind().unwrap();
        assert_eq!(counts.get(&Kind::Hook), Some(&1), "{engine}");
        store
            .processes()
            .record_signal(hook, abxd::signal::Signal::TERM, 1, Some(2))
            .unwrap();
        store.processes().set_leaking(hook).unwrap();
        store
            .processes()
            .record_end(
                hook,
                Some(ExitOutcome::Signal(15)),
                EndReason::Killed,
                Some("d"),
            )
            .unwrap();
        let row = store.processes().get(hook).unwrap().unwrap();
        assert_eq!(row.exit_signal, Some(15), "{engine}");
        assert!(row.leaking, "{engine}");
        assert_eq!(row.kill_at, Some(2), "{engine}");
        let filter = ProcessFilter {
            kind: Some(Kind::Hook),
            crawl_id: Some(crawl),
            ..Default::default()
        };
        assert_eq!(
            store.processes().list(&filter).unwrap().len(),
            1,
            "{engine}"
        );
        store.processes().record_lost(&[(worker, "gone")]).unwrap();
        assert!(
            !store
                .processes()
                .get(worker)
                .unwrap()
                .unwrap()
                .status
                .is_live(),
            "{engine}"
        );
        // Results: one per hook, a success never overwritten, retry and cancel.
        let result = store
            .results()
            .result_for(crawl, Some(snapshot), "p", "h.sh")
            .unwrap();
        assert_eq!(
            store
                .results()
                .result_for(crawl, Some(snapshot), "p", "h.sh")
                .unwrap()
                .id,
            result.id
        );
        store.results().start(result.id, Some(hook)).unwrap();
        store
            .results()
            .finish(result.id, ResultStatus::Failed, Some("x"), &["f".into()], 3)
            .unwrap();
        let failed = store.results().snapshot_results(snapshot).unwrap();
        assert_eq!(failed[0].status, ResultStatus::Failed, "{engine}");
        assert_eq!(failed[0].output_files, ["f"], "{engine}");
        assert!(store.queue().seal(claim).unwrap(), "{engine}");
        assert!(store.queue().seal(crawl_claim).unwrap(), "{engine}");
        let retried = abxd::verbs::work::retry(store, crawl, RetryScope::Failed, None).unwrap();
        assert_eq!(retried, 1, "{engine}");
        assert_eq!(
            store.crawls().get(crawl).unwrap().unwrap().status,
            WorkStatus::Queued
        );
        assert!(
            abxd::verbs::work::pause(store, crawl, true).is_ok(),
            "{engine}"
        );
        assert!(store.crawls().is_paused(crawl).unwrap(), "{engine}");
        assert!(
            abxd::verbs::work::pause(store, crawl, true).is_err(),
            "{engine}"
        );
        store.crawls().cancel(crawl).unwrap();
        assert_eq!(
            store.results().of_crawl(crawl).unwrap()[0].status,
            ResultStatus::Cancelled
        );
        // Tags, installed binaries, the instance id.
        store
            .results()
            .add_tags(snapshot, &["b".into(), "a".into(), "a".into()])
            .unwrap();
        assert_eq!(
            store.results().tags(snapshot).unwrap(),
            ["a", "b"],
            "{engine}"
        );
        let wget = abxd::store::Binary {
            name: "wget".into(),
            plugin: "wget".into(),
            override_key: "WGET_BINARY".into(),
            abspath: Some("/usr/bin/wget".into()),
            version: Some("1.21.3".into()),
            provider: Some("env".into()),
            failure: None,
            resolved_at: 0,
        };
        store.results().record_binary(&wget).unwrap();
        let node = abxd::store::Binary {
            name: "node".into(),
            override_key: "NODE_BINARY".into(),
            abspath: None,
            version: None,
            provider: None,
            failure: Some("env: 22.23.3 does not satisfy 24.22.1".into()),
            ..wget.clone()
        };
        store.results().record_binary(&node).unwrap();
        assert_eq!(
            store
                .results()
                .installed_binaries()
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            ["wget"],
            "{engine}"
        );
        // Resolved again, a binary has one row: the latest resolution's.
        store
            .results()
            .record_binary(&abxd::store::Binary {
                failure: None,
                ..node.clone()
            })
            .unwrap();
        let binaries = store.results().binaries().unwrap();
        assert_eq!(binaries.len(), 2, "{engine}: {binaries:?}");
        assert_eq!(
            store.results().installed_binaries().unwrap().len(),
            2,
            "{engine}"
        );
        assert!(binaries[1].resolved_at > 0, "{engine}");
        assert_eq!(store.instance_id().unwrap().len(), 16, "{engine}");
        // Retention: the final rows of the sealed crawl go, with what pointed at them.
        let dry = store
            .processes()
            .prune(i64::MAX, true, abxd::store::Compact::IfCheap)
            .unwrap();
        assert_eq!(dry.rows, 2, "{engine}");
        let pruned = store
            .processes()
            .prune(i64::MAX, false, abxd::store::Compact::IfCheap)
            .unwrap();
        assert_eq!(pruned.rows, 2, "{engine}");
        assert!(store.processes().get(hook).unwrap().is_none(), "{engine}");
        assert_eq!(
            store.results().of_crawl(crawl).unwrap()[0].process_id,
            None,
            "{engine}"
        );
    }
}

/// A crawl's counts by status, kept by the store's triggers as rows change, are what counting
/// its rows says, on both engines: after adds, finishes, a cancel and a retry.
#[test]
fn a_crawls_kept_counts_are_what_counting_its_rows_says_on_both_engines() {
    let (_dir, _server, stores) = stores();
    for store in &stores {
        let engine = store.path().display().to_string();
        let spec = abxd::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 1);
        let crawl = store.crawls().add(&spec, None).unwrap();
        let other = store.crawls().add(&spec, None).unwrap();
        for (at, url) in ["http://a/", "http://b/", "http://c/"].iter().enumerate() {
            let snapshot = (store.crawls().add_snapshot(crawl, url, 0).unwrap()).unwrap();
            store.crawls().add_snapshot(other, url, 0).unwrap();
            for hook in ["on_Snapshot__10_a.sh", "on_Snapshot__20_b.sh"] {
                let result = store
                    .results()
                    .result_for(crawl, Some(snapshot), "p", hook)
                    .unwrap();
                let status = [ResultStatus::Succeeded, ResultStatus::Failed][at % 2];
                if hook.contains("10") {
                    store
                        .results()
                        .finish(result.id, status, None, &[], 0)
                        .unwrap();
                }
            }
        }
        // (What reading every row says, by status name, in order.)
        let counted = |statuses: Vec<String>| -> Vec<(String, u64)> {
            let mut counts = std::collections::BTreeMap::new();
            for status in statuses {
                *counts.entry(status).or_insert(0) += 1;
            }
            counts.into_iter().collect()
        };
        let check = |when: &str| {
            let (snapshots, results) = store.crawls().work_counts(crawl).unwrap();
            let snapshots: Vec<(String, u64)> = (snapshots.into_iter())
                .map(|(status, n)| (status.to_string(), n))
                .collect();
            let results: Vec<(String, u64)> = (results.into_iter())
                .map(|(status, n)| (status.as_str().to_string(), n))
                .collect();
            let rows = store.crawls().snapshots(crawl).unwrap();
            let statuses = rows.iter().map(|s| s.status.to_string()).collect();
            assert_eq!(snapshots, counted(statuses), "{engine}, {when}");
            let rows = store.results().of_crawl(crawl).unwrap();
            let statuses = rows.iter().map(|r| r.status.as_str().to_string()).collect();
            assert_eq!(results, counted(statuses), "{engine}, {when}");
        };
        check("after adds and finishes");
        store.crawls().cancel(crawl).unwrap();
        check("after a cancel");
        let sealed = store.crawls().get(crawl).unwrap().unwrap();
        store
            .crawls()
            .retry_results(&sealed, RetryScope::Failed, None)
            .unwrap();
        check("after a retry");
    }
}

/// A host's process rows counted by kind and state as they change (migration 36) say what
/// counting the rows says — through inserts, starts, ends, losses and a prune — on both engines;
/// a row written before rows had hosts counts as this host's; how many ever ended and started
/// only grows.
#[test]
fn a_hosts_kept_process_counts_are_what_counting_its_rows_says_on_both_engines() {
    let (_dir, server, stores) = stores();
    for (n, store) in stores.iter().enumerate() {
        let engine = store.path().display().to_string();
        // (Another connection to the same database, for what no abxd verb writes.)
        let raw = match (n, &server) {
            (0, _) => Db::Sqlite(rusqlite::Connection::open(store.path()).unwrap()),
            (_, Some(server)) => Db::connect_postgres(&server.url()).unwrap(),
            (_, None) => unreachable!("a second store is PostgreSQL's"),
        };
        let check = |when: &str| {
            let kept: Vec<(String, String, u64)> = (store.processes().watched())
                .counts_by_kind_and_status()
                .unwrap()
                .into_iter()
                .map(|(kind, status, n)| (kind.to_string(), status.to_string(), n))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let mut counted = std::collections::BTreeMap::new();
            for row in (store.processes()).list(&ProcessFilter::default()).unwrap() {
                *counted
                    .entry((row.kind.to_string(), row.status.to_string()))
                    .or_insert(0) += 1;
            }
            let counted: Vec<(String, String, u64)> = (counted.into_iter())
                .map(|((kind, status), n)| (kind, status, n))
                .collect();
            assert_eq!(kept, counted, "{engine}, {when}");
        };
        check("when empty");
        let me = identity::of_pid(std::process::id() as i32).unwrap();
        let uid = nix::unistd::getuid().as_raw();
        let worker = (store.processes())
            .insert(&new_process(Kind::CrawlWorker, None, None))
            .unwrap();
        let hooks: Vec<i64> = (0..4)
            .map(|_| {
                (store.processes())
                    .insert(&new_process(Kind::Hook, Some(worker), None))
                    .unwrap()
            })
            .collect();
        check("after inserts");
        (store.processes())
            .record_spawned(hooks[0], &me, me.pid, (None, None), uid)
            .unwrap();
        (store.processes())
            .record_end(
                hooks[0],
                Some(ExitOutcome::Code(0)),
                EndReason::Exited,
                None,
            )
            .unwrap();
        (store.processes())
            .record_end(hooks[1], None, EndReason::SpawnFailed, None)
            .unwrap();
        store
            .processes()
            .record_lost(&[(hooks[2], "gone")])
            .unwrap();
        check("after a start, ends and a loss");
        // How many ever ended and started: counts that only grow, a pruned row's too.
        let moments = || {
            let watched = store.processes().watched();
            (
                watched.moment_total(Moment::Ended).unwrap(),
                watched.moment_total(Moment::HookStarted).unwrap(),
            )
        };
        assert_eq!(moments(), (3, 1), "{engine}");
        // A row of before hosts were recorded (migration 16) is this host's.
        raw.execute(
            "UPDATE processes SET machine_id = NULL WHERE id = ?1",
            &args![hooks[3]],
        )
        .unwrap();
        check("with a row of no host");
        let pruned = (store.processes())
            .prune(
                abxd::store::now_ms() + 1,
                false,
                abxd::store::Compact::IfCheap,
            )
            .unwrap();
        assert!(pruned.rows >= 3, "{engine}: {pruned:?}");
        check("after a prune");
        assert_eq!(moments(), (3, 1), "{engine}, after a prune");
    }
}

#[test]
fn concurrent_claims_on_postgres_never_take_one_row_twice() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let store = Store::open_postgres(&server.url()).unwrap();
    let crawl = store
        .crawls()
        .add(
            &abxd::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 0),
            None,
        )
        .unwrap();
    for i in 0..200 {
        store
            .crawls()
            .add_snapshot(crawl, &format!("http://a/{i}"), 0)
            .unwrap();
    }
    let claimers: Vec<_> = (0..4)
        .map(|_| {
            let url = server.url();
            std::thread::spawn(move || {
                let store = Store::open_postgres(&url).unwrap();
                let mut claimed = Vec::new();
                while let Some(claim) = store
                    .queue()
                    .claim(
                        Queue::Snapshots,
                        Some(crawl),
                        Duration::from_secs(600),
                        None,
                    )
                    .unwrap()
                {
                    claimed.push(claim.id);
                }
                claimed
            })
        })
        .collect();
    let mut all: Vec<i64> = claimers
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    all.sort_unstable();
    let count = all.len();
    all.dedup();
    assert_eq!(count, 200, "every snapshot claimed");
    assert_eq!(all.len(), 200, "none claimed twice");
}

/// Hosts of a fleet adding discovered URLs to one crawl at once (its own host, and those its
/// snapshots were lent to) never take its last `--max-urls` place twice.
#[test]
fn concurrent_adds_on_postgres_never_pass_a_crawls_max_urls() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let store = Store::open_postgres(&server.url()).unwrap();
    let rules = abxd::domain::CrawlRules {
        max_urls: Some(10),
        ..Default::default()
    };
    let spec = abxd::domain::CrawlSpec {
        rules: rules.clone(),
        ..abxd::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 1)
    };
    let crawl = store.crawls().add(&spec, None).unwrap();
    let hosts: Vec<_> = (0..4)
        .map(|host| {
            let (url, rules) = (server.url(), rules.clone());
            std::thread::spawn(move || {
                let store = Store::open_postgres(&url).unwrap();
                for i in 0..25 {
                    let url = format!("http://a/{host}/{i}");
                    store
                        .crawls()
                        .add_snapshot_within(crawl, &url, 1, &rules)
                        .unwrap();
                }
            })
        })
        .collect();
    for host in hosts {
        host.join().unwrap();
    }
    let snapshots = store.crawls().snapshots(crawl).unwrap();
    assert_eq!(snapshots.len(), 10, "{} snapshots", snapshots.len());
}

/// One daemon per machine and PostgreSQL database: a second one of the same machine (another
/// data dir) is refused while the first runs, saying why, and starts once it stopped; a daemon
/// of another machine shares the database meanwhile (a fleet). A server is never shown with its
/// password.
#[test]
fn a_second_daemon_of_one_machine_on_a_postgres_database_is_refused_another_machines_joins() {
    if !common::postgres::available() {
        eprintln!("SKIPPED: PostgreSQL is not installed here (apt install postgresql)");
        return;
    }
    let mut first = common::TestDaemon::start_on("postgres", "");
    let abxd::store::Location::Postgres(server) = first.location() else {
        panic!("not on PostgreSQL");
    };
    // (A password in the URL: trust authentication ignores it; it must never be shown.)
    let url = server.url.replace("abxd@", "abxd:s3cret@");
    let mut second = common::TestDaemon::prepare(&format!("[paths]\ndatabase = {url:?}\n"));
    second.launch_expecting_failure();
    let log = second.log();
    let machine = abxd::identity::machine_id();
    assert!(
        log.contains(&format!(
            "is in use by another abxd daemon of machine {machine}"
        )),
        "{log}"
    );
    assert!(!log.contains("s3cret"), "{log}");
    let mut other = common::TestDaemon::prepare(&format!(
        "[paths]\ndatabase = {url:?}\n[store]\nmachine_id = \"another-host\"\n"
    ));
    other.launch();
    let machines: Vec<String> = first
        .store()
        .machines()
        .all()
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert!(
        machines.contains(&"another-host".to_string()),
        "{machines:?}"
    );
    assert!(machines.contains(&machine.to_string()), "{machines:?}");
    first.signal(nix::sys::signal::Signal::SIGTERM);
    first.wait_exit();
    second.launch();
    let status = second.ctl_ok(&["status"]);
    assert!(
        status.contains("database: postgres://abxd@/abxd"),
        "{status}"
    );
    assert!(!status.contains("s3cret"), "{status}");
}

/// `abxd store copy`: a host that ran on its SQLite file moves to PostgreSQL with its whole
/// history — refused while abxd runs, and into a database that holds anything — and a daemon on
/// the copy goes on from there: the same rows, new ids past the copied ones.
#[test]
fn store_copy_moves_a_sqlite_history_into_an_empty_postgres_database_where_abxd_goes_on() {
    use abxd::store::{ProcessFilter, Store};
    if !common::postgres::available() {
        eprintln!("SKIPPED: PostgreSQL is not installed here (apt install postgresql)");
        return;
    }
    let plugins = common::plugins_config(&[&common::fixtures().join("plugins")]);
    let mut single = common::TestDaemon::start_with(&plugins);
    let first = single.add(&["http://127.0.0.1:9/", "--plugins", "ok"]);
    single.wait_sealed(first, common::WAIT);
    let mut fleet = common::TestDaemon::prepare_on("postgres", &plugins);
    let abxd::store::Location::Postgres(server) = fleet.location() else {
        panic!("not on PostgreSQL");
    };
    let copy = |daemon: &common::TestDaemon| {
        daemon
            .abxd_command(&["store", "copy", "--to", &server.url])
            .stdout(std::process::Stdio::piped())
            .output()
            .unwrap()
    };
    let refused = copy(&single);
    assert!(!refused.status.success());
    assert!(single.log().contains("data dir"), "{}", single.log());

    single.signal(nix::sys::signal::Signal::SIGTERM);
    single.wait_exit();
    // A longer history than one page of the copy (500 rows): results of earlier runs, a third
    // of them failed.
    let conn = rusqlite::Connection::open(single.database()).unwrap();
    conn.execute(
        "INSERT INTO results (crawl_id, snapshot_id, plugin, hook, status, output, uuid) \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200) \
         SELECT crawl_id, id, 'history', 'on_Snapshot__' || i || '_history.sh', \
         CASE WHEN i % 3 = 0 THEN 'failed' ELSE 'succeeded' END, 'earlier', \
         lower(hex(randomblob(16))) FROM snapshots, n WHERE crawl_id = ?1",
        [first],
    )
    .unwrap();
    drop(conn);
    let before = single.store();
    let rows = before.processes().list(&ProcessFilter::default()).unwrap();
    let results = before.results().of_crawl(first).unwrap();
    let copied = copy(&single);
    let stdout = String::from_utf8_lossy(&copied.stdout);
    assert!(copied.status.success(), "{stdout}\n{}", single.log());
    assert!(
        stdout.contains(&format!(
            "copied 1 machines, {} processes, 0 schedules, 1 crawls",
            rows.len()
        )),
        "{stdout}"
    );
    let again = copy(&single);
    assert!(!again.status.success());
    assert!(single.log().contains("is not empty"), "{}", single.log());

    fleet.launch();
    let after = fleet.store();
    let copied_rows = after.processes().list(&ProcessFilter::default()).unwrap();
    for row in &rows {
        let copy = copied_rows
            .iter()
            .find(|r| r.id == row.id)
            .expect("every row");
        assert_eq!(
            (
                copy.kind,
                copy.status,
                &copy.argv,
                copy.exit_code,
                copy.parent_id
            ),
            (
                row.kind,
                row.status,
                &row.argv,
                row.exit_code,
                row.parent_id
            )
        );
    }
    assert_eq!(after.results().of_crawl(first).unwrap(), results);
    // (Counted again by the target once the rows arrived.)
    assert_eq!(
        after.crawls().work_counts(first).unwrap(),
        before.crawls().work_counts(first).unwrap()
    );
    assert_eq!(
        after.marker_namespace().unwrap(),
        Store::open_read_only(&single.database())
            .unwrap()
            .marker_namespace()
            .unwrap(),
        "leftovers of the old database are still recognised"
    );
    let second = fleet.add(&["http://127.0.0.1:9/", "--plugins", "ok"]);
    assert_eq!(second, first + 1);
    fleet.wait_sealed(second, common::WAIT);
    // (The copy's counting triggers are on again: the new crawl is counted as it runs.)
    let (snapshots, results) = fleet.store().crawls().work_counts(second).unwrap();
    assert_eq!(
        (snapshots.iter().map(|(_, n)| n).sum::<u64>(), results.len()),
        (1, 1),
        "crawl {second}: {snapshots:?} {results:?}"
    );
    let newest = fleet
        .store()
        .processes()
        .list(&ProcessFilter::default())
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .max()
        .unwrap();
    assert!(newest > rows.iter().map(|r| r.id).max().unwrap());
}

/// PostgreSQL restarting under a running crawl: the daemon and its workers keep their
/// processes, `abxctl status` says the database is unavailable while it is down, what could not
/// be written is written once it is back, and the crawl finishes with every hook run once.
#[test]
fn a_postgres_restart_mid_crawl_loses_nothing_and_kills_no_hook() {
    use abxd::domain::Kind;
    use abxd::store::ProcessFilter;
    if !common::postgres::available() {
        eprintln!("SKIPPED: PostgreSQL is not installed here (apt install postgresql)");
        return;
    }
    let mut daemon = common::TestDaemon::prepare_on(
        "postgres",
        // (No memory floor: admission would run the first snapshot alone to learn what one
        // costs, and this test needs both hooks running when PostgreSQL goes away.)
        &format!(
            "{}[plugins.sleepy]\nenv = {{ SLEEPY_SECONDS = \"4\" }}\n[limits]\nmemory_floor = 0\n",
            common::plugins_config(&[&common::fixtures().join("plugins")])
        ),
    );
    daemon.launch();
    let crawl = daemon.add(&[
        "http://127.0.0.1:9/a",
        "http://127.0.0.1:9/b",
        "--plugins",
        "sleepy",
    ]);
    let hooks = common::wait_until("both hooks to run", common::WAIT, || {
        let rows = daemon
            .store()
            .processes()
            .list(&ProcessFilter::default())
            .unwrap();
        let hooks: Vec<_> = rows
            .into_iter()
            .filter(|r| r.kind == Kind::Hook && r.status.is_live() && r.identity.is_some())
            .collect();
        (hooks.len() == 2).then_some(hooks)
    });
    daemon.postgres_mut().stop();
    let status = common::wait_until(
        "status to say the database is unavailable",
        common::WAIT,
        || {
            let status = daemon.ctl_ok(&["status"]);
            status.contains("DATABASE UNAVAILABLE").then_some(status)
        },
    );
    assert!(
        status.contains("writes to PostgreSQL have failed since"),
        "{status}"
    );
    for hook in &hooks {
        let identity = hook.identity.as_ref().unwrap();
        assert!(
            abxd::identity::check(identity).is_alive(),
            "hook row {} was killed for the outage",
            hook.id
        );
    }
    daemon.postgres_mut().start_again();
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(90));
    let store = daemon.store();
    for result in store.results().of_crawl(crawl).unwrap() {
        assert_eq!(result.status, "succeeded", "{result:?}");
        assert_eq!(result.attempts, 1, "run once: {result:?}");
    }
    common::assert_every_row_final(&store.processes().list(&ProcessFilter::default()).unwrap());
    assert!(!daemon.ctl_ok(&["status"]).contains("DATABASE UNAVAILABLE"));
}

/// PostgreSQL going away between two hooks of a snapshot — after a background hook's first
/// output, when the next hook is to start: the snapshot worker neither fails nor gives up its
/// work; the next hook starts once the server is back, and each hook runs once.
#[test]
fn a_postgres_outage_when_the_next_hook_is_due_holds_it_back_until_the_server_is_back() {
    use abxd::domain::Kind;
    use abxd::store::ProcessFilter;
    if !common::postgres::available() {
        eprintln!("SKIPPED: PostgreSQL is not installed here (apt install postgresql)");
        return;
    }
    let mut daemon = common::TestDaemon::prepare_on("postgres", "");
    let plugins = daemon.path("outage-plugins");
    let signals = daemon.path("outage");
    std::fs::create_dir_all(&signals).unwrap();
    let hooks = [
        (
            "on_Snapshot__10_outage.bg.sh",
            // Asks the test to stop the server, and says it is up once the server is down.
            "trap 'echo \"{\\\"type\\\":\\\"ArchiveResult\\\",\\\"status\\\":\\\"succeeded\\\"}\"; \
             exit 0' TERM\n\
             touch \"$OUTAGE_DIR/stop-now\"\n\
             for _ in $(seq 600); do [ -e \"$OUTAGE_DIR/stopped\" ] && break; sleep 0.1; done\n\
             echo up\n\
             while :; do sleep 0.1; done\n",
        ),
        (
            "on_Snapshot__20_after.sh",
            "echo '{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"after\"}'\n",
        ),
    ];
    for (hook, script) in hooks {
        common::plugin(&plugins, "outage", hook, script);
    }
    daemon.write_config(&format!(
        "{}[plugins.outage]\nenv = {{ OUTAGE_DIR = {:?} }}\n",
        common::plugins_config(&[&plugins]),
        signals.display().to_string()
    ));
    daemon.launch();
    let crawl = daemon.add(&["http://127.0.0.1:9/a", "--plugins", "outage"]);
    common::wait_until("the first hook to ask for the outage", common::WAIT, || {
        signals.join("stop-now").exists().then_some(())
    });
    let worker = daemon
        .store()
        .processes()
        .list(&ProcessFilter::default())
        .unwrap()
        .into_iter()
        .find(|r| r.kind == Kind::SnapshotWorker)
        .expect("the snapshot worker's row");
    daemon.postgres_mut().stop();
    std::fs::write(signals.join("stopped"), "").unwrap();
    // The worker finds the server gone when the next hook is due: it says so and waits, or
    // (what this test is for) fails and exits.
    let stderr = std::path::PathBuf::from(worker.stderr_path.clone().unwrap());
    let identity = worker.identity.clone().unwrap();
    common::wait_until(
        "the snapshot worker to find the server gone",
        common::WAIT,
        || {
            let log = std::fs::read_to_string(&stderr).unwrap_or_default();
            (log.contains("the next hook is not started yet")
                || !abxd::identity::check(&identity).is_alive())
            .then_some(())
        },
    );
    assert!(
        abxd::identity::check(&identity).is_alive(),
        "the snapshot worker exited for the outage:\n{}",
        std::fs::read_to_string(&stderr).unwrap_or_default()
    );
    daemon.postgres_mut().start_again();
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(90));
    let store = daemon.store();
    let results = store.results().of_crawl(crawl).unwrap();
    assert_eq!(results.len(), 2, "{results:?}");
    for result in results {
        assert_eq!(result.status, "succeeded", "{result:?}");
        assert_eq!(result.attempts, 1, "run once: {result:?}");
    }
    let rows = store.processes().list(&ProcessFilter::default()).unwrap();
    let workers: Vec<_> = (rows.iter())
        .filter(|r| r.kind == Kind::SnapshotWorker)
        .collect();
    assert_eq!(
        workers.len(),
        1,
        "one snapshot worker did it all: {workers:?}"
    );
    assert_eq!(workers[0].exit_code, Some(0), "{:?}", workers[0]);
    common::assert_every_row_final(&rows);
}
