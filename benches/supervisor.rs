//! abxd's benchmarks: each figure is printed next to a baseline measured in the same run, as a
//! ratio, so the numbers mean something on a noisy shared machine. Nothing here asserts a time.
//!
//! `cargo bench` runs the full sizes; `ABXD_BENCH_SMOKE=1 cargo bench` runs small sizes, only
//! to check that every benchmark runs (CI does that); `ABXD_BENCH_ONLY=2,4` runs some of them
//! only (to profile one). See BENCHMARKS.md.

use abxd::config::Config;
use abxd::domain::{Kind, ResultStatus};
use abxd::logs::Logs;
use abxd::signal::Signal;
use abxd::spawn::SpawnRequest;
use abxd::store::{NewProcess, Store};
use abxd::supervisor::{ChildPolicy, Event, Owner, Supervisor};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The test suite's throwaway PostgreSQL cluster (benchmark 9; it uses part of it only).
#[path = "../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres;

/// The user a throwaway cluster runs as when no `postgres` user exists (as in the tests).
const UNPRIVILEGED: u32 = 65534;

struct Sizes {
    rounds: usize,
    stale_rows: usize,
    orphan_trees: usize,
    hooks: usize,
    tree_runs: usize,
    ps_rows: usize,
    ps_runs: usize,
    idle: Duration,
    load_urls: usize,
    /// How many unrelated processes share the host in benchmark 7, and for how long it measures.
    crowds: &'static [usize],
    busy: Duration,
    /// Benchmark 8: snapshots running 10 hooks at once each, and the snapshots of the long crawl.
    scale_snapshots: usize,
    crawl_snapshots: usize,
    /// Benchmark 9: the snapshots of the fleet's crawl.
    fleet_urls: usize,
}

