//! Benchmark 13: what durable answers cost (issue 58). Each figure is taken with
//! `store.synchronous_commit` on and, as its baseline, off, in alternating blocks on the same
//! filesystem.

use crate::harness::*;
use crate::hooks::run_hooks;
use abxd::domain::CrawlSpec;
use abxd::store::Store;
use abxd::supervisor::Supervisor;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// (13) Durable commits: a crawl added (a write abxd answers for) alone — committed under
/// `synchronous=FULL` — and joining a batch that began with a cheap write — the log synced
/// after its `COMMIT` —, per second; trivial hooks through the full path (benchmark 1's loop: its
/// result's end is durable), per second; and a real crawl's wall time: README's first command
/// (`abxd run` of the example site with every bundled plugin), as a user runs it.
pub(crate) fn durable_commits(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let spec = CrawlSpec::of_urls(vec!["http://bench/".into()], 0);
    let stores: Vec<Store> = [true, false]
        .iter()
        .map(|&on| {
            let store = Store::open(&dir.path().join(format!("durable-{on}.sqlite3"))).unwrap();
            store.set_synchronous_commit(on);
            store
        })
        .collect();
    let row = hook_request(dir.path(), &["/bin/true"]).process;
    let writes = s.hooks;
    let blocks = 10.min(writes);
    let mut alone = [Duration::ZERO; 2];
    let mut joined = [Duration::ZERO; 2];
    for _ in 0..blocks {
        for (store, (alone, joined)) in stores.iter().zip(alone.iter_mut().zip(&mut joined)) {
            let started = Instant::now();
            for _ in 0..writes / blocks {
                store.crawls().add(&spec, None).unwrap();
            }
            *alone += started.elapsed();
            let started = Instant::now();
            for _ in 0..writes / blocks {
                store.batch(|store| {
                    store.processes().insert(&row).unwrap();
                    store.crawls().add(&spec, None).unwrap();
                });
            }
            *joined += started.elapsed();
        }
    }
    let per_s = |d: Duration| (writes / blocks * blocks) as f64 / d.as_secs_f64();
    figures.add(
        "13 crawls added, each its own durable commit (per s)",
        per_s(alone[0]),
        Some(("synchronous_commit off (per s)", per_s(alone[1]))),
    );
    figures.add(
        "13 crawls added in a batch begun cheaply, log synced after it (per s)",
        per_s(joined[0]),
        Some(("synchronous_commit off (per s)", per_s(joined[1]))),
    );

    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let request = hook_request(dir.path(), &["/bin/true"]);
    let mut hook_time = [Duration::ZERO; 2];
    for block in 0..blocks {
        for (setting, store) in stores.iter().enumerate() {
            let crawl = store.crawls().add(&spec, None).unwrap();
            let mut supervisor =
                Supervisor::new(timing(), store.marker_namespace().unwrap(), None).unwrap();
            let started = Instant::now();
            let prefix = format!("hook{block}");
            run_hooks(
                store,
                &mut supervisor,
                &request,
                crawl,
                &prefix,
                s.hooks / blocks,
            );
            hook_time[setting] += started.elapsed();
        }
    }
    figures.add(
        &format!(
            "13 hook throughput, {} hooks (per s)",
            s.hooks / blocks * blocks
        ),
        per_s_of(s.hooks / blocks * blocks, hook_time[0]),
        Some((
            "synchronous_commit off (per s)",
            per_s_of(s.hooks / blocks * blocks, hook_time[1]),
        )),
    );

    let crawls = if s.hooks < 100 { 1 } else { 3 };
    let mut wall = [Duration::ZERO; 2];
    for run in 0..crawls {
        for (setting, on) in [true, false].into_iter().enumerate() {
            wall[setting] += example_crawl(dir.path(), &format!("crawl{run}-{on}"), on);
        }
    }
    figures.add(
        "13 README's crawl of the example site, wall time (s)",
        wall[0].as_secs_f64() / crawls as f64,
        Some((
            "synchronous_commit off (s)",
            wall[1].as_secs_f64() / crawls as f64,
        )),
    );
}

fn per_s_of(count: usize, time: Duration) -> f64 {
    count as f64 / time.as_secs_f64()
}

/// Runs README's first command — `abxd run --hooks-user nobody --depth 1 examples/site`, every
/// bundled plugin — with its data in a new directory `name` below `root`, and
/// `synchronous_commit` as given; returns its wall time.
fn example_crawl(root: &Path, name: &str, synchronous_commit: bool) -> Duration {
    use std::os::unix::fs::PermissionsExt;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    // (Its hooks run as nobody, who must reach the data dir.)
    for open in [root, &dir] {
        std::fs::set_permissions(open, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = dir.join("supervisor.toml");
    std::fs::write(
        &config,
        format!(
            "[paths]\ndata_dir = {:?}\nplugins_dirs = [{:?}]\n[store]\nsynchronous_commit = \
             {synchronous_commit}\n",
            dir.join("data").display().to_string(),
            repo.join("plugins").display().to_string(),
        ),
    )
    .unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_abxd"))
        .arg("--config")
        .arg(&config)
        .args(["run", "--hooks-user", "nobody", "--depth", "1"])
        .arg(repo.join("examples/site"))
        .env_remove("ABXD_CONFIG")
        .output()
        .unwrap();
    let wall = started.elapsed();
    assert!(
        out.status.success(),
        "abxd run failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    wall
}
