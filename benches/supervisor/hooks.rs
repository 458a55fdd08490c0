//! Benchmark 1: trivial hooks through the full path, against plain spawn + wait.

use crate::harness::*;
use abxd::domain::ResultStatus;
use abxd::store::Store;
use abxd::supervisor::{ChildPolicy, Event, SnapshotWorkerChild, Supervisor};
use std::process::Command;
use std::time::{Duration, Instant};

/// (1) Trivial hooks through the full path, against plain spawn + wait of the same program. The
/// benchmark stands for a worker, a child subreaper like every abxd supervisor.
pub(crate) fn hook_throughput(s: &Sizes, figures: &mut Figures) {
    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let dir = scratch_dir();
    let store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
    let crawl = store
        .crawls()
        .add(
            &abxd::domain::CrawlSpec::of_urls(vec!["http://bench/".into()], 0),
            None,
        )
        .unwrap();
    let mut supervisor =
        Supervisor::new(timing(), store.marker_namespace().unwrap(), None).unwrap();
    let request = hook_request(dir.path(), &["/bin/true"]);

    // Raw and full in alternating blocks, each timed: a machine whose speed drifts during the
    // run (other tenants, frequency) slows both alike, not only the one measured second.
    let (mut raw_time, mut full_time) = (Duration::ZERO, Duration::ZERO);
    let blocks = 10.min(s.hooks);
    for block in 0..blocks {
        let size = s.hooks / blocks + usize::from(block < s.hooks % blocks);
        let started = Instant::now();
        for _ in 0..size {
            Command::new("/bin/true").spawn().unwrap().wait().unwrap();
        }
        raw_time += started.elapsed();

        let started = Instant::now();
        run_hooks(
            &store,
            &mut supervisor,
            &request,
            crawl,
            &format!("hook{block}"),
            size,
        );
        full_time += started.elapsed();
    }
    let raw = s.hooks as f64 / raw_time.as_secs_f64();
    let full = s.hooks as f64 / full_time.as_secs_f64();
    figures.add(
        &format!("1 hook throughput, {} hooks (per s)", s.hooks),
        full,
        Some(("raw spawn+wait (per s)", raw)),
    );
}

/// Runs `count` hooks of `request` one after another through the full path — a result row, the
/// spawn with its row, the exit reaped by the event loop, the result recorded — as results
/// `{prefix}-N` of `crawl`.
pub(crate) fn run_hooks(
    store: &Store,
    supervisor: &mut Supervisor<SnapshotWorkerChild>,
    request: &abxd::spawn::SpawnRequest,
    crawl: i64,
    prefix: &str,
    count: usize,
) {
    for i in 0..count {
        let result = store
            .results()
            .result_for(crawl, None, "bench", &format!("{prefix}-{i}"))
            .unwrap();
        store.results().start(result.id, None).unwrap();
        spawn_and_reap(store, supervisor, request);
        store
            .results()
            .finish(result.id, ResultStatus::Succeeded, None, &[], 0)
            .unwrap();
    }
}

/// Spawns `request` as a foreground hook of `supervisor` and waits until its loop reaped it.
pub(crate) fn spawn_and_reap(
    store: &Store,
    supervisor: &mut Supervisor<SnapshotWorkerChild>,
    request: &abxd::spawn::SpawnRequest,
) {
    supervisor
        .spawn(
            store,
            request,
            (SnapshotWorkerChild::Hooks, ChildPolicy::FOREGROUND_HOOK),
            &mut abxd::spawn::nothing_more,
        )
        .unwrap();
    loop {
        let events = supervisor.wait(store, None).unwrap();
        if events.iter().any(|e| matches!(e, Event::Exited { .. })) {
            return;
        }
    }
}
