//! Crash recovery under the real daemon: kill -9 at random moments, worker deaths at run time,
//! PID reuse, another boot, and `recover --dry-run`.

mod common;

use abxd::domain::{EndReason, Kind, Status};
use abxd::identity;
use abxd::store::{ProcessFilter, ProcessRow};
use common::{fixtures, plugins_config, wait_until, TestDaemon, WAIT};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::time::Duration;

const CRAWL_WAIT: Duration = Duration::from_secs(120);

/// A daemon (not started) with its store on `backend` and the ledger fixture plugin writing to
/// `<dir>/ledger.txt`.
fn ledger_daemon(backend: &str, extra: &str) -> TestDaemon {
    let daemon = TestDaemon::prepare_on(backend, "");
    let ledger = daemon.path("ledger.txt");
    daemon.write_config(&format!(
        "{}[timeouts]\nkill_grace = \"500ms\"\nmin_grace = \"200ms\"\nretry_backoff = \"100ms\"\n\
         [plugins.ledger]\nenv = {{ LEDGER = {:?} }}\n{extra}",
        plugins_config(&[&fixtures().join("torture")]),
        ledger.display().to_string()
    ));
    daemon
}

/// Whether no process holds the database's write lock now (a write could begin at once).
fn write_lock_is_free(database: &std::path::Path) -> bool {
    let Ok(conn) = rusqlite::Connection::open(database) else {
        return false;
    };
    let _ = conn.busy_timeout(Duration::ZERO);
    let free = conn.execute_batch("BEGIN IMMEDIATE").is_ok();
    let _ = conn.execute_batch("ROLLBACK");
    free
}

/// Stops every process of the test's daemon (SIGSTOP) until no new one appears (a running one
/// may fork meanwhile) — and, on SQLite, none is stopped inside a write (it would hold the
/// database's write lock, and the next daemon could not record itself until it went on; a
/// PostgreSQL server ends a session idle inside a transaction itself). Returns them.
fn freeze_outside_a_write(daemon: &TestDaemon) -> Vec<i32> {
    let file = match daemon.location() {
        abxd::store::Location::File(path) => Some(path),
        abxd::store::Location::Postgres(_) => None,
    };
    let mut frozen: Vec<i32> = Vec::new();
    wait_until("the orphans to be frozen outside a write", WAIT, || {
        let pids = common::tagged_pids(&daemon.tag);
        for &pid in &pids {
            let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
        }
        let stable = pids == frozen;
        frozen = pids;
        if !stable {
            return None;
        }
        if file.as_deref().is_none_or(write_lock_is_free) {
            return Some(());
        }
        for &pid in &frozen {
            let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
        }
        frozen.clear();
        None
    });
    frozen
}

fn rows(daemon: &TestDaemon) -> Vec<ProcessRow> {
    daemon
        .store()
        .processes()
        .list(&ProcessFilter::default())
        .unwrap()
}

/// Ledger lines: (event, snapshot id, hook, unix ms).
fn ledger(daemon: &TestDaemon) -> Vec<(String, i64, String, i64)> {
    common::ledger_lines(&daemon.path("ledger.txt"))
}

/// Every result of the crawl succeeded, and no hook started again after its success was recorded.
fn assert_each_hook_succeeded_once(daemon: &TestDaemon, crawl: i64, hooks_per_snapshot: usize) {
    let store = daemon.store();
    let snapshots = store.crawls().snapshots(crawl).unwrap();
    let results = store.results().of_crawl(crawl).unwrap();
    assert_eq!(results.len(), snapshots.len() * hooks_per_snapshot);
    let succeeded_at: BTreeMap<(i64, String), i64> = results
        .iter()
        .map(|r| {
            assert_eq!(r.status, "succeeded", "{r:?}");
            (
                (r.snapshot_id.unwrap(), r.hook.clone()),
                r.ended_at.unwrap(),
            )
        })
        .collect();
    for (event, snapshot, hook, at) in ledger(daemon) {
        let success = succeeded_at[&(snapshot, hook.clone())];
        assert!(
            !(event == "start" && at > success),
            "{hook} of snapshot {snapshot} started again at {at}, after it succeeded at {success}"
        );
    }
}