fn sizes() -> Sizes {
    if std::env::var_os("ABXD_BENCH_SMOKE").is_some() {
        Sizes {
            rounds: 1,
            stale_rows: 500,
            orphan_trees: 5,
            hooks: 50,
            tree_runs: 1,
            ps_rows: 2_000,
            ps_runs: 3,
            idle: Duration::from_secs(2),
            load_urls: 16,
            crowds: &[0, 200],
            busy: Duration::from_secs(3),
            scale_snapshots: 5,
            crawl_snapshots: 100,
            fleet_urls: 12,
        }
    } else {
        Sizes {
            rounds: 3,
            stale_rows: 10_000,
            orphan_trees: 100,
            hooks: 2_000,
            tree_runs: 5,
            ps_rows: 100_000,
            ps_runs: 15,
            idle: Duration::from_secs(30),
            load_urls: 200,
            crowds: &[0, 2_000, 5_000],
            busy: Duration::from_secs(20),
            scale_snapshots: 100,
            crawl_snapshots: 10_000,
            fleet_urls: 300,
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

/// Every sample of every figure, over all rounds, each with the baseline measured next to it.
#[derive(Default)]
struct Figures {
    order: Vec<String>,
    samples: std::collections::HashMap<String, Vec<(f64, Option<f64>)>>,
    baselines: std::collections::HashMap<String, String>,
}

impl Figures {
    fn add(&mut self, name: &str, value: f64, baseline: Option<(&str, f64)>) {
        if !self.samples.contains_key(name) {
            self.order.push(name.to_string());
        }
        if let Some((baseline_name, _)) = baseline {
            self.baselines
                .insert(name.to_string(), baseline_name.to_string());
        }
        self.samples
            .entry(name.to_string())
            .or_default()
            .push((value, baseline.map(|(_, v)| v)));
    }

    /// One line per figure: median (min–max), and where it has one, the baseline's median and
    /// the median (min–max) of the per-sample ratios.
    fn print(&self) {
        let spread = |values: &mut Vec<f64>| {
            let m = median(values);
            let (lo, hi) = (values[0], values[values.len() - 1]);
            if values.len() == 1 {
                format!("{m:.2}")
            } else {
                format!("{m:.2} ({lo:.2}–{hi:.2}, n={})", values.len())
            }
        };
        for name in &self.order {
            let samples = &self.samples[name];
            let mut values: Vec<f64> = samples.iter().map(|(v, _)| *v).collect();
            print!("{name}: {}", spread(&mut values));
            let mut bases: Vec<f64> = samples.iter().filter_map(|(_, b)| *b).collect();
            if !bases.is_empty() {
                let mut ratios: Vec<f64> = samples
                    .iter()
                    .filter_map(|(v, b)| b.map(|b| v / b))
                    .collect();
                print!(
                    "; baseline {} {:.2}; ratio {}",
                    self.baselines[name],
                    median(&mut bases),
                    spread(&mut ratios)
                );
            }
            println!();
        }
    }
}

fn bin(name: &str) -> PathBuf {
    PathBuf::from(match name {
        "abxd" => env!("CARGO_BIN_EXE_abxd"),
        _ => env!("CARGO_BIN_EXE_abxctl"),
    })
}

fn config_in(dir: &Path, extra: &str) -> Config {
    let path = dir.join("supervisor.toml");
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::write(&path, extra).unwrap();
    Config::load(&path).unwrap()
}

fn timing() -> abxd::supervisor::Timing {
    abxd::supervisor::Timing {
        kill_grace: Duration::from_secs(5),
        min_grace: Duration::from_millis(200),
        descendant_scan: Duration::from_secs(3600),
        max_log_bytes: 64 << 20,
    }
}

fn hook_request(dir: &Path, argv: &[&str]) -> SpawnRequest {
    SpawnRequest {
        process: NewProcess {
            parent_id: None,
            kind: Kind::Hook,
            crawl_id: None,
            snapshot_id: None,
            result_id: None,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: dir.display().to_string(),
            timeout_ms: Some(60_000),
        },
        env: Vec::new(),
        logs: Logs::InDir(dir.join("logs")),
        limits: Default::default(),
    }
}

/// Where every benchmark's files go: one directory, removed once all benchmarks are done. ext4
/// does not hand out an inode freed in the last minute (`recently_deleted`, skipped one by one in
/// the bitmap while allocating): removing a benchmark's thousands of files (a round's log files,
/// a PostgreSQL cluster) would bill the next benchmark's file creations for that clean-up, which
/// no abxd host does at that rate. (Benchmark 1 after the fleet's clusters were removed ran at
/// 0.47 of raw spawn+wait, and at 0.68 in the round before them.)
static SCRATCH: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();

fn scratch_root() -> &'static Path {
    SCRATCH
        .get_or_init(|| {
            tempfile::Builder::new()
                .prefix("abxd-bench")
                .tempdir()
                .unwrap()
        })
        .path()
}

/// A directory for one benchmark's files, left in place until every benchmark is done.
fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .disable_cleanup(true)
        .tempdir_in(scratch_root())
        .unwrap()
}

/// (1) Trivial hooks through the full path, against plain spawn + wait of the same program. The
/// benchmark stands for a worker, a child subreaper like every abxd supervisor.
fn hook_throughput(s: &Sizes, figures: &mut Figures) {
    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let dir = scratch_dir();
    let mut store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
    let crawl = store.add_crawl(&["http://bench/".into()], 0, None).unwrap();
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
        for i in 0..size {
            let result = store
                .result_for(crawl, None, "bench", &format!("hook{block}-{i}"))
                .unwrap();
            store.start_result(result.id, None).unwrap();
            supervisor
                .spawn(
                    &mut store,
                    &request,
                    (Owner::Hooks, ChildPolicy::FOREGROUND_HOOK),
                    &mut abxd::spawn::nothing_more,
                )
                .unwrap();
            'reaped: loop {
                for event in supervisor.wait(&mut store, None).unwrap() {
                    if let Event::Exited { .. } = event {
                        store
                            .finish_result(result.id, ResultStatus::Succeeded, None, &[], 0)
                            .unwrap();
                        break 'reaped;
                    }
                }
            }
        }
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

/// Waits until the tree of benchmark 2 under `pid` has grown its 100 `sleep`s, and returns their
/// pids and `pid` (not the short-lived `seq` the script also runs).
fn grown_tree(pid: i32) -> Vec<i32> {
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
fn raw_teardown(script: &str, signal: nix::sys::signal::Signal) -> Duration {
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
fn teardown(s: &Sizes, figures: &mut Figures) {
    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let dir = scratch_dir();
    let mut store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
    let mut own = hook_request(dir.path(), &["supervisor-bench"]).process;
    own.kind = Kind::SnapshotWorker;
    let own_row = store.insert_process(&own).unwrap();
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
                    &mut store,
                    &request,
                    (Owner::SnapshotWorkers, ChildPolicy::WORKER),
                    &mut abxd::spawn::nothing_more,
                )
                .unwrap();
            grown_tree(spawned.identity.pid);
            let requested = Instant::now();
            supervisor.stop(
                &mut store,
                spawned.row_id,
                Signal::TERM,
                grace,
                abxd::domain::EndReason::Killed,
            );
            'done: loop {
                for event in supervisor.wait(&mut store, None).unwrap() {
                    if let Event::TornDown(report) = event {
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
                supervisor.wait(&mut store, Some(Instant::now())).unwrap();
            }
        }
    }
}

/// (3) `abxctl ps` on a big table (1% running, trees several levels deep), against
/// `abxctl --version`: process start included.
fn ps_at_scale(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let config = config_in(dir.path(), "");
    std::fs::create_dir_all(&config.data_dir).unwrap();
    drop(Store::open_at(&config.database).unwrap());
    let conn = rusqlite::Connection::open(config.database.file().unwrap()).unwrap();
    conn.execute_batch("BEGIN").unwrap();
    let boot = abxd::identity::boot_id();
    for id in 1..=s.ps_rows as i64 {
        // Trees four levels deep: every row's parent is the row a quarter of its id below it.
        let parent = (id > 4).then_some(id / 4);
        let running = id % 100 == 0;
        conn.execute(
            "INSERT INTO processes (id, parent_id, kind, pid, boot_id, start_ticks, pgid, argv, \
             cwd, status, created_at, started_at, ended_at, exit_code, end_reason) \
             VALUES (?1, ?2, 'hook', ?3, ?4, ?1, ?3, '[\"bench\",\"hook\"]', '/', ?5, 0, 0, ?6, ?7, ?8)",
            rusqlite::params![
                id,
                parent,
                (id % 30000 + 2) as i32,
                boot,
                if running { "running" } else { "exited" },
                (!running).then_some(1i64),
                (!running).then_some(0),
                (!running).then_some("exited"),
            ],
        )
        .unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
    let abxctl = bin("abxctl");
    let time = |args: &[&str]| -> Vec<f64> {
        (0..s.ps_runs)
            .map(|_| {
                let started = Instant::now();
                let out = Command::new(&abxctl)
                    .arg("--config")
                    .arg(&config.source)
                    .args(args)
                    .stdout(Stdio::null())
                    .status()
                    .unwrap();
                assert!(out.success());
                started.elapsed().as_secs_f64() * 1000.0
            })
            .collect()
    };
    let baseline = median(&mut time(&["--version"]));
    for args in [&["ps"][..], &["ps", "--json"]] {
        for ms in time(args) {
            figures.add(
                &format!(
                    "3 abxctl {} on {} rows, {} running (ms)",
                    args.join(" "),
                    s.ps_rows,
                    s.ps_rows / 100
                ),
                ms,
                Some(("abxctl --version (ms)", baseline)),
            );
        }
    }
}

/// The number after `key` in `/proc/PID/<file>` (0 if there is none).
fn proc_file_field(pid: i32, file: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn proc_field(pid: i32, key: &str) -> u64 {
    proc_file_field(pid, "status", key)
}

fn cpu_ticks(pid: i32) -> u64 {
    let stat = procfs::process::Process::new(pid).unwrap().stat().unwrap();
    stat.utime + stat.stime
}

/// A field of `/proc/PID/smaps_rollup` in KiB (memory as the kernel shares it: `Pss`, and the
/// private pages that make USS).
fn rollup_kib(pid: i32, key: &str) -> u64 {
    proc_file_field(pid, "smaps_rollup", key)
}

/// PSS and USS of a process, in MiB.
fn pss_uss_mib(pid: i32) -> (f64, f64) {
    let uss = rollup_kib(pid, "Private_Clean:") + rollup_kib(pid, "Private_Dirty:");
    (rollup_kib(pid, "Pss:") as f64 / 1024.0, uss as f64 / 1024.0)
}

/// The CPU time a process has used, in ns (`/proc/PID/schedstat`: exact, where stat counts
/// 10 ms ticks).
fn cpu_ns(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A daemon of the release build in `dir`, killed when dropped.
struct Daemon(std::process::Child, PathBuf);

impl Daemon {
    fn start(dir: &Path, extra: &str) -> Daemon {
        let config = config_in(dir, extra);
        let child = Command::new(bin("abxd"))
            .arg("--config")
            .arg(&config.source)
            .env("RUST_LOG", "warn")
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let daemon = Daemon(child, config.source.clone());
        let deadline = Instant::now() + Duration::from_secs(30);
        while !daemon.ctl(&["status"]).status.success() {
            assert!(Instant::now() < deadline, "abxd did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        daemon
    }

    /// A daemon whose plugins are the test fixtures (`tests/fixtures/plugins`), plus `extra`.
    fn with_test_plugins(dir: &Path, extra: &str) -> Daemon {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plugins");
        let paths = format!(
            "[paths]\nplugins_dirs = [{:?}]\n",
            fixtures.display().to_string()
        );
        Daemon::start(dir, &format!("{paths}{extra}"))
    }

    /// [`Daemon::with_test_plugins`] on the PostgreSQL database `url`.
    fn with_test_plugins_on(dir: &Path, url: &str, extra: &str) -> Daemon {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plugins");
        let paths = format!(
            "[paths]\nplugins_dirs = [{:?}]\ndatabase = {url:?}\n",
            fixtures.display().to_string()
        );
        Daemon::start(dir, &format!("{paths}{extra}"))
    }

    fn pid(&self) -> i32 {
        self.0.id() as i32
    }

    fn ctl(&self, args: &[&str]) -> std::process::Output {
        Command::new(bin("abxctl"))
            .arg("--config")
            .arg(&self.1)
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid()),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.0.wait();
    }
}

/// (5) The idle daemon: wake-ups and CPU over a while, RSS; and the RSS of a worker.
fn idle_cost(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let daemon = Daemon::with_test_plugins(
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

/// (6) Results written per second with 8 snapshot workers running trivial hooks at once, and the
/// "database is locked" errors seen.
fn database_under_load(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let daemon = Daemon::with_test_plugins(dir.path(), "[limits]\nmax_snapshot_workers = 8\n");
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
    let logs: String = std::fs::read_dir(dir.path().join("data/logs"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect();
    figures.add(
        &format!("6 {results} results by 8 snapshot workers (per s)"),
        results as f64 / elapsed,
        None,
    );
    // (A write refused for a busy database says "database is busy" since the loop's writes stop
    // waiting on it; both count.)
    figures.add(
        "6 \"database is locked\" or \"busy\" errors",
        (logs.matches("database is locked").count() + logs.matches("database is busy").count())
            as f64,
        None,
    );
}

/// (9) A fleet on PostgreSQL: one crawl of `fleet_urls` snapshots, each one trivial hook, run
/// by 1 and by 3 daemons (machine ids of their own, 4 snapshot slots each) sharing a throwaway
/// PostgreSQL cluster, beside the same crawl by one daemon on SQLite (the baseline): snapshots
/// claimed and results written per second; and the wake-ups of an idle daemon on PostgreSQL (its
/// heartbeat, and the listener thread that waits for the server's notifications).
fn fleet(s: &Sizes, figures: &mut Figures) {
    if !postgres::available() {
        println!("9 skipped: PostgreSQL is not installed here (apt install postgresql)");
        return;
    }
    let hooks = "[limits]\nmax_snapshot_workers = 4\n";
    let crawl = |daemon: &Daemon| -> f64 {
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
    let sqlite = crawl(&Daemon::with_test_plugins(dir.path(), hooks));
    for hosts in [1, 3] {
        let Some(server) = postgres::Postgres::start_leaving_files_in(scratch_root()) else {
            return;
        };
        let dirs: Vec<tempfile::TempDir> = (0..hosts).map(|_| scratch_dir()).collect();
        let daemons: Vec<Daemon> = (dirs.iter().enumerate())
            .map(|(i, dir)| {
                let store = format!("[store]\nmachine_id = \"bench-{i}\"\n{hooks}",);
                Daemon::with_test_plugins_on(dir.path(), &server.database_url(), &store)
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

/// Context switches of every thread of `pid` (a thread's own switches are its task's).
fn task_switches(pid: i32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .map(|task| {
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            status
                .lines()
                .filter(|l| {
                    l.starts_with("voluntary_ctxt_switches:")
                        || l.starts_with("nonvoluntary_ctxt_switches:")
                })
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// Starts abxd on `dir` with a notify socket and returns the time until READY=1.
fn time_to_ready(dir: &Path) -> Duration {
    let config = config_in(dir, "");
    let socket_path = dir.join("notify.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let started = Instant::now();
    let child = Command::new(bin("abxd"))
        .arg("--config")
        .arg(&config.source)
        .env("NOTIFY_SOCKET", &socket_path)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _daemon = Daemon(child, config.source);
    let mut buffer = [0u8; 4096];
    loop {
        match socket.recv(&mut buffer) {
            Ok(n)
                if String::from_utf8_lossy(&buffer[..n])
                    .lines()
                    .any(|l| l == "READY=1") =>
            {
                break;
            }
            Ok(_) => {}
            // SIGCHLD (this process supervised children earlier) interrupts the wait.
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => panic!("no READY within a minute: {err}"),
        }
    }
    started.elapsed()
}

/// (4) Recovery at scale: stale running rows and live orphan trees left by a crashed
/// incarnation; the time from start to READY, against an empty table.
fn recovery_at_scale(s: &Sizes, figures: &mut Figures) {
    let empty = scratch_dir();
    let baseline = time_to_ready(empty.path());

    let dir = scratch_dir();
    let config = config_in(dir.path(), "");
    std::fs::create_dir_all(&config.data_dir).unwrap();
    let mut store = Store::open_at(&config.database).unwrap();
    let namespace = store.marker_namespace().unwrap();
    let conn = rusqlite::Connection::open(config.database.file().unwrap()).unwrap();
    conn.execute_batch("BEGIN").unwrap();
    let boot = abxd::identity::boot_id();
    // A crashed orchestrator (no process has pid 99999: pid_max is 32768 here).
    conn.execute(
        "INSERT INTO processes (id, kind, pid, boot_id, start_ticks, argv, cwd, status, created_at) \
         VALUES (1, 'orchestrator', 99999, ?1, 1, '[]', '/', 'running', 0)",
        [boot],
    )
    .unwrap();
    for id in 2..(2 + s.stale_rows as i64) {
        conn.execute(
            "INSERT INTO processes (id, parent_id, kind, pid, boot_id, start_ticks, argv, cwd, \
             status, created_at) VALUES (?1, 1, 'hook', ?2, ?3, 1, '[]', '/', 'running', 0)",
            rusqlite::params![id, (id % 30000 + 2) as i32, boot],
        )
        .unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
    let mut orphans = Vec::new();
    for _ in 0..s.orphan_trees {
        let row = store
            .insert_process(&NewProcess {
                parent_id: Some(1),
                kind: Kind::Hook,
                crawl_id: None,
                snapshot_id: None,
                result_id: None,
                argv: vec!["sh".into()],
                cwd: "/".into(),
                timeout_ms: None,
            })
            .unwrap();
        let child = Command::new("sh")
            .args(["-c", "sleep 300 & wait"])
            .env("ABXD_PROCESS_ID", row.to_string())
            .env("ABXD_INSTANCE", &namespace)
            .spawn()
            .unwrap();
        let identity = abxd::identity::of_unreaped_child(child.id() as i32).unwrap();
        store
            .record_spawned(row, &identity, identity.pid, None, None)
            .unwrap();
        orphans.push(child);
    }
    drop(store);
    let recovering = time_to_ready(dir.path());
    for mut orphan in orphans {
        let _ = orphan.kill();
        let _ = orphan.wait();
    }
    figures.add(
        &format!(
            "4 READY after recovering {} stale rows and {} live orphan trees (ms)",
            s.stale_rows, s.orphan_trees
        ),
        recovering.as_secs_f64() * 1000.0,
        Some((
            "READY on an empty table (ms)",
            baseline.as_secs_f64() * 1000.0,
        )),
    );
}

/// `n` unrelated processes (`sleep`) in a process group of their own, killed when dropped.
struct Crowd(Option<std::process::Child>);

impl Crowd {
    fn of(n: usize) -> Crowd {
        if n == 0 {
            return Crowd(None);
        }
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let script = format!(
            "i=0; while [ $i -lt {n} ]; do sleep 3600 & i=$((i+1)); done; echo ready; wait"
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        Crowd(Some(child))
    }
}

impl Drop for Crowd {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            // The group is the shell's own (process_group(0)): its sleeps, nothing else.
            let group = nix::unistd::Pid::from_raw(-(child.id() as i32));
            let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
        }
    }
}

/// (7) Supervision on a busy host: 8 snapshots at once, each a hook sleeping with 3 children,
/// with 0 and thousands of unrelated processes on the host, under each containment: the CPU of
/// every abxd process (daemon and workers) over a while, as % of one core, beside the 0-case.
fn busy_host(s: &Sizes, figures: &mut Figures) {
    for containment in ["cgroup", "procfs"] {
        let mut quiet = None;
        for &n in s.crowds {
            let crowd = Crowd::of(n);
            let dir = scratch_dir();
            let plugin = dir.path().join("bench-plugins/sleeper");
            std::fs::create_dir_all(&plugin).unwrap();
            let hook = plugin.join("on_Snapshot__10_sleep.sh");
            std::fs::write(
                &hook,
                "#!/bin/sh\nsleep 600 & sleep 600 & sleep 600 & wait\n",
            )
            .unwrap();
            std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            let daemon = Daemon::start(
                dir.path(),
                &format!(
                    "[paths]\nplugins_dirs = [{:?}]\n[limits]\nmax_snapshot_workers = 8\n\
                     containment = {containment:?}\n[plugins.sleeper]\ntimeout = \"600s\"\n",
                    dir.path().join("bench-plugins").display().to_string()
                ),
            );
            let mut args = vec!["add".to_string(), "--plugins".into(), "sleeper".into()];
            args.extend((0..8).map(|i| format!("http://127.0.0.1:9/{i}")));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            assert!(daemon.ctl(&args).status.success());
            // Until every hook's three children are recorded: the tree is complete.
            let deadline = Instant::now() + Duration::from_secs(60);
            let abxd_pids = loop {
                let ps = daemon.ctl(&["ps", "--json"]);
                let json: serde_json::Value = serde_json::from_slice(&ps.stdout).unwrap();
                let rows = json["processes"].as_array().cloned().unwrap_or_default();
                let of_kind = |kind: &str| {
                    rows.iter()
                        .filter(|r| r["kind"] == kind)
                        .filter_map(|r| r["pid"].as_i64())
                        .map(|p| p as i32)
                        .collect::<Vec<i32>>()
                };
                if of_kind("child").len() >= 24 {
                    let mut pids = of_kind("orchestrator");
                    pids.extend(of_kind("crawl_worker"));
                    pids.extend(of_kind("snapshot_worker"));
                    break pids;
                }
                assert!(Instant::now() < deadline, "the 8 hooks did not start");
                std::thread::sleep(Duration::from_millis(100));
            };
            if n == 0 {
                let pss: f64 = abxd_pids.iter().map(|&p| pss_uss_mib(p).0).sum();
                figures.add(
                    &format!(
                        "7 PSS of all abxd processes, 8 snapshot workers, {containment} (MiB)"
                    ),
                    pss,
                    None,
                );
            }
            let cpu_ns = || abxd_pids.iter().map(|&p| cpu_ns(p)).sum::<u64>();
            let before = cpu_ns();
            std::thread::sleep(s.busy);
            let used = cpu_ns() - before;
            let percent = 100.0 * used as f64 / s.busy.as_nanos() as f64;
            let name = format!(
                "7 abxd CPU (% of a core), 8 sleeping snapshots, {n} unrelated processes, {containment}"
            );
            let baseline_name = format!("the same with 0 unrelated processes, {containment}");
            match quiet {
                None => figures.add(&name, percent, None),
                Some(zero) => figures.add(&name, percent, Some((baseline_name.as_str(), zero))),
            }
            quiet.get_or_insert(percent);
            drop(daemon);
            drop(crowd);
        }
    }
}

/// Writes plugin `name` with `hooks` (file name, script) below `dir`, executable.
fn write_plugin(dir: &Path, name: &str, hooks: &[(String, &str)]) {
    let plugin = dir.join(name);
    std::fs::create_dir_all(&plugin).unwrap();
    for (file, script) in hooks {
        let hook = plugin.join(file);
        std::fs::write(&hook, script).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
}

/// Whether process `pid` is gone (or a zombie).
fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(") ")
            .next()
            .is_some_and(|rest| rest.starts_with('Z'))
    })
}

/// CPU time of process `pid` and of its reaped descendants (`utime + stime + cutime + cstime`),
/// in ms; `None` once it is reaped (its `/proc` entry can vanish between any two reads).
fn cpu_with_reaped_ms(pid: i32) -> Option<f64> {
    let stat = procfs::process::Process::new(pid).ok()?.stat().ok()?;
    let ticks = stat.utime + stat.stime + (stat.cutime + stat.cstime).max(0) as u64;
    Some(ticks as f64 * 1000.0 / procfs::ticks_per_second() as f64)
}

/// (8) Scale, once (too long to repeat): `scale_snapshots` snapshot workers each running 10 hooks
/// at once (9 in the background, then one in the foreground), each hook with 2 children — all
/// recorded, `abxctl ps`, the CPU of abxd while they sleep, SIGTERM to the daemon until every
/// process is gone (beside min_grace); then a crawl of `crawl_snapshots` snapshots of a trivial
/// hook: CPU per snapshot of the first and the last tenth, database bytes per snapshot.
fn scale(s: &Sizes, figures: &mut Figures) {
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
    let daemon = Daemon::start(
        dir.path(),
        &format!(
            "[paths]\nplugins_dirs = [{:?}]\n[limits]\nmax_snapshot_workers = {}\n\
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
    while daemon.0.try_wait().unwrap().is_none() || !everything.iter().all(|&p| gone(p)) {
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
    let daemon = Daemon::start(
        dir.path(),
        &format!(
            "[paths]\nplugins_dirs = [{:?}]\n[limits]\nmax_snapshot_workers = 8\n",
            plugins.display().to_string()
        ),
    );
    let mut args = vec!["add".to_string(), "--plugins".into(), "trivial".into()];
    args.extend((0..s.crawl_snapshots).map(|i| format!("http://127.0.0.1:9/{i}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert!(daemon.ctl(&args).status.success());
    let database = dir.path().join("data/abxd.sqlite3");
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

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not run this harness at all.
    let s = sizes();
    println!(
        "abxd benchmarks ({} sizes)",
        if s.hooks < 100 { "smoke" } else { "full" }
    );
    // ABXD_BENCH_ONLY=2,4 runs benchmarks 2 and 4 only (for profiling one of them).
    let only: Option<Vec<u32>> = std::env::var("ABXD_BENCH_ONLY")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect());
    let mut figures = Figures::default();
    for round in 1..=s.rounds {
        eprintln!("round {round} of {}", s.rounds);
        let benches: [fn(&Sizes, &mut Figures); 7] = [
            hook_throughput,
            teardown,
            ps_at_scale,
            recovery_at_scale,
            idle_cost,
            database_under_load,
            busy_host,
        ];
        for (number, bench) in (1..).zip(benches) {
            if only.as_ref().is_none_or(|only| only.contains(&number)) {
                bench(&s, &mut figures);
            }
        }
        if only.as_ref().is_none_or(|only| only.contains(&9)) {
            fleet(&s, &mut figures);
        }
    }
    // (Once: it runs for minutes.)
    if only.as_ref().is_none_or(|only| only.contains(&8)) {
        scale(&s, &mut figures);
    }
    println!(
        "median (min–max, n samples) over {} rounds (benchmark 8: one run):",
        s.rounds
    );
    figures.print();
    // (Statics are never dropped: the files go now.)
    if let Some(root) = SCRATCH.get() {
        let _ = std::fs::remove_dir_all(root.path());
    }
}
