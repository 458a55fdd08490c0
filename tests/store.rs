//! The store on disk: migrations from every earlier schema, refusal of newer ones, identity of
//! rows against real processes.

mod common;

use abxd::domain::Kind;
use abxd::identity::{self, Liveness};
use abxd::store::{migrations, NewProcess, ProcessFilter, Store, StoreError};
use std::process::Command;

fn hook(argv: &[&str]) -> NewProcess {
    NewProcess {
        parent_id: None,
        kind: Kind::Hook,
        crawl_id: None,
        snapshot_id: None,
        result_id: None,
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: "/".into(),
        timeout_ms: None,
    }
}

#[test]
fn a_database_of_every_earlier_schema_version_migrates_and_keeps_its_rows() {
    for version in 0..migrations::LATEST {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abxd.sqlite3");
        let old = Store::open_at_version(&path, version).unwrap();
        assert_eq!(old.schema_version().unwrap(), version);
        drop(old);
        // (A row as that version wrote it: the columns of the first process table.)
        let kept = (version >= 1).then(|| {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute(
                "INSERT INTO processes (kind, argv, cwd, status, created_at) \
                 VALUES ('hook', '[\"old\"]', '/', 'starting', 1)",
                [],
            )
            .unwrap();
            conn.last_insert_rowid()
        });

        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), migrations::LATEST);
        if let Some(id) = kept {
            let row = store
                .processes()
                .get(id)
                .unwrap()
                .expect("row survives migration");
            assert_eq!(row.argv, vec!["old".to_string()]);
        }
    }
}

#[test]
fn a_database_from_a_newer_abxd_is_refused_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abxd.sqlite3");
    drop(Store::open(&path).unwrap());
    let newer = migrations::LATEST + 1;
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", newer).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&path).unwrap();

    for result in [Store::open(&path), Store::open_read_only(&path)] {
        match result {
            Err(err @ StoreError::TooNew { .. }) => {
                let message = err.to_string();
                assert!(
                    message.contains(&format!("schema version {newer}")),
                    "{message}"
                );
                assert!(message.contains(path.to_str().unwrap()), "{message}");
            }
            Err(other) => panic!("wrong error: {other}"),
            Ok(_) => panic!("a newer database was opened"),
        }
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "refused file is unchanged"
    );
}

#[test]
fn the_read_only_store_does_not_create_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abxd.sqlite3");
    assert!(matches!(
        Store::open_read_only(&path),
        Err(StoreError::Missing { .. })
    ));
    assert!(!path.exists());
}

/// Clock ticks since boot, the unit of a process's start time.
fn uptime_ticks() -> u64 {
    let uptime = std::fs::read_to_string("/proc/uptime").unwrap();
    let seconds: f64 = uptime.split_whitespace().next().unwrap().parse().unwrap();
    (seconds * procfs::ticks_per_second() as f64) as u64
}

/// Makes the kernel hand `pid` to the next process forked in this pid namespace (root only).
fn next_pid_will_be(pid: i32) -> std::io::Result<()> {
    std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string())
}