/// After a daemon's recovery: no process from an earlier incarnation lives on, and no row from
/// one still claims a live process.
fn assert_previous_incarnation_gone(daemon: &TestDaemon) {
    wait_until("recovery to finish", WAIT, || {
        let status = daemon.ctl_ok(&["status"]);
        (!status.contains("recovering")).then_some(())
    });
    let me = identity::of_pid(daemon.pid()).unwrap();
    let older: Vec<i32> = common::tagged_pids(&daemon.tag)
        .into_iter()
        .filter(|&pid| identity::of_pid(pid).is_some_and(|id| id.start_ticks < me.start_ticks))
        .collect();
    assert!(
        older.is_empty(),
        "processes of a previous incarnation survived: {older:?}"
    );
    let orchestrator = rows(daemon)
        .into_iter()
        .filter(|r| r.kind == Kind::Orchestrator)
        .map(|r| r.id)
        .max()
        .unwrap();
    let stale: Vec<i64> = rows(daemon)
        .into_iter()
        .filter(|r| r.id < orchestrator && r.status.is_live())
        .map(|r| r.id)
        .collect();
    assert!(
        stale.is_empty(),
        "rows of a previous incarnation still live: {stale:?}"
    );
}

#[test]
fn kill_9_torture_loses_nothing_and_runs_nothing_twice() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let mut rng = common::Rng::seeded("ABXD_TORTURE_SEED", "torture");
        let mut daemon = ledger_daemon(backend, "[limits]\nmax_result_attempts = 1000\n");
        daemon.create_database();
        let urls: Vec<String> = (0..24).map(|i| format!("http://127.0.0.1:9/{i}")).collect();
        let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
        args.extend(["--plugins", "ledger"]);
        let crawl = daemon.add(&args);

        let mut kills = Vec::new();
        while kills.len() < 15 {
            daemon.launch();
            assert_previous_incarnation_gone(&daemon);
            if daemon.store().crawls().get(crawl).unwrap().unwrap().status == "sealed" {
                break;
            }
            let delay = 50 + rng.below(600);
            std::thread::sleep(Duration::from_millis(delay));
            let done = daemon
                .store()
                .results()
                .of_crawl(crawl)
                .unwrap()
                .iter()
                .filter(|r| r.status == "succeeded")
                .count();
            kills.push((delay, done));
            daemon.crash();
        }
        println!("kill points (ms after start, results done then): {kills:?}");
        assert!(
            kills.len() >= 10,
            "only {} kills before the crawl ended",
            kills.len()
        );
        daemon.launch();
        assert_previous_incarnation_gone(&daemon);
        daemon.wait_sealed(crawl, CRAWL_WAIT);
        assert_each_hook_succeeded_once(&daemon, crawl, 4);
        for row in rows(&daemon) {
            if row.status.is_live() {
                let alive = row
                    .identity
                    .as_ref()
                    .is_some_and(|i| identity::check(i).is_alive());
                assert!(
                    alive,
                    "row {} says {} for a dead process",
                    row.id, row.status
                );
            }
        }
    }
}

/// Waits until the crawl has a live worker of `kind` and one result succeeded; returns the worker.
fn live_worker(daemon: &TestDaemon, crawl: i64, kind: Kind) -> ProcessRow {
    wait_until("a worker with some work done", WAIT, || {
        let done = daemon
            .store()
            .results()
            .of_crawl(crawl)
            .unwrap()
            .iter()
            .any(|r| r.status == "succeeded");
        let worker = rows(daemon)
            .into_iter()
            .find(|r| r.kind == kind && r.status == Status::Running)?;
        done.then_some(worker)
    })
}

fn sigkill_row(row: &ProcessRow) {
    let id = row.identity.clone().unwrap();
    assert!(identity::check(&id).is_alive());
    kill(Pid::from_raw(id.pid), Signal::SIGKILL).unwrap();
}

#[test]
fn a_snapshot_worker_killed_at_run_time_is_recovered_without_a_restart() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let mut daemon = ledger_daemon(backend, "");
        daemon.launch();
        let crawl = daemon.add(&["http://127.0.0.1:9/a", "--plugins", "ledger"]);
        let worker = live_worker(&daemon, crawl, Kind::SnapshotWorker);
        sigkill_row(&worker);
        daemon.wait_sealed(crawl, CRAWL_WAIT);
        assert_each_hook_succeeded_once(&daemon, crawl, 4);
        let snapshot = &daemon.store().crawls().snapshots(crawl).unwrap()[0];
        assert_eq!(snapshot.restarts, 1);
        let workers = rows(&daemon)
            .into_iter()
            .filter(|r| r.kind == Kind::SnapshotWorker)
            .count();
        assert_eq!(workers, 2, "a second worker finished the snapshot");
        assert!(common::tagged_pids(&daemon.tag) == vec![daemon.pid()]);
    }
}

