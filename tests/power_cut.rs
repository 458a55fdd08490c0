//! Power cuts: the daemon's data dir on a filesystem that drops every byte not synced
//! (`lazyfs`), cut at random moments while crawls are added and hooks run. What abxd answered
//! for — a crawl added, a result reported finished — must survive each cut, the database must
//! stay whole, and nothing may run twice; with `store.synchronous_commit` off, the same loop
//! loses acknowledged work (so the check can fail).

mod common;
mod lazyfs;

use common::{fixtures, plugins_config, tagged_pids, wait_until, TestDaemon, WAIT};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long a crawl may take once the cuts are over.
const CRAWL_WAIT: Duration = Duration::from_secs(120);

#[test]
#[ignore = "the lazyfs server of the other tests, started by them in a process of its own"]
fn lazyfs_server() {
    lazyfs::serve();
}

#[test]
fn the_filesystem_drops_what_was_not_synced_and_keeps_what_was() {
    use std::io::Write;
    if skip_without_fuse() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("backing");
    let at = dir.path().join("mnt");
    std::fs::create_dir_all(&backing).unwrap();
    std::fs::create_dir_all(&at).unwrap();
    let mut mount = lazyfs::Mount::new(&backing, &at).unwrap();
    let mut synced = std::fs::File::create(at.join("synced")).unwrap();
    synced.write_all(b"kept").unwrap();
    synced.sync_data().unwrap();
    synced.write_all(b" and lost").unwrap();
    drop(synced);
    std::fs::write(at.join("unsynced"), b"lost").unwrap();
    assert_eq!(std::fs::read(at.join("synced")).unwrap(), b"kept and lost");
    assert_eq!(std::fs::read(at.join("unsynced")).unwrap(), b"lost");
    let dropped = mount.cut_power().unwrap();
    assert!(dropped > 0);
    assert_eq!(std::fs::read(at.join("synced")).unwrap(), b"kept");
    assert_eq!(std::fs::read(at.join("unsynced")).unwrap(), b"");
}

/// Whether this machine cannot mount a FUSE filesystem (it can in CI: the test fails there).
fn skip_without_fuse() -> bool {
    let can = nix::unistd::geteuid().is_root() && std::path::Path::new("/dev/fuse").exists();
    if !can && std::env::var_os("CI").is_none() {
        eprintln!("SKIPPED: mounting a FUSE filesystem needs root and /dev/fuse");
        return true;
    }
    assert!(can, "CI runs as root with /dev/fuse");
    false
}

/// A daemon whose data dir is a [`lazyfs`] mount, with the `steady` plugin: hooks that note each
/// run in a ledger outside the mount (what ran is known whatever the cuts drop), and no
/// background session (whose loss would run its plugin's hooks again by design).
struct Rig {
    mount: lazyfs::Mount,
    daemon: TestDaemon,
}

impl Rig {
    fn new(synchronous_commit: bool) -> Rig {
        let daemon = TestDaemon::prepare("");
        let ledger = daemon.path("ledger.txt");
        daemon.write_config(&format!(
            "{}[timeouts]\nkill_grace = \"500ms\"\nmin_grace = \"200ms\"\n\
             retry_backoff = \"100ms\"\n[limits]\nmax_result_attempts = 1000\n\
             [store]\nsynchronous_commit = {synchronous_commit}\n\
             [plugins.steady]\nenv = {{ LEDGER = {:?} }}\n",
            plugins_config(&[&fixtures().join("power")]),
            ledger.display().to_string()
        ));
        let backing = daemon.path("backing");
        std::fs::create_dir_all(&backing).unwrap();
        std::fs::create_dir_all(daemon.data_dir()).unwrap();
        let mount = lazyfs::Mount::new(&backing, &daemon.data_dir()).expect("mount the lazyfs");
        daemon.create_database();
        Rig { mount, daemon }
    }

    /// Cuts the power: every process of the daemon killed at once (SIGKILL, as the power
    /// takes them), then every byte they wrote and nobody synced dropped.
    fn cut_power(&mut self) -> u64 {
        common::kill_tagged(&self.daemon.tag);
        self.daemon.wait_exit();
        assert!(
            tagged_pids(&self.daemon.tag).is_empty(),
            "a process of the daemon outlived the cut"
        );
        self.mount.cut_power().expect("remount after the cut")
    }

    fn store(&self) -> abxd::store::Store {
        self.daemon.store()
    }

