//! Benchmark 11: what the egress policy costs — per connect (a process in a crawl's cgroup
//! connecting to a public address, the longest way through the programs: every rule tried,
//! none matching), per hook start (hooks spawned below a crawl's cgroup), and per crawl (the
//! policy put in force) — each against the same without it, in the same run.
//!
//! Needs root and a writable cgroup v2 with cgroup BPF; elsewhere it says so and measures
//! nothing. It runs in a network namespace of its own, whose loopback holds the "public" address.

use crate::harness::*;
use abxd::cgroup::Cgroup;
use abxd::egress::crawl::{policy_of, put_in_force};
use abxd::store::Store;
use abxd::supervisor::Supervisor;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const PUBLIC: Ipv4Addr = Ipv4Addr::new(93, 184, 216, 34);

/// `connects` TCP connects to `port` on [`PUBLIC`] from a process placed in `cgroup`, timed by
/// the process itself (its start is not the policy's).
const CONNECTS: &str = r#"
import socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
started = time.perf_counter()
for _ in range(n):
    s = socket.create_connection((host, port))
    s.close()
print(time.perf_counter() - started)
"#;

fn connects_in(cgroup: &Path, port: u16, n: usize) -> Duration {
    let procs = cgroup.join("cgroup.procs").display().to_string();
    let output = Command::new("sh")
        .args([
            "-c",
            &format!("echo $$ > '{procs}' && exec python3 -c \"$0\" \"$@\""),
        ])
        .args([
            CONNECTS,
            &PUBLIC.to_string(),
            &port.to_string(),
            &n.to_string(),
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let seconds: f64 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap();
    Duration::from_secs_f64(seconds)
}

/// A cgroup below this process's own, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        // (Leaves first: hooks' cgroups below it.)
        if let Ok(entries) = std::fs::read_dir(&self.0) {
            for entry in entries.flatten().filter(|e| e.path().is_dir()) {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn scratch_cgroup(name: &str) -> Option<Scratch> {
    let own = abxd::cgroup::own_cgroup().ok()?;
    let dir = own
        .dir
        .join(format!("abxd-bench-egress-{name}-{}", std::process::id()));
    std::fs::create_dir(&dir).ok()?;
    Some(Scratch(dir))
}

/// Spawns `n` trivial hooks below `cgroup` and reaps each; returns the time taken.
fn hook_starts(cgroup: &Path, n: usize, dir: &Path, store: &Store) -> Duration {
    let mut supervisor =
        Supervisor::new(timing(), store.marker_namespace().unwrap(), None).unwrap();
    supervisor.contain_in(Cgroup::at(cgroup));
    let request = hook_request(dir, &["/bin/true"]);
    let started = Instant::now();
    for _ in 0..n {
        crate::hooks::spawn_and_reap(store, &mut supervisor, &request);
    }
    started.elapsed()
}

/// Moves this thread into a network namespace of its own with [`PUBLIC`] on its loopback.
fn own_network() -> bool {
    if nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).is_err() {
        return false;
    }
    let ip = |args: &[&str]| {
        Command::new("ip")
            .args(args)
            .status()
            .is_ok_and(|s| s.success())
    };
    ip(&["link", "set", "lo", "up"]) && ip(&["addr", "add", &format!("{PUBLIC}/32"), "dev", "lo"])
}

pub(crate) fn egress_cost(s: &Sizes, figures: &mut Figures) {
    let plain = scratch_cgroup("plain");
    let held = scratch_cgroup("held");
    let (Some(plain), Some(held), true) = (plain, held, rustix::process::geteuid().is_root())
    else {
        println!("11 egress: skipped (needs root and a writable cgroup v2)");
        return;
    };
    // (On a thread of its own: the namespace is the thread's, and goes with it.)
    std::thread::scope(|scope| {
        scope
            .spawn(|| measure(s, figures, &plain, &held))
            .join()
            .unwrap()
    });
}

fn measure(s: &Sizes, figures: &mut Figures, plain: &Scratch, held: &Scratch) {
    if !own_network() {
        println!("11 egress: skipped (no network namespace of its own)");
        return;
    }
    let listener = TcpListener::bind((PUBLIC, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
        }
    });
    // Per crawl: the policy put in force, against making and removing a cgroup.
    let crawls = 10.max(s.hooks / 20);
    let (mut baseline, mut in_force) = (Duration::ZERO, Duration::ZERO);
    let policy = policy_of(false, &[]);
    for i in 0..crawls {
        let dir = plain.0.join(format!("crawl-{i}"));
        let started = Instant::now();
        std::fs::create_dir_all(dir.join("supervisor")).unwrap();
        baseline += started.elapsed();
        let started = Instant::now();
        put_in_force(&policy, &dir, &dir.join("supervisor")).unwrap();
        in_force += started.elapsed();
        let _ = std::fs::remove_dir(dir.join("supervisor"));
        let _ = std::fs::remove_dir(&dir);
    }
    figures.add(
        "11 egress put in force, per crawl (ms)",
        in_force.as_secs_f64() * 1e3 / crawls as f64,
        Some((
            "its cgroup made (ms)",
            baseline.as_secs_f64() * 1e3 / crawls as f64,
        )),
    );
    // The crawl the rest runs under: connects from its own cgroup, hooks below it.
    std::fs::create_dir_all(held.0.join("supervisor")).unwrap();
    put_in_force(&policy, &held.0, &held.0.join("supervisor")).unwrap();
    // Per connect, alternating blocks.
    let connects = 200.max(s.hooks * 4);
    let (mut without, mut with) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..4 {
        without += connects_in(&plain.0, port, connects / 4);
        with += connects_in(&held.0, port, connects / 4);
    }
    figures.add(
        &format!("11 connects under the egress policy, {connects} (per s)"),
        connects as f64 / with.as_secs_f64(),
        Some((
            "the same without it (per s)",
            connects as f64 / without.as_secs_f64(),
        )),
    );
    // Per hook start, alternating blocks.
    let dir = scratch_dir();
    let store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
    let hooks = 20.max(s.hooks / 2);
    let (mut without, mut with) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..4 {
        without += hook_starts(&plain.0, hooks / 4, dir.path(), &store);
        with += hook_starts(&held.0, hooks / 4, dir.path(), &store);
    }
    figures.add(
        &format!("11 hook starts below a crawl under the egress policy, {hooks} (per s)"),
        hooks as f64 / with.as_secs_f64(),
        Some((
            "the same without it (per s)",
            hooks as f64 / without.as_secs_f64(),
        )),
    );
}