#[test]
fn a_crawl_worker_killed_at_run_time_is_recovered_without_a_restart() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let mut daemon = ledger_daemon(backend, "");
        daemon.launch();
        let crawl = daemon.add(&[
            "http://127.0.0.1:9/a",
            "http://127.0.0.1:9/b",
            "--plugins",
            "ledger",
        ]);
        let worker = live_worker(&daemon, crawl, Kind::CrawlWorker);
        sigkill_row(&worker);
        daemon.wait_sealed(crawl, CRAWL_WAIT);
        assert_each_hook_succeeded_once(&daemon, crawl, 4);
        assert_eq!(
            daemon
                .store()
                .crawls()
                .get(crawl)
                .unwrap()
                .unwrap()
                .restarts,
            1
        );
        let row = daemon.store().processes().get(worker.id).unwrap().unwrap();
        assert_eq!(row.exit_signal, Some(9));
    }
}

/// The database as a worker leaves it when it dies between the two writes of a hook's end —
/// its supervisor's (the row ended `exited`) and its own (the result) — made from a finished
/// crawl: `hook`'s result back to `started`, its snapshot and crawl started by their (dead)
/// workers. (SQLite: the moment itself is a few microseconds wide; no test can aim a SIGKILL
/// at it.)
fn unrecord_result_of(daemon: &TestDaemon, crawl: i64, hook: &str) -> (i64, i64) {
    let abxd::store::Location::File(path) = daemon.location() else {
        unreachable!("an SQLite daemon")
    };
    let db = rusqlite::Connection::open(path).unwrap();
    let (result, row): (i64, i64) = db
        .query_row(
            "SELECT id, process_id FROM results WHERE crawl_id = ?1 AND hook = ?2",
            rusqlite::params![crawl, hook],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    db.execute_batch(&format!(
        "UPDATE results SET status = 'started', ended_at = NULL, output = NULL WHERE id = {result};
         UPDATE snapshots SET status = 'started', sealed_at = NULL, epoch = epoch + 1
             WHERE crawl_id = {crawl};
         UPDATE crawls SET status = 'started', sealed_at = NULL, outcome = NULL,
             epoch = epoch + 1 WHERE id = {crawl};"
    ))
    .unwrap();
    (result, row)
}

#[test]
fn a_hook_run_that_ended_before_its_worker_recorded_it_is_recorded_not_run_again() {
    let hook = "on_Snapshot__20_count_again.sh";
    let mut daemon = TestDaemon::prepare_on("sqlite", "");
    daemon.write_config(&format!(
        "{}[plugins.tally]\nenv = {{ LEDGER = {:?} }}\n",
        plugins_config(&[&fixtures().join("unrecorded")]),
        daemon.path("ledger.txt").display().to_string()
    ));
    daemon.launch();
    let crawl = daemon.add(&["http://127.0.0.1:9/a", "--plugins", "tally"]);
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    daemon.crash();
    let (result, row) = unrecord_result_of(&daemon, crawl, hook);
    let row_end = daemon.store().processes().get(row).unwrap().unwrap();
    assert_eq!(row_end.end_reason, Some(EndReason::Exited));

    daemon.launch();
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    let store = daemon.store();
    let recorded = (store.results().of_crawl(crawl).unwrap())
        .into_iter()
        .find(|r| r.id == result)
        .unwrap();
    assert_eq!(recorded.status, "succeeded", "{recorded:?}");
    assert_eq!(recorded.process_id, Some(row), "its one run");
    let runs: Vec<(String, String)> = (ledger(&daemon).into_iter())
        .filter(|(_, _, h, _)| h == hook)
        .map(|(event, _, h, _)| (event, h))
        .collect();
    assert_eq!(
        runs,
        [("start".into(), hook.into()), ("done".into(), hook.into())],
        "{hook} ran once"
    );
    let hook_rows = rows(&daemon)
        .into_iter()
        .filter(|r| r.result_id == Some(result))
        .count();
    assert_eq!(hook_rows, 1, "no second process was started for it");
    let said: String = (rows(&daemon).into_iter())
        .filter(|r| r.kind == Kind::SnapshotWorker)
        .filter_map(|r| std::fs::read_to_string(r.stderr_path?).ok())
        .collect();
    assert!(
        said.contains(&format!("{hook}: its run (row {row}) ended unrecorded")),
        "{said}"
    );
    // (Nor does the hook before it run again: its success stands.)
    assert_eq!(ledger(&daemon).len(), 4, "{:?}", ledger(&daemon));
}

#[test]
fn a_running_row_whose_pid_was_reused_is_marked_lost_and_the_process_left_alone() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let mut daemon = TestDaemon::prepare_on(backend, "");
        daemon.launch();
        let mut stranger = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap();
        let real = identity::of_pid(stranger.id() as i32).unwrap();
        daemon.crash();
        // A row that claims the stranger's pid with another start time: a process that is gone,
        // whose pid was reused.
        let store = abxd::store::Store::open_at(&daemon.location()).unwrap();
        let row = store
            .processes()
            .insert(&abxd::store::NewProcess {
                parent_id: Some(1),
                kind: Kind::Hook,
                crawl_id: None,
                snapshot_id: None,
                result_id: None,
                argv: vec!["gone".into()],
                cwd: "/".into(),
                timeout_ms: None,
            })
            .unwrap();
        // (An earlier process: started earlier, and its pidfs inode, where recorded, is another.)
        let stale = identity::Identity {
            start_ticks: real.start_ticks - 100,
            pidfd_ino: real.pidfd_ino.map(|ino| ino - 1),
            ..real.clone()
        };
        store
            .processes()
            .record_spawned(
                row,
                &stale,
                stale.pid,
                (None, None),
                nix::unistd::getuid().as_raw(),
            )
            .unwrap();
        drop(store);

        daemon.launch();
        let row = daemon.store().processes().get(row).unwrap().unwrap();
        assert_eq!(row.status, Status::Lost);
        assert_eq!(row.end_reason, Some(EndReason::Lost));
        assert!(row
            .end_detail_text()
            .unwrap()
            .contains("now belongs to another process"));
        assert!(
            stranger.try_wait().unwrap().is_none(),
            "the stranger was not signalled"
        );
        assert!(identity::check(&real).is_alive());
        stranger.kill().unwrap();
        stranger.wait().unwrap();
    }
}