    /// What `abxd store check` says of the database (its integrity check), if not "ok".
    fn damage(&self) -> Option<String> {
        let out = self
            .daemon
            .abxd_command(&["store", "check"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        let said = said + &String::from_utf8_lossy(&out.stderr);
        (!out.status.success()).then_some(said)
    }

    /// Ledger lines: (event, snapshot id, hook, unix ms).
    fn ledger(&self) -> Vec<(String, i64, String, i64)> {
        common::ledger_lines(&self.daemon.path("ledger.txt"))
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // (Before the mount is dropped: a process with a file open there keeps it mounted.)
        common::kill_tagged(&self.daemon.tag);
    }
}

/// A result reported finished: (snapshot id, hook) → when it ended.
type Reported = BTreeMap<(i64, String), i64>;

/// What the cuts undid of what abxd had answered for.
#[derive(Debug, Default)]
struct Losses {
    crawls: Vec<i64>,
    results: Vec<(i64, String)>,
    damage: Vec<String>,
}

impl Losses {
    fn none(&self) -> bool {
        self.crawls.is_empty() && self.results.is_empty() && self.damage.is_empty()
    }
}

/// The loop: start the daemon, add crawls (each acknowledged by `abxctl add`), let hooks run,
/// note the results reported finished, cut the power at a random moment — the last add just
/// before it — and look at what is left, `cuts` times (or until a loss, if `stop_at_loss`).
/// Returns the crawls added and what was reported, and what the cuts lost.
fn torture(rig: &mut Rig, cuts: usize, stop_at_loss: bool) -> (Vec<i64>, Reported, Losses) {
    let mut rng = common::Rng::seeded("ABXD_POWER_SEED", "power-cut");
    let mut acknowledged: Vec<i64> = Vec::new();
    let mut reported = Reported::new();
    let mut losses = Losses::default();
    let mut points = Vec::new();
    for cut in 0..cuts {
        rig.daemon.launch();
        let urls: Vec<String> = (0..2)
            .map(|i| format!("http://127.0.0.1:9/{cut}/{i}"))
            .collect();
        let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
        args.extend(["--plugins", "steady"]);
        acknowledged.push(rig.daemon.add(&args));
        let delay = 100 + rng.below(1500);
        std::thread::sleep(Duration::from_millis(delay));
        {
            let store = rig.store();
            for &crawl in &acknowledged {
                for result in store.results().of_crawl(crawl).unwrap() {
                    if result.status == "succeeded" {
                        let key = (result.snapshot_id.unwrap_or(0), result.hook.clone());
                        reported.insert(key, result.ended_at.unwrap());
                    }
                }
            }
        }
        // The last answer given just before the power goes.
        acknowledged.push(rig.daemon.add(&args));
        let dropped = rig.cut_power();
        points.push((delay, reported.len(), dropped));

        if let Some(damage) = rig.damage() {
            losses.damage.push(damage);
            break;
        }
        let store = rig.store();
        for &crawl in &acknowledged {
            if store.crawls().get(crawl).unwrap().is_none() && !losses.crawls.contains(&crawl) {
                losses.crawls.push(crawl);
            }
        }
        let mut now_succeeded = Reported::new();
        for &crawl in &acknowledged {
            for result in store.results().of_crawl(crawl).unwrap() {
                if result.status == "succeeded" {
                    let key = (result.snapshot_id.unwrap_or(0), result.hook.clone());
                    now_succeeded.insert(key, result.ended_at.unwrap());
                }
            }
        }
        drop(store);
        for (key, ended) in &reported {
            if now_succeeded.get(key) != Some(ended) && !losses.results.contains(key) {
                losses.results.push(key.clone());
            }
        }
        if stop_at_loss && !losses.none() {
            break;
        }
    }
    println!("cuts (ms after the first add, results reported then, bytes dropped): {points:?}");
    println!("lost: {losses:?}");
    (acknowledged, reported, losses)
}

#[test]
fn a_power_cut_loses_nothing_abxd_answered_for_and_runs_nothing_twice() {
    if skip_without_fuse() {
        return;
    }
    let started = Instant::now();
    let mut rig = Rig::new(true);
    let (acknowledged, reported, losses) = torture(&mut rig, 30, false);
    assert!(
        losses.none(),
        "the power cuts lost what abxd had answered for: {losses:?}"
    );
    assert!(
        rig.mount.dropped() > 0,
        "the cuts dropped nothing: the test cut no power"
    );
    assert!(!reported.is_empty(), "no result was reported before a cut");

    // Then every crawl ends, each hook succeeded, and none ran again once reported finished.
    rig.daemon.launch();
    for &crawl in &acknowledged {
        wait_until("every acknowledged crawl to be sealed", CRAWL_WAIT, || {
            let crawl = rig.store().crawls().get(crawl).unwrap()?;
            (crawl.status == "sealed").then_some(())
        });
    }
    let store = rig.store();
    for &crawl in &acknowledged {
        for result in store.results().of_crawl(crawl).unwrap() {
            assert_eq!(result.status, "succeeded", "{result:?}");
        }
    }
    for (event, snapshot, hook, at) in rig.ledger() {
        if let Some(&ended) = reported.get(&(snapshot, hook.clone())) {
            assert!(
                !(event == "start" && at > ended),
                "{hook} of snapshot {snapshot} ran again at {at}, after it was reported \
                 finished at {ended}"
            );
        }
    }
    drop(store);
    wait_until("the last workers to end", WAIT, || {
        let live = rig
            .daemon
            .live_rows(abxd::domain::Kind::Hook)
            .into_iter()
            .chain(rig.daemon.live_rows(abxd::domain::Kind::CrawlWorker))
            .count();
        (live == 0).then_some(())
    });
    rig.daemon.assert_nothing_survives();
    println!("{} cuts in {:?}", 30, started.elapsed());
}

#[test]
fn without_synchronous_commit_a_power_cut_loses_acknowledged_work() {
    if skip_without_fuse() {
        return;
    }
    let mut rig = Rig::new(false);
    let (_, _, losses) = torture(&mut rig, 10, true);
    assert!(
        !losses.crawls.is_empty() || !losses.results.is_empty(),
        "ten power cuts lost nothing with store.synchronous_commit = false: the loop cannot \
         tell durable commits from cheap ones"
    );
}
