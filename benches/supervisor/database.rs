//! Benchmark 6: the database under load — busy writes tried again, and errors, with many workers.

use crate::harness::*;
use std::time::Instant;

/// (6) Results written per second with 8 snapshot workers running trivial hooks at once, the
/// errors seen, and how often the workers found the database busy.
pub(crate) fn database_under_load(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let daemon = daemon_with_test_plugins(
        dir.path(),
        "[limits]\nmax_snapshot_workers = 8\nmemory_floor = 0\n",
    );
    let urls: Vec<String> = (0..s.load_urls)
        .map(|i| format!("http://127.0.0.1:9/{i}"))
        .collect();
    let started = Instant::now();
    let mut args = vec!["add".to_string()];
    args.extend(urls);
    args.extend([
        "--plugins".into(),
        "ok,recorder,skipper,failer".into(),
        "--wait".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = daemon.ctl(&args);
    // The `failer` hook fails by design: the crawl is sealed, and says so by its exit status.
    assert_eq!(out.status.code(), Some(abxd::exit::HOOKS_FAILED), "{out:?}");
    let elapsed = started.elapsed().as_secs_f64();
    let results = s.load_urls * 4;
    let logs: String = std::fs::read_dir(daemon.data_dir().join("logs"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect();
    figures.add(
        &format!("6 {results} results by 8 snapshot workers (per s)"),
        results as f64 / elapsed,
        None,
    );
    // A write the busy database refused is tried again by its loop (which never waits for the
    // lock): counted, not an error. An error is SQLite's "database is locked" in the middle of a
    // transaction, or a write given up.
    figures.add(
        "6 \"database is locked\" errors and writes given up",
        (logs.matches("database is locked").count() + logs.matches("cannot write").count()) as f64,
        None,
    );
    let (busy, refused) = daemon
        .store()
        .machines()
        .worker_write_counts(abxd::identity::machine_id())
        .unwrap_or_default();
    figures.add(
        "6 the workers' writes that found the database busy (tried again)",
        busy as f64,
        None,
    );
    figures.add(
        "6 the workers' writes refused while they backed off",
        refused as f64,
        None,
    );
}