#[test]
fn after_a_reboot_every_running_row_is_lost_and_nothing_is_signalled() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let mut daemon = TestDaemon::prepare_on(
            backend,
            &format!(
                "{}[plugins.long_running]\ntimeout = \"300s\"\n",
                plugins_config(&[&fixtures().join("escape")])
            ),
        );
        daemon.launch();
        let crawl = daemon.add(&["http://127.0.0.1:9/a", "--plugins", "long_running"]);
        wait_until("the hook's child to run", WAIT, || {
            rows(&daemon)
                .iter()
                .any(|r| r.kind == Kind::Child && r.crawl_id == Some(crawl))
                .then_some(())
        });
        daemon.crash();
        let survivors: Vec<i32> = common::tagged_pids(&daemon.tag);
        assert!(
            !survivors.is_empty(),
            "the crashed daemon's workers live on"
        );
        let live_before: Vec<i64> = rows(&daemon)
            .into_iter()
            .filter(|r| r.status.is_live())
            .map(|r| r.id)
            .collect();
        // After a real reboot they would be gone: frozen, they stand for processes that can do
        // nothing (a worker that finds its work taken over stops its own children — the fence
        // at work, not the daemon signalling).
        let survivors = freeze_outside_a_write(&daemon);

        // The same machine, pretending to be after a reboot.
        let mut command = daemon.abxd_command(&[]);
        command.env(
            identity::BOOT_ID_OVERRIDE_ENV,
            "00000000-0000-4000-8000-000000000000",
        );
        let mut rebooted = command.spawn().unwrap();
        wait_until("the rebooted daemon to answer", WAIT, || {
            daemon.ctl(&["status"]).status.success().then_some(())
        });
        for id in live_before {
            let row = daemon.store().processes().get(id).unwrap().unwrap();
            assert_eq!(row.status, Status::Lost, "row {id}");
            assert_eq!(
                row.end_detail_text().as_deref(),
                Some("recorded during an earlier boot")
            );
            assert!(
                row.sigterm_at.is_none() && row.sigkill_at.is_none(),
                "row {id} was signalled"
            );
        }
        for pid in &survivors {
            assert!(identity::of_pid(*pid).is_some(), "pid {pid} was signalled");
        }
        rebooted.kill().unwrap();
        rebooted.wait().unwrap();
    }
}