#[test]
fn a_row_whose_pid_now_belongs_to_another_process_is_not_matched() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let (store, _server) = common::fresh_store(backend);

        // The recorded process: a real one, recorded with its identity, then gone.
        let mut first = Command::new("sleep").arg("300").spawn().unwrap();
        let pid = first.id() as i32;
        let recorded = identity::of_pid(pid).unwrap();
        let id = store.processes().insert(&hook(&["sleep", "300"])).unwrap();
        store
            .processes()
            .record_spawned(
                id,
                &recorded,
                pid,
                (None, None),
                nix::unistd::getuid().as_raw(),
            )
            .unwrap();
        first.kill().unwrap();
        first.wait().unwrap();
        // Start times have clock-tick resolution: let at least one tick pass, as it always has when
        // pids wrap around for real.
        common::wait_until(
            "the clock to pass the recorded start tick",
            common::WAIT,
            || (uptime_ticks() > recorded.start_ticks + 1).then_some(()),
        );

        // A different process with the same pid: the kernel reuses it when told which pid is next.
        let mut reuser = None;
        for _ in 0..50 {
            if let Err(err) = next_pid_will_be(pid) {
                if std::env::var_os("CI").is_some() {
                    panic!("CI runs as root and must be able to force pid reuse: {err}");
                }
                eprintln!("SKIPPED: cannot force pid reuse without root ({err})");
                return;
            }
            let child = Command::new("sleep").arg("300").spawn().unwrap();
            if child.id() as i32 == pid {
                reuser = Some(child);
                break;
            }
            let mut other = child;
            other.kill().unwrap();
            other.wait().unwrap();
        }
        let mut reuser = reuser.expect("another process raced us for the pid 50 times");

        let row = store.processes().get(id).unwrap().unwrap();
        let stored = row.identity.clone().unwrap();
        assert_eq!(stored.pid, pid);
        assert_eq!(identity::check(&stored), Liveness::Reused);
        assert_eq!(
            identity::check(&identity::of_pid(pid).unwrap()),
            Liveness::Alive
        );

        // ps shows the row as unverified, not as the new process's row.
        let entry = abxd::render::PsEntry::new(row, abxd::store::now_ms());
        assert_eq!(entry.verified, Some(Liveness::Reused));
        let rows = store.processes().list(&ProcessFilter::default()).unwrap();
        assert_eq!(rows.len(), 1);

        reuser.kill().unwrap();
        reuser.wait().unwrap();
    }
}

#[test]
fn rows_found_gone_are_made_lost_each_with_its_own_reason_and_final_rows_stay_as_they_are() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let (store, _server) = common::fresh_store(backend);
        let gone: Vec<i64> = (0..3)
            .map(|_| store.processes().insert(&hook(&["sleep", "300"])).unwrap())
            .collect();
        let reused = store.processes().insert(&hook(&["sleep", "300"])).unwrap();
        let already = store.processes().insert(&hook(&["true"])).unwrap();
        store
            .processes()
            .record_lost(&[(already, "earlier verdict")])
            .unwrap();

        let mut verdicts: Vec<(i64, &str)> = gone.iter().map(|&id| (id, "process gone")).collect();
        verdicts.push((reused, "pid 7 now belongs to another process"));
        verdicts.push((already, "process gone"));
        store.processes().record_lost(&verdicts).unwrap();

        let row = |id: i64| store.processes().get(id).unwrap().unwrap();
        for id in gone {
            assert_eq!(row(id).status.to_string(), "lost");
            assert_eq!(row(id).end_detail_text().as_deref(), Some("process gone"));
        }
        assert_eq!(
            row(reused).end_detail_text().as_deref(),
            Some("pid 7 now belongs to another process")
        );
        assert_eq!(
            row(already).end_detail_text().as_deref(),
            Some("earlier verdict"),
            "a final row is not ended twice"
        );
    }
}

/// Retention in the daemon's loop prunes a share a turn (`prune_some`): whatever the share, no
/// row it leaves names a parent it took, and the shares add up to the whole prune.
#[test]
fn pruning_a_share_at_a_time_never_leaves_a_row_whose_parent_is_gone() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        use abxd::store::{now_ms, Compact};
        let (store, _server) = common::fresh_store(backend);
        let row = |parent: Option<i64>| {
            let mut new = hook(&["true"]);
            new.parent_id = parent;
            store.processes().insert(&new).unwrap()
        };
        // Three trees three deep, their rows made in turn (as a crawl's rows are).
        let mut rows = Vec::new();
        for _ in 0..3 {
            let root = row(None);
            let middle = row(Some(root));
            rows.extend([root, middle, row(Some(middle)), row(Some(root))]);
        }
        let ended: Vec<(i64, &str)> = rows.iter().map(|&id| (id, "ended")).collect();
        store.processes().record_lost(&ended).unwrap();
        let cutoff = now_ms() + 1000;
        let mut pruned = 0;
        for share in [1, 2, 3, 1, 5] {
            let some = store
                .processes()
                .prune_some(cutoff, share, Compact::IfCheap)
                .unwrap();
            assert_eq!(some.rows, share.min(rows.len() as u64 - pruned));
            pruned += some.rows;
            let left = store.processes().list(&ProcessFilter::default()).unwrap();
            assert_eq!(left.len() as u64, rows.len() as u64 - pruned);
            for orphan in left.iter().filter(|r| r.parent_id.is_some()) {
                let parent = orphan.parent_id.unwrap();
                assert!(
                    left.iter().any(|r| r.id == parent),
                    "row {} names row {parent}, pruned before it",
                    orphan.id
                );
            }
        }
        assert_eq!(pruned, rows.len() as u64, "the shares add up to the whole");
    }
}

