//! Benchmark 8: scale — many snapshots of 10 hooks at once, `ps`, CPU, and the daemon's SIGTERM.

use crate::harness::*;
use crate::procfs::*;
use std::time::{Duration, Instant};

/// (8) Scale, once (too long to repeat): `scale_snapshots` snapshot workers each running 10 hooks
/// at once (9 in the background, then one in the foreground), each hook with 2 children — all
/// recorded, `abxctl ps`, the CPU of abxd while they sleep, SIGTERM to the daemon until every
/// process is gone (beside min_grace); then a crawl of `crawl_snapshots` snapshots of a trivial
/// hook: CPU per snapshot of the first and the last tenth, database bytes per snapshot.
pub(crate) fn scale(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let plugins = dir.path().join("bench-plugins");
    // (A background hook's first line tells its worker it is up: the next hook starts then.)
    let sleeper = "#!/bin/sh\ntrap 'kill $(jobs -p) 2>/dev/null; exit 0' TERM\n\
                   sleep 600 & sleep 600 & echo up; wait\n";
    let mut hooks: Vec<(String, &str)> = (10..19)
        .map(|n| (format!("on_Snapshot__{n}_held.bg.sh"), sleeper))
        .collect();
    hooks.push(("on_Snapshot__19_held.sh".into(), sleeper));
    write_plugin(&plugins, "held", &hooks);
    let trivial = "#!/bin/sh\necho '{\"type\":\"ArchiveResult\",\"status\":\"succeeded\"}'\n";
    write_plugin(
        &plugins,
        "trivial",
        &[("on_Snapshot__10_true.sh".into(), trivial)],
    );
    let min_grace = Duration::from_secs(1);
    let daemon = quiet_daemon(
        dir.path(),
        &format!(
            "[paths]\nplugins_dirs = [{:?}]\n[limits]\nmax_snapshot_workers = {}\nmemory_floor = 0\n\
             [timeouts]\nmin_grace = \"{}s\"\n[plugins.held]\ntimeout = \"600s\"\n",
            plugins.display().to_string(),
            s.scale_snapshots,
            min_grace.as_secs()
        ),
    );
    let mut args = vec!["add".to_string(), "--plugins".into(), "held".into()];
    args.extend((0..s.scale_snapshots).map(|i| format!("http://127.0.0.1:9/{i}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert!(daemon.ctl(&args).status.success());
    let hooks_wanted = s.scale_snapshots * 10;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(300);
    let rows = loop {
        let ps = daemon.ctl(&["ps", "--json"]);
        let json: serde_json::Value = serde_json::from_slice(&ps.stdout).unwrap();
        let rows = json["processes"].as_array().cloned().unwrap_or_default();
        let count = |kind: &str| rows.iter().filter(|r| r["kind"] == kind).count();
        if count("hook") >= hooks_wanted && count("child") >= 2 * hooks_wanted {
            break rows;
        }
        assert!(
            Instant::now() < deadline,
            "{} hooks and {} children recorded of {hooks_wanted} and {}",
            count("hook"),
            count("child"),
            2 * hooks_wanted
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    figures.add(
        &format!(
            "8 {hooks_wanted} hooks and {} children under {} snapshot workers: all recorded after (s)",
            2 * hooks_wanted,
            s.scale_snapshots
        ),
        started.elapsed().as_secs_f64(),
        None,
    );
    let pids_of = |kinds: &[&str]| -> Vec<i32> {
        rows.iter()
            .filter(|r| kinds.iter().any(|k| r["kind"] == *k))
            .filter_map(|r| r["pid"].as_i64())
            .map(|p| p as i32)
            .collect()
    };
    let time = |args: &[&str]| {
        let started = Instant::now();
        assert!(daemon.ctl(args).status.success());
        started.elapsed().as_secs_f64() * 1000.0
    };
    let baseline = median(&mut (0..5).map(|_| time(&["--version"])).collect::<Vec<_>>());
    for _ in 0..5 {
        figures.add(
            &format!("8 abxctl ps with {} live rows (ms)", rows.len()),
            time(&["ps"]),
            Some(("abxctl --version (ms)", baseline)),
        );
    }
    let supervisors = pids_of(&["orchestrator", "crawl_worker", "snapshot_worker"]);
    let cpu_ns = || supervisors.iter().map(|&p| cpu_ns(p)).sum::<u64>();
    let before = cpu_ns();
    std::thread::sleep(s.busy);
    let percent = 100.0 * (cpu_ns() - before) as f64 / s.busy.as_nanos() as f64;
    figures.add(
        &format!("8 abxd CPU while {hooks_wanted} hooks sleep (% of a core)"),
        percent,
        None,
    );
    let everything = pids_of(&["crawl_worker", "snapshot_worker", "hook", "child"]);
    let mut daemon = daemon;
    let stopping = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = stopping + Duration::from_secs(120);
    while !daemon.has_exited() || !everything.iter().all(|&p| gone(p)) {
        assert!(
            Instant::now() < deadline,
            "the daemon's SIGTERM left processes"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    figures.add(
        &format!(
            "8 daemon SIGTERM until all {} processes are gone (ms)",
            everything.len() + 1
        ),
        stopping.elapsed().as_secs_f64() * 1000.0,
        Some(("min_grace (ms)", min_grace.as_secs_f64() * 1000.0)),
    );
    drop(daemon);

    let dir = scratch_dir();
    let plugins = dir.path().join("bench-plugins");
    write_plugin(
        &plugins,
        "trivial",
        &[("on_Snapshot__10_true.sh".into(), trivial)],
    );
    let daemon = quiet_daemon(
        dir.path(),
        &format!(
            "[paths]\nplugins_dirs = [{:?}]\n[limits]\nmax_snapshot_workers = 8\nmemory_floor = 0\n",
            plugins.display().to_string()
        ),
    );
    let mut args = vec!["add".to_string(), "--plugins".into(), "trivial".into()];
    args.extend((0..s.crawl_snapshots).map(|i| format!("http://127.0.0.1:9/{i}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert!(daemon.ctl(&args).status.success());
    let database = daemon.data_dir().join("abxd.sqlite3");
    // The crawl worker reaps the snapshot workers (which reap their hooks): its CPU with its
    // reaped descendants', and the daemon's, is what the crawl costs so far.
    let deadline = Instant::now() + Duration::from_secs(60);
    let crawl_worker = loop {
        let ps = daemon.ctl(&["ps", "--json"]);
        let json: serde_json::Value = serde_json::from_slice(&ps.stdout).unwrap();
        let found = json["processes"].as_array().and_then(|rows| {
            rows.iter()
                .find(|r| r["kind"] == "crawl_worker")
                .and_then(|r| r["pid"].as_i64())
        });
        if let Some(pid) = found {
            break pid as i32;
        }
        assert!(Instant::now() < deadline, "no crawl worker");
        std::thread::sleep(Duration::from_millis(5));
    };
    // Once the crawl worker is reaped, the daemon's own figure holds it. It may be reaped between
    // the reads: the sum counts only when the worker was there both before and after the
    // daemon's read, or gone both times (never counted twice, never missed).
    let crawl_cpu = || loop {
        let before = cpu_with_reaped_ms(crawl_worker);
        let daemon_ms = cpu_with_reaped_ms(daemon.pid()).expect("the daemon runs");
        let after = cpu_with_reaped_ms(crawl_worker);
        if before.is_some() == after.is_some() {
            break after.unwrap_or(0.0) + daemon_ms;
        }
    };
    let tenth = s.crawl_snapshots / 10;
    let mut marks = vec![(0usize, crawl_cpu())];
    let deadline = Instant::now() + Duration::from_secs(1800);
    while marks.len() <= 10 {
        let sealed: usize = {
            let conn = rusqlite::Connection::open_with_flags(
                &database,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .unwrap();
            conn.query_row(
                "SELECT count(*) FROM snapshots WHERE status = 'sealed'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap() as usize
        };
        if sealed >= marks.len() * tenth {
            marks.push((sealed, crawl_cpu()));
            continue;
        }
        assert!(Instant::now() < deadline, "the crawl did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let per_snapshot =
        |i: usize| (marks[i + 1].1 - marks[i].1) / (marks[i + 1].0 - marks[i].0) as f64;
    figures.add(
        &format!(
            "8 CPU per snapshot, last tenth of a {}-snapshot crawl (ms)",
            s.crawl_snapshots
        ),
        per_snapshot(9),
        Some(("the first tenth (ms)", per_snapshot(0))),
    );
    // The database itself, its write-ahead log checkpointed into it (the daemon is idle).
    let conn = rusqlite::Connection::open(&database).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    let bytes = std::fs::metadata(&database).unwrap().len();
    figures.add(
        &format!(
            "8 database bytes per snapshot after {} snapshots (one hook each)",
            s.crawl_snapshots
        ),
        bytes as f64 / s.crawl_snapshots as f64,
        None,
    );
}