#[test]
fn recover_dry_run_changes_nothing_and_lists_what_the_real_run_does() {
    let mut daemon = ledger_daemon("sqlite", "");
    daemon.launch();
    let crawl = daemon.add(&["http://127.0.0.1:9/a", "--plugins", "ledger"]);
    live_worker(&daemon, crawl, Kind::SnapshotWorker);
    daemon.crash();
    // Freeze the orphans so that nothing changes between the dry run and the real one: stop
    // every process of the test until no new one appears (a running one may fork meanwhile) —
    // and none is stopped inside a write (it would hold the database's write lock, and the next
    // daemon could not record itself until it went on).
    freeze_outside_a_write(&daemon);
    let before = daemon.ctl_ok(&["ps", "--all", "--json"]);
    let output = daemon
        .abxd_command(&["recover", "--dry-run"])
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert!(output.status.success());
    let plan: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let after = daemon.ctl_ok(&["ps", "--all", "--json"]);
    let strip = |json: &str| -> serde_json::Value {
        let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
        v["now_ms"] = 0.into();
        for p in v["processes"].as_array_mut().unwrap() {
            p["time_left_ms"] = 0.into();
        }
        v
    };
    assert_eq!(strip(&before), strip(&after), "the dry run changed nothing");
    assert!(
        plan.iter()
            .any(|l| l.starts_with("tear down orphan tree of row")),
        "{plan:?}"
    );
    assert!(
        plan.iter().any(|l| l.starts_with("requeue snapshot")),
        "{plan:?}"
    );

    // Only the second daemon's log from here on.
    std::fs::write(daemon.log_path(), "").unwrap();
    daemon.launch();
    assert_previous_incarnation_gone(&daemon);
    let done: Vec<String> = daemon
        .log()
        .lines()
        .filter_map(|l| {
            l.split_once("recovery: ")
                .map(|(_, action)| action.to_string())
        })
        .filter(|a| a != "every orphan tree is gone")
        .collect();
    let mut done_sorted = done.clone();
    done_sorted.sort();
    let mut plan_sorted = plan.clone();
    plan_sorted.sort();
    assert_eq!(
        plan_sorted, done_sorted,
        "the dry run listed what the real run did"
    );
}

#[test]
fn work_whose_worker_crashes_at_once_backs_off_and_ends_failed_instead_of_looping() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let mut daemon = ledger_daemon(backend, "");
        // A longer back-off than the ledger daemon's default, for clear gaps.
        let config = std::fs::read_to_string(&daemon.config)
            .unwrap()
            .replace("retry_backoff = \"100ms\"", "retry_backoff = \"200ms\"");
        std::fs::write(&daemon.config, config).unwrap();
        daemon.launch();
        let crawl = daemon.add(&["http://127.0.0.1:9/a", "--plugins", "killer"]);
        daemon.wait_sealed(crawl, CRAWL_WAIT);

        let result = &daemon.store().results().of_crawl(crawl).unwrap()[0];
        assert_eq!(result.status, "failed");
        assert_eq!(
            result.output.as_deref(),
            Some("interrupted 3 times; not run again")
        );
        let snapshot = &daemon.store().crawls().snapshots(crawl).unwrap()[0];
        assert_eq!(snapshot.restarts, 2);
        let starts: Vec<i64> = rows(&daemon)
            .into_iter()
            .filter(|r| r.kind == Kind::SnapshotWorker)
            .map(|r| r.started_at.unwrap())
            .collect();
        assert_eq!(starts.len(), 3);
        // Each restart waited out its back-off, doubled each time: 200 ms, then 400 ms.
        assert!(starts[1] - starts[0] >= 200, "{starts:?}");
        assert!(starts[2] - starts[1] >= 400, "{starts:?}");
    }
}

/// A process the test started, killed (by pid, it is the test's own child) and reaped on drop.
struct OwnChild(std::process::Child);