#[test]
fn pruning_takes_final_rows_of_finished_work_with_their_subtrees_and_nothing_else() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        use abxd::domain::Queue;
        use abxd::store::{now_ms, Compact};
        let (store, _server) = common::fresh_store(backend);
        let sealed = store
            .crawls()
            .add(
                &abxd::domain::CrawlSpec::of_urls(vec!["http://127.0.0.1:9/a".into()], 0),
                None,
            )
            .unwrap();
        let open = store
            .crawls()
            .add(
                &abxd::domain::CrawlSpec::of_urls(vec!["http://127.0.0.1:9/b".into()], 0),
                None,
            )
            .unwrap();
        let never_claimed = abxd::domain::Claim {
            queue: Queue::Crawls,
            id: sealed,
            epoch: 0,
        };
        assert!(store.queue().seal(never_claimed).unwrap());
        let row = |parent: Option<i64>, crawl: Option<i64>| {
            let mut new = hook(&["true"]);
            new.parent_id = parent;
            new.crawl_id = crawl;
            store.processes().insert(&new).unwrap()
        };
        let parent = row(None, Some(sealed));
        let child = row(Some(parent), Some(sealed));
        let holder = row(None, Some(sealed));
        let live = row(Some(holder), Some(sealed));
        let of_open_crawl = row(None, Some(open));
        let of_no_crawl = row(None, None);
        let live_of_no_crawl = row(None, None);
        let result = store
            .results()
            .result_for(sealed, None, "plugin", "on_Crawl__10_hook.sh")
            .unwrap();
        store.results().start(result.id, Some(child)).unwrap();
        let finals = [parent, child, holder, of_open_crawl, of_no_crawl];
        let ended: Vec<(i64, &str)> = finals.iter().map(|&id| (id, "ended")).collect();
        store.processes().record_lost(&ended).unwrap();

        let cutoff = now_ms() + 1000;
        let dry = store
            .processes()
            .prune(cutoff, true, Compact::IfCheap)
            .unwrap();
        assert_eq!(dry.rows, 3);
        assert!(
            store.processes().get(parent).unwrap().is_some(),
            "a dry run deletes nothing"
        );
        let pruned = store
            .processes()
            .prune(cutoff, false, Compact::IfCheap)
            .unwrap();
        assert_eq!(pruned.rows, 3);
        let exists = |id: i64| store.processes().get(id).unwrap().is_some();
        for gone in [parent, child, of_no_crawl] {
            assert!(!exists(gone), "row {gone} is pruned");
        }
        for kept in [holder, live, of_open_crawl, live_of_no_crawl] {
            assert!(exists(kept), "row {kept} stays");
        }
        let result = store.results().of_crawl(sealed).unwrap().remove(0);
        assert_eq!(result.process_id, None, "a pruned run is no longer linked");
        // Nothing pruned before the cutoff's age.
        assert_eq!(
            store
                .processes()
                .prune(0, false, Compact::IfCheap)
                .unwrap()
                .rows,
            0
        );
    }
}
