//! What every benchmark shares: the sizes (full or smoke), the figures with their baselines and
//! how they are printed, the scratch directory every benchmark's files stay in until all are
//! done, and the daemon fixture — the test suite's own (`tests/common`), logging only warnings.

use crate::common::{self, TestDaemon};
use abxd::config::Config;
use abxd::domain::Kind;
use abxd::logs::Logs;
use abxd::spawn::SpawnRequest;
use abxd::store::NewProcess;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) struct Sizes {
    pub(crate) rounds: usize,
    pub(crate) stale_rows: usize,
    pub(crate) orphan_trees: usize,
    pub(crate) hooks: usize,
    pub(crate) tree_runs: usize,
    pub(crate) ps_rows: usize,
    pub(crate) ps_runs: usize,
    pub(crate) idle: Duration,
    pub(crate) load_urls: usize,
    /// How many unrelated processes share the host in benchmark 7, and for how long it measures.
    pub(crate) crowds: &'static [usize],
    pub(crate) busy: Duration,
    /// Benchmark 8: snapshots running 10 hooks at once each, and the snapshots of the long crawl.
    pub(crate) scale_snapshots: usize,
    pub(crate) crawl_snapshots: usize,
    /// Benchmark 9: the snapshots of the fleet's crawl.
    pub(crate) fleet_urls: usize,
    /// Benchmark 12: links in the bookmarks file, snapshots timed for dispatch with them all
    /// queued, result rows the listings are timed on.
    pub(crate) library_links: usize,
    pub(crate) library_window: usize,
    pub(crate) library_results: usize,
    /// Benchmark 12's soak: snapshots through one daemon, timed and sampled by blocks.
    pub(crate) soak_snapshots: usize,
    pub(crate) soak_block: usize,
    /// Benchmark 12's prune: process rows of a year ago.
    pub(crate) prune_rows: usize,
}

pub(crate) fn sizes() -> Sizes {
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
            library_links: 300,
            library_window: 100,
            library_results: 3_000,
            soak_snapshots: 100,
            soak_block: 25,
            prune_rows: 2_000,
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
            library_links: 100_000,
            library_window: 2_000,
            library_results: 1_000_000,
            soak_snapshots: 20_000,
            soak_block: 1_000,
            prune_rows: 1_000_000,
        }
    }
}

pub(crate) fn median(values: &mut [f64]) -> f64 {
    // (A ratio of two zeros is NaN: sorted last, never a panic.)
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

/// Every sample of every figure, over all rounds, each with the baseline measured next to it.
#[derive(Default)]
pub(crate) struct Figures {
    order: Vec<String>,
    samples: std::collections::HashMap<String, Vec<(f64, Option<f64>)>>,
    baselines: std::collections::HashMap<String, String>,
}

impl Figures {
    /// Keeps a sample of figure `name`, and prints it at once: a long run stopped part way
    /// still says what it measured.
    pub(crate) fn add(&mut self, name: &str, value: f64, baseline: Option<(&str, f64)>) {
        match baseline {
            Some((baseline_name, base)) => {
                println!("  measured {name}: {value:.2} ({baseline_name} {base:.2})")
            }
            None => println!("  measured {name}: {value:.2}"),
        }
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
    pub(crate) fn print(&self) {
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

pub(crate) fn bin(name: &str) -> PathBuf {
    PathBuf::from(match name {
        "abxd" => env!("CARGO_BIN_EXE_abxd"),
        _ => env!("CARGO_BIN_EXE_abxctl"),
    })
}

pub(crate) fn config_in(dir: &Path, extra: &str) -> Config {
    let path = dir.join("supervisor.toml");
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::write(&path, extra).unwrap();
    Config::load(&path).unwrap()
}

pub(crate) fn timing() -> abxd::supervisor::Timing {
    abxd::supervisor::Timing {
        kill_grace: Duration::from_secs(5),
        min_grace: Duration::from_millis(200),
        descendant_scan: Duration::from_secs(3600),
        max_log_bytes: 64 << 20,
    }
}

pub(crate) fn hook_request(dir: &Path, argv: &[&str]) -> SpawnRequest {
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
        inherit_env: true,
        logs: Logs::InDir(dir.join("logs")),
        limits: Default::default(),
        run_as: None,
        umask: None,
        groups: Vec::new(),
        stdin: None,
    }
}

/// Where every benchmark's files go: one directory, removed once all benchmarks are done. ext4
/// does not hand out an inode freed in the last minute (`recently_deleted`, skipped one by one in
/// the bitmap while allocating): removing a benchmark's thousands of files (a round's log files,
/// a PostgreSQL cluster) would bill the next benchmark's file creations for that clean-up, which
/// no abxd host does at that rate. (Benchmark 1 after the fleet's clusters were removed ran at
/// 0.47 of raw spawn+wait, and at 0.68 in the round before them.)
pub(crate) static SCRATCH: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();

pub(crate) fn scratch_root() -> &'static Path {
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
pub(crate) fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .disable_cleanup(true)
        .tempdir_in(scratch_root())
        .unwrap()
}

/// Writes plugin `name` with `hooks` (file name, script) below `dir`, executable.
pub(crate) fn write_plugin(dir: &Path, name: &str, hooks: &[(String, &str)]) {
    let plugin = dir.join(name);
    std::fs::create_dir_all(&plugin).unwrap();
    for (file, script) in hooks {
        let hook = plugin.join(file);
        std::fs::write(&hook, script).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
}

/// A daemon of the release build in a directory of its own below `dir`, kept until every
/// benchmark is done, logging only warnings (a benchmark measures abxd, not its debug log): the
/// test suite's fixture, torn down when dropped.
pub(crate) fn quiet_daemon(dir: &Path, extra: &str) -> TestDaemon {
    let mut daemon = TestDaemon::prepare_in(dir, extra);
    daemon.launch_with_env(&[("RUST_LOG", "warn")]);
    daemon
}

/// [`quiet_daemon`] whose plugins are the test fixtures (`tests/fixtures/plugins`), plus `extra`.
pub(crate) fn daemon_with_test_plugins(dir: &Path, extra: &str) -> TestDaemon {
    let paths = format!(
        "[paths]\nplugins_dirs = [{:?}]\n",
        common::fixtures().join("plugins").display().to_string()
    );
    quiet_daemon(dir, &format!("{paths}{extra}"))
}

/// [`daemon_with_test_plugins`] on the PostgreSQL database `url`.
pub(crate) fn daemon_with_test_plugins_on(dir: &Path, url: &str, extra: &str) -> TestDaemon {
    let paths = format!(
        "[paths]\nplugins_dirs = [{:?}]\ndatabase = {url:?}\n",
        common::fixtures().join("plugins").display().to_string()
    );
    quiet_daemon(dir, &format!("{paths}{extra}"))
}
