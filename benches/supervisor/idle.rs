//! Benchmark 5: the idle daemon — wake-ups, CPU and memory — and a worker's memory.

use crate::harness::*;
use crate::procfs::*;
use std::time::{Duration, Instant};

/// (5) The idle daemon: wake-ups and CPU over a while, RSS; and the RSS of a worker.
pub(crate) fn idle_cost(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let daemon = daemon_with_test_plugins(
        dir.path(),
        "[plugins.sleepy]\nenv = { SLEEPY_SECONDS = \"3\" }\n",
    );
    let pid = daemon.pid();
    std::thread::sleep(Duration::from_millis(300));
    let switches = |pid| {
        proc_field(pid, "voluntary_ctxt_switches:") + proc_field(pid, "nonvoluntary_ctxt_switches:")
    };
    let (w0, c0) = (switches(pid), cpu_ticks(pid));
    std::thread::sleep(s.idle);
    let (w1, c1) = (switches(pid), cpu_ticks(pid));
    let idle = format!("5 idle daemon over {} s:", s.idle.as_secs());
    figures.add(&format!("{idle} wake-ups"), (w1 - w0) as f64, None);
    figures.add(&format!("{idle} CPU ticks"), (c1 - c0) as f64, None);
    let mib = |kib: u64| kib as f64 / 1024.0;
    figures.add(
        &format!("{idle} RSS (MiB)"),
        mib(proc_field(pid, "VmRSS:")),
        None,
    );
    // What RSS is made of: its own memory, and mapped files (the executable, shared with every
    // worker, and libc).
    figures.add(
        &format!("{idle} RSS anonymous (MiB)"),
        mib(proc_field(pid, "RssAnon:")),
        None,
    );
    figures.add(
        &format!("{idle} RSS of mapped files (MiB)"),
        mib(proc_field(pid, "RssFile:")),
        None,
    );
    let (pss, uss) = pss_uss_mib(pid);
    figures.add(&format!("{idle} PSS (MiB)"), pss, None);
    figures.add(&format!("{idle} USS (MiB)"), uss, None);
    let out = daemon.ctl(&["add", "http://127.0.0.1:9/", "--plugins", "sleepy"]);
    assert!(out.status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let worker = loop {
        let ps = daemon.ctl(&["ps", "--json", "--kind", "snapshot_worker"]);
        let json: serde_json::Value = serde_json::from_slice(&ps.stdout).unwrap();
        if let Some(pid) = json["processes"][0]["pid"].as_i64() {
            break pid as i32;
        }
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(500));
    figures.add(
        "5 snapshot worker RSS (MiB)",
        mib(proc_field(worker, "VmRSS:")),
        None,
    );
    let (pss, uss) = pss_uss_mib(worker);
    figures.add("5 snapshot worker PSS (MiB)", pss, None);
    figures.add("5 snapshot worker USS (MiB)", uss, None);
}
