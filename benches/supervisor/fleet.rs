//! Benchmark 9: the fleet — one crawl on SQLite, and on PostgreSQL with one and three hosts.

use crate::common::{self, TestDaemon};
use crate::harness::*;
use crate::procfs::*;
use std::time::{Duration, Instant};

/// (9) A fleet on PostgreSQL: one crawl of `fleet_urls` snapshots, each one trivial hook, run
/// by 1 and by 3 daemons (machine ids of their own, 4 snapshot slots each) sharing a throwaway
/// PostgreSQL cluster, beside the same crawl by one daemon on SQLite (the baseline): snapshots
/// claimed and results written per second; and the wake-ups of an idle daemon on PostgreSQL (its
/// heartbeat, and the listener thread that waits for the server's notifications).
pub(crate) fn fleet(s: &Sizes, figures: &mut Figures) {
    if !common::postgres::available() {
        println!("9 skipped: PostgreSQL is not installed here (apt install postgresql)");
        return;
    }
    let hooks = "[limits]\nmax_snapshot_workers = 4\nmemory_floor = 0\n";
    let crawl = |daemon: &TestDaemon| -> f64 {
        let mut args = vec!["add".to_string()];
        args.extend((0..s.fleet_urls).map(|i| format!("http://127.0.0.1:9/{i}")));
        args.extend(["--plugins".into(), "ok".into(), "--wait".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = Instant::now();
        let out = daemon.ctl(&args);
        assert!(out.status.success(), "{out:?}");
        s.fleet_urls as f64 / started.elapsed().as_secs_f64()
    };
    let dir = scratch_dir();
    let sqlite = crawl(&daemon_with_test_plugins(dir.path(), hooks));
    for hosts in [1, 3] {
        let Some(server) = common::postgres::Postgres::start_leaving_files_in(scratch_root())
        else {
            return;
        };
        let dirs: Vec<tempfile::TempDir> = (0..hosts).map(|_| scratch_dir()).collect();
        let daemons: Vec<TestDaemon> = (dirs.iter().enumerate())
            .map(|(i, dir)| {
                let store = format!("[store]\nmachine_id = \"bench-{i}\"\n{hooks}",);
                daemon_with_test_plugins_on(dir.path(), &server.database_url(), &store)
            })
            .collect();
        let rate = crawl(&daemons[0]);
        let name = format!(
            "9 fleet of {hosts} on PostgreSQL, {} snapshots:",
            s.fleet_urls
        );
        figures.add(
            &format!("{name} snapshots claimed and sealed (per s)"),
            rate,
            Some(("one daemon on SQLite", sqlite)),
        );
        if hosts == 1 {
            let pid = daemons[0].pid();
            std::thread::sleep(Duration::from_millis(300));
            let before = task_switches(pid);
            std::thread::sleep(s.idle);
            let wakeups = task_switches(pid) - before;
            figures.add(
                &format!(
                    "9 idle daemon on PostgreSQL over {} s: wake-ups (all threads)",
                    s.idle.as_secs()
                ),
                wakeups as f64,
                None,
            );
        }
    }
}
