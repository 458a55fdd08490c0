//! A data dir that runs short of space mid-crawl (a small tmpfs of the test's own): no new
//! snapshot starts while less than `min_free_space` is free, `status`, `show` and one ERROR line
//! of the daemon's say why, nothing is lost, and once space is freed the crawl goes on by itself
//! to its end.

mod common;

use common::{fixtures, plugins_config, wait_until, TestDaemon, WAIT};
use std::time::Duration;

const CRAWL_WAIT: Duration = Duration::from_secs(120);

/// A tmpfs of `size` mounted at `at`, unmounted when dropped.
struct SmallDisk {
    at: std::path::PathBuf,
}

impl SmallDisk {
    fn mount(at: &std::path::Path, size: &str) -> SmallDisk {
        std::fs::create_dir_all(at).unwrap();
        nix::mount::mount(
            Some("tmpfs"),
            at,
            Some("tmpfs"),
            nix::mount::MsFlags::empty(),
            Some(format!("size={size},mode=0755").as_str()),
        )
        .expect("mount a tmpfs");
        SmallDisk {
            at: at.to_path_buf(),
        }
    }

    fn free(&self) -> u64 {
        let stat = nix::sys::statvfs::statvfs(&self.at).unwrap();
        stat.blocks_available() * stat.fragment_size()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.at, nix::mount::MntFlags::MNT_DETACH);
    }
}

/// Whether this machine cannot mount a tmpfs for the test (it can in CI: the test fails there).
fn skip_unless_root() -> bool {
    if nix::unistd::geteuid().is_root() {
        return false;
    }
    assert!(std::env::var_os("CI").is_none(), "CI runs as root");
    eprintln!("SKIPPED: mounting a tmpfs needs root");
    true
}

/// A daemon whose data dir is a 64 MiB tmpfs, `min_free_space` 16 MiB, one snapshot at a time.
fn daemon_on_a_small_disk() -> (TestDaemon, SmallDisk) {
    let daemon = TestDaemon::prepare(&format!(
        "{}[limits]\nmin_free_space = \"16M\"\nmax_snapshot_workers = 1\nmemory_floor = 0\n",
        plugins_config(&[&fixtures().join("disk")])
    ));
    let disk = SmallDisk::mount(&daemon.data_dir(), "64M");
    (daemon, disk)
}

/// The crawl's snapshots that started (sealed or running).
fn started(daemon: &TestDaemon, crawl: i64) -> usize {
    let snapshots = daemon.store().crawls().snapshots(crawl).unwrap();
    snapshots.iter().filter(|s| s.status != "queued").count()
}

#[test]
fn a_data_dir_short_of_space_holds_new_snapshots_back_until_space_is_freed() {
    if skip_unless_root() {
        return;
    }
    let (mut daemon, disk) = daemon_on_a_small_disk();
    daemon.launch();
    let urls: Vec<String> = (0..8).map(|i| format!("http://127.0.0.1:9/{i}")).collect();
    let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
    args.extend(["--plugins", "writer"]);
    let crawl = daemon.add(&args);
    wait_until("a first snapshot to be sealed", WAIT, || {
        let snapshots = daemon.store().crawls().snapshots(crawl).unwrap();
        snapshots.iter().any(|s| s.status == "sealed").then_some(())
    });

    // Fill the disk to 8 MiB free: under min_free_space, with room for the database to write.
    let ballast = daemon.data_dir().join("ballast");
    let size = disk.free().saturating_sub(8 << 20);
    std::fs::write(&ballast, vec![0u8; size as usize]).unwrap();

    // The daemon says it once in its log, and status says why no crawl or snapshot starts.
    wait_until("the daemon to see the disk short of space", WAIT, || {
        daemon.log().contains("disk_full").then_some(())
    });
    let status = daemon.ctl_ok(&["status"]);
    assert!(
        status.contains("wait for disk_full") && status.contains("under min_free_space 16 MiB"),
        "{status}"
    );
    // The crawl's worker holds its next snapshot back, and `show` says why.
    wait_until(
        "the crawl's worker to hold its snapshots back",
        WAIT,
        || {
            let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
            shown
                .contains("waits: new snapshots wait for disk_full")
                .then_some(())
        },
    );
    let held = started(&daemon, crawl);
    assert!(held < urls.len(), "every snapshot started: {held}");
    wait_until("the running snapshot to end", WAIT, || {
        let snapshots = daemon.store().crawls().snapshots(crawl).unwrap();
        (!snapshots.iter().any(|s| s.status == "started")).then_some(())
    });
    assert_eq!(
        started(&daemon, crawl),
        held,
        "a snapshot started while space was short"
    );
    let error_lines = |log: &str| {
        (log.lines())
            .filter(|l| l.contains("ERROR") && l.contains("disk_full"))
            .count()
    };
    assert_eq!(error_lines(&daemon.log()), 1, "{}", daemon.log());

    // Space is freed: the crawl goes on by itself, to its end, nothing lost.
    std::fs::remove_file(&ballast).unwrap();
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    let store = daemon.store();
    assert_eq!(store.crawls().snapshots(crawl).unwrap().len(), urls.len());
    for result in store.results().of_crawl(crawl).unwrap() {
        assert_eq!(result.status, "succeeded", "{result:?}");
    }
    wait_until("the daemon to see space back", WAIT, || {
        daemon.log().contains("disk space is back").then_some(())
    });
    assert_eq!(
        error_lines(&daemon.log()),
        1,
        "one ERROR line for the whole time space was short"
    );
    drop(store);
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    daemon.wait_exit();
}