impl Drop for OwnChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn recovery_never_signals_a_process_that_runs_as_another_user_than_its_row_says() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let mut daemon = TestDaemon::prepare_on(backend, "");
        daemon.create_database();
        // Another user's process, and a row naming it as abxd's own (as an edited or swapped
        // database would): the row records the test's uid, the process runs as nobody.
        let stranger = OwnChild(
            std::process::Command::new("setpriv")
                .args([
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    "sleep",
                    "300",
                ])
                .spawn()
                .expect("setpriv (util-linux)"),
        );
        let pid = stranger.0.id() as i32;
        let identity = wait_until("the stranger to run as nobody", WAIT, || {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            (status.contains("Uid:\t65534") && comm.trim() == "sleep")
                .then(|| identity::of_pid(pid))
                .flatten()
        });
        let store = abxd::store::Store::open_at(&daemon.location()).unwrap();
        let row = store
            .processes()
            .insert(&abxd::store::NewProcess {
                parent_id: None,
                kind: Kind::Hook,
                crawl_id: None,
                snapshot_id: None,
                result_id: None,
                argv: vec!["sleep".into(), "300".into()],
                cwd: "/".into(),
                timeout_ms: None,
            })
            .unwrap();
        store
            .processes()
            .record_spawned(
                row,
                &identity,
                pid,
                (None, None),
                nix::unistd::getuid().as_raw(),
            )
            .unwrap();
        drop(store);

        daemon.launch();
        wait_until("recovery to finish", WAIT, || {
            let status = daemon.ctl_ok(&["status"]);
            (!status.contains("recovering")).then_some(())
        });
        assert!(
            identity::check(&identity).is_alive(),
            "the other user's process was killed"
        );
        let ended = wait_until("the row to end", WAIT, || {
            daemon
                .store()
                .processes()
                .get(row)
                .unwrap()
                .filter(|r| !r.status.is_live())
        });
        assert_eq!(ended.end_reason, Some(EndReason::Lost), "{ended:?}");
        let detail = ended.end_detail_text().unwrap_or_default();
        assert!(detail.contains("another user"), "{detail}");
        assert!(daemon.log().contains("not signalled"), "{}", daemon.log());
    }
}

/// A daemon (not started) running the `sessions` fixture: a crawl's browser, a snapshot's tab
/// and its navigation (one plugin, as abx-plugins' chrome), two hooks that need no session (one
/// in the background that ends by itself, as wget), and a reader of the navigated tab; each run noted in `<dir>/sessions/ledger`.
fn sessions_daemon() -> TestDaemon {
    let daemon = TestDaemon::prepare_on("sqlite", "");
    let dir = daemon.path("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    daemon.write_config(&format!(
        "{}[timeouts]\nkill_grace = \"500ms\"\nmin_grace = \"200ms\"\n\
         [plugins.browser]\nenv = {{ SESSIONS_DIR = {dir:?} }}\n\
         [plugins.tab]\nenv = {{ SESSIONS_DIR = {dir:?} }}\n\
         [plugins.other]\nenv = {{ SESSIONS_DIR = {dir:?} }}\n\
         [plugins.fetch]\nenv = {{ SESSIONS_DIR = {dir:?} }}\n\
         [plugins.reader]\nenv = {{ SESSIONS_DIR = {dir:?} }}\n",
        plugins_config(&[&fixtures().join("sessions")]),
        dir = dir.display().to_string(),
    ));
    daemon
}

/// Adds a crawl of one URL running every plugin of the `sessions` fixture; returns its id.
fn add_sessions_crawl(daemon: &TestDaemon) -> i64 {
    daemon.add(&[
        "http://127.0.0.1:9/a",
        "--plugins",
        "browser,tab,fetch,other,reader",
    ])
}

/// The reader's result, and how many times each kind of run ("browser", "tab", "navigate",
/// "fetch", "other", "reader") is in the sessions ledger.
fn sessions_outcome(
    daemon: &TestDaemon,
    crawl: i64,
) -> (abxd::domain::ResultStatus, BTreeMap<String, usize>) {
    let text = std::fs::read_to_string(daemon.path("sessions/ledger")).unwrap_or_default();
    let mut runs = BTreeMap::new();
    for line in text.lines() {
        let what = line.split_whitespace().next().unwrap_or("").to_string();
        *runs.entry(what).or_insert(0) += 1;
    }
    let reader = (daemon
        .store()
        .results()
        .of_crawl(crawl)
        .unwrap()
        .into_iter())
    .find(|r| r.hook == "on_Snapshot__50_reader.sh")
    .map(|r| r.status);
    (reader.unwrap_or(abxd::domain::ResultStatus::Queued), runs)
}

