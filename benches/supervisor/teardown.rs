//! Benchmark 2: a tree of 100 processes torn down (SIGTERM, and SIGKILL past the deadline),
//! against a plain loop of kill and waitpid.

use crate::harness::*;
use abxd::domain::Kind;
use abxd::signal::Signal;
use abxd::store::Store;
use abxd::supervisor::{ChildPolicy, CrawlWorkerChild, Event, Supervisor};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Waits until the tree of benchmark 2 under `pid` has grown its 100 `sleep`s, and returns their
/// pids and `pid` (not the short-lived `seq` the script also runs).
pub(crate) fn grown_tree(pid: i32) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = abxd::proctree::descendants_of(&[pid]);
        let sleeps = found
            .iter()
            .filter(|f| f.argv.first().is_some_and(|a| a == "sleep"));
        if sleeps.clone().count() >= 100 {
            let mut pids: Vec<i32> = sleeps.map(|f| f.identity.pid).collect();
            pids.push(pid);
            return pids;
        }
        assert!(Instant::now() < deadline, "the tree never grew");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The physical limit of (2), its baseline: the same tree signalled by a plain loop over its pids
/// and reaped by blocking `waitpid` (the benchmark is their subreaper; `bash` reaps the ones that
/// die before it) until none is left — no rows, no pidfds, no identity checks. Time from the first
/// signal until the last of them is gone.
pub(crate) fn raw_teardown(script: &str, signal: nix::sys::signal::Signal) -> Duration {
    use nix::sys::wait::waitpid;
    use nix::unistd::Pid;
    // (Reaped below by `waitpid(-1)`, with the rest of its tree.)
    let bash = Command::new("/bin/bash")
        .args(["-c", script])
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
        .id();
    let tree = grown_tree(bash as i32);
    let started = Instant::now();
    for pid in &tree {
        nix::sys::signal::kill(Pid::from_raw(*pid), signal).unwrap();
    }
    loop {
        match waitpid(Pid::from_raw(-1), None) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::ECHILD) => return started.elapsed(),
            Err(e) => panic!("waitpid: {e}"),
        }
    }
}

/// (2) Teardown of a 100-process tree: honouring SIGTERM (time to all gone), and ignoring it with
/// a 200 ms grace (how far past the deadline the last one is gone), each beside [`raw_teardown`]
/// of the same tree (SIGTERM, and SIGKILL) run just before. The benchmark stands for a snapshot
/// worker: it has a row of its own, the parent of the hook's.
pub(crate) fn teardown(s: &Sizes, figures: &mut Figures) {
    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let dir = scratch_dir();
    let store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
    let mut own = hook_request(dir.path(), &["supervisor-bench"]).process;
    own.kind = Kind::SnapshotWorker;
    let own_row = store.processes().insert(&own).unwrap();
    let mut supervisor =
        Supervisor::new(timing(), store.marker_namespace().unwrap(), Some(own_row)).unwrap();
    for (label, script, grace) in [
        (
            "honours SIGTERM",
            "for i in $(seq 100); do sleep 300 & done; wait",
            Duration::from_secs(5),
        ),
        (
            "ignores SIGTERM, 200 ms grace",
            "trap '' TERM; for i in $(seq 100); do sleep 300 & done; while :; do wait; done",
            Duration::from_millis(200),
        ),
    ] {
        let raw_signal = if grace < Duration::from_secs(1) {
            nix::sys::signal::Signal::SIGKILL
        } else {
            nix::sys::signal::Signal::SIGTERM
        };
        for _ in 0..s.tree_runs {
            let raw = raw_teardown(script, raw_signal);
            let mut request = hook_request(dir.path(), &["/bin/bash", "-c", script]);
            request.process.parent_id = Some(own_row);
            let spawned = supervisor
                .spawn(
                    &store,
                    &request,
                    (CrawlWorkerChild::SnapshotWorkers, ChildPolicy::WORKER),
                    &mut abxd::spawn::nothing_more,
                )
                .unwrap();
            grown_tree(spawned.identity.pid);
            let requested = Instant::now();
            supervisor.stop(
                &store,
                spawned.row_id,
                Signal::TERM,
                grace,
                abxd::domain::EndReason::Killed,
            );
            'done: loop {
                for event in supervisor.wait(&store, None).unwrap() {
                    if let Event::TornDown { report, .. } = event {
                        assert!(report.complete && report.processes.len() > 100);
                        break 'done;
                    }
                }
            }
            let past = if grace < Duration::from_secs(1) {
                " past the deadline"
            } else {
                ""
            };
            let elapsed = requested.elapsed().saturating_sub(if past.is_empty() {
                Duration::ZERO
            } else {
                grace
            });
            figures.add(
                &format!("2 teardown of 101 processes that {label} (ms{past})"),
                elapsed.as_secs_f64() * 1000.0,
                Some((
                    &format!("plain kill({raw_signal}) + waitpid (ms)"),
                    raw.as_secs_f64() * 1000.0,
                )),
            );
            while supervisor.has_work() {
                supervisor.wait(&store, Some(Instant::now())).unwrap();
            }
        }
    }
}