/// Writes a file at `path` until the disk under it has no space left.
fn fill(path: &std::path::Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 64 << 10];
    while file.write_all(&chunk).is_ok() {}
    // (The last bytes a partial write left are what fit.)
    let _ = file.flush();
}

#[test]
fn a_hook_that_found_the_disk_full_is_recorded_failed_saying_so_and_the_daemon_answers() {
    if skip_unless_root() {
        return;
    }
    // The database beside the data dir, on a disk with room: the hook's end is recorded while
    // the data dir is full.
    let daemon = TestDaemon::prepare("");
    let gate = daemon.path("gate");
    daemon.write_config(&format!(
        "{}database = {:?}\n[limits]\nmin_free_space = \"16M\"\nmemory_floor = 0\n\
         [plugins.waiter]\nenv = {{ GATE = {:?} }}\n",
        plugins_config(&[&fixtures().join("disk")]),
        daemon.path("abxd.sqlite3").display().to_string(),
        gate.display().to_string()
    ));
    let _disk = SmallDisk::mount(&daemon.data_dir(), "64M");
    let mut daemon = daemon;
    daemon.launch();
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "waiter"]);
    let started = gate.with_extension("started");
    wait_until("the hook to start", WAIT, || started.exists().then_some(()));

    fill(&daemon.data_dir().join("ballast"));
    std::fs::write(gate.with_extension("go"), "").unwrap();
    let ended = gate.with_extension("ended");
    wait_until("the hook to end", WAIT, || ended.exists().then_some(()));
    let store = abxd::store::Store::open_read_only(&daemon.path("abxd.sqlite3")).unwrap();
    let result = wait_until("its result to be recorded", WAIT, || {
        let results = store.results().of_crawl(crawl).unwrap();
        results
            .into_iter()
            .find(|r| r.status != "queued" && r.status != "started")
    });
    assert_eq!(result.status, "failed", "{result:?}");
    assert!(
        (result.output.as_deref()).is_some_and(|o| o.starts_with("no space left on device")),
        "{result:?}"
    );
    // The daemon answers all along, and says why nothing new starts.
    let status = daemon.ctl_ok(&["status"]);
    assert!(status.contains("disk_full"), "{status}");
    std::fs::remove_file(daemon.data_dir().join("ballast")).unwrap();
    wait_until("the crawl to be sealed", CRAWL_WAIT, || {
        let crawl = store.crawls().get(crawl).unwrap()?;
        (crawl.status == "sealed").then_some(())
    });
}

#[test]
fn a_database_write_that_found_the_disk_full_is_kept_to_try_again_and_then_lands() {
    if skip_unless_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = SmallDisk::mount(&dir.path().join("disk"), "4M");
    let path = dir.path().join("disk/abxd.sqlite3");
    let store = abxd::store::Store::open(&path).unwrap();
    let spec = abxd::domain::CrawlSpec::of_urls(vec!["http://a.test/".into()], 0);
    let before = store.crawls().add(&spec, None).unwrap();
    fill(&dir.path().join("disk/ballast"));
    // A large write finds no room: refused whole, said as a full disk, to be tried again.
    let many: Vec<String> = (0..20_000)
        .map(|i| format!("http://a.test/{i}/{}", "x".repeat(100)))
        .collect();
    let big = abxd::domain::CrawlSpec::of_urls(many, 0);
    let err = store.crawls().add(&big, None).unwrap_err();
    assert!(err.is_full() && err.is_busy(), "{err}");
    assert!(
        err.to_string().contains("disk under the database is full"),
        "{err}"
    );
    assert_eq!(disk.free(), 0);
    // Space freed: the same write lands, and nothing written before was lost.
    std::fs::remove_file(dir.path().join("disk/ballast")).unwrap();
    let after = store.crawls().add(&big, None).unwrap();
    assert!(after > before);
    let check = abxd::store::check_file(&path).unwrap();
    assert!(check.is_empty(), "{check:?}");
    assert!(store.crawls().get(before).unwrap().is_some());
}