/// The ledger of a crawl of the `sessions` fixture whose browser, tab and navigation ran
/// `sessions` times and its reader `readers` times; the hooks that need no session (one in the
/// background that ends by itself) ran once.
fn ledger_of(sessions: usize, readers: usize) -> BTreeMap<String, usize> {
    [
        ("browser", sessions),
        ("tab", sessions),
        ("navigate", sessions),
    ]
    .into_iter()
    .chain([("fetch", 1), ("other", 1), ("reader", readers)])
    .map(|(what, n)| (what.to_string(), n))
    .collect()
}

/// kill -9 of abxd while a snapshot reads from its tab, after its navigation succeeded: the
/// recovered snapshot opens a new tab — which removes the old navigation — and navigates it
/// again, so that what reads from it still gets a page; a success that needs no session is not
/// run again.
#[test]
fn after_a_kill_9_a_recovered_snapshot_navigates_its_new_tab_again() {
    use abxd::domain::ResultStatus;
    let mut daemon = sessions_daemon();
    std::fs::write(daemon.path("sessions/hold"), "").unwrap();
    daemon.launch();
    let crawl = add_sessions_crawl(&daemon);
    wait_until("the reader to run", CRAWL_WAIT, || {
        (sessions_outcome(&daemon, crawl).1.get("reader") == Some(&1)).then_some(())
    });
    daemon.crash();
    daemon.launch();
    std::fs::remove_file(daemon.path("sessions/hold")).unwrap();
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    assert_eq!(
        sessions_outcome(&daemon, crawl),
        (ResultStatus::Succeeded, ledger_of(2, 2)),
        "the new tab is navigated; a success that needs no session is not run again"
    );
    common::assert_every_row_final(&rows(&daemon));
}

/// `abxctl retry` of a result that reads from the browser: the run that retries it starts the
/// crawl's browser, the snapshot's tab and its navigation again (they ended with the run they
/// served), and nothing else that succeeded.
#[test]
fn retry_of_a_hook_that_needs_the_browser_starts_the_browser_and_tab_again() {
    use abxd::domain::ResultStatus;
    let mut daemon = sessions_daemon();
    std::fs::write(daemon.path("sessions/fail"), "").unwrap();
    daemon.launch();
    let crawl = add_sessions_crawl(&daemon);
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    assert_eq!(
        sessions_outcome(&daemon, crawl),
        (ResultStatus::Failed, ledger_of(1, 1))
    );
    std::fs::remove_file(daemon.path("sessions/fail")).unwrap();
    let retried = daemon.ctl(&["retry", &crawl.to_string()]);
    assert!(retried.status.success(), "{retried:?}");
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    assert_eq!(
        sessions_outcome(&daemon, crawl),
        (ResultStatus::Succeeded, ledger_of(2, 2))
    );
}

/// `abxctl retry --hook` of a hook that needs the crawl's browser, after the browser failed: the
/// run that retries it starts the browser again — without it, the crawl would refuse to start
/// any snapshot, the hook failing again — and what succeeded that needs no session is not run
/// again.
#[test]
fn retry_of_one_hook_after_its_browser_failed_starts_the_browser_again() {
    use abxd::domain::ResultStatus;
    let mut daemon = sessions_daemon();
    for file in ["fail", "browser-dies"] {
        std::fs::write(daemon.path(&format!("sessions/{file}")), "").unwrap();
    }
    daemon.launch();
    let crawl = add_sessions_crawl(&daemon);
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    let browser = |daemon: &TestDaemon| {
        (daemon
            .store()
            .results()
            .of_crawl(crawl)
            .unwrap()
            .into_iter())
        .find(|r| r.plugin == "browser")
        .unwrap()
        .status
    };
    assert_eq!(browser(&daemon), ResultStatus::Failed);
    assert_eq!(sessions_outcome(&daemon, crawl).0, ResultStatus::Failed);
    for file in ["fail", "browser-dies"] {
        std::fs::remove_file(daemon.path(&format!("sessions/{file}"))).unwrap();
    }
    let id = crawl.to_string();
    daemon.ctl_ok(&["retry", &id, "--hook", "on_Snapshot__50_reader.sh"]);
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    assert_eq!(
        sessions_outcome(&daemon, crawl),
        (ResultStatus::Succeeded, ledger_of(2, 2)),
        "{}",
        daemon.log()
    );
    assert_eq!(browser(&daemon), ResultStatus::Succeeded);
}
