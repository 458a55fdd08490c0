//! Admission along the operator's path: new work starts only while the host has the memory for it
//! (`[limits] memory_floor`) and, for a crawl or a snapshot that launches its own browser, while
//! fewer than `max_browsers` browsers are alive; `abxctl status` says what waits for what, and work that
//! waited starts once there is room (here: a reload that lowers the floor).
//!
//! The host's memory cannot be made scarce on purpose: the floor is set above what any host has,
//! which is the same decision a full host makes; or the daemon runs in a memory cgroup of its
//! own whose limit is the scarcity (the v2 memory controller on a unified host, the v1 memory
//! hierarchy on a hybrid one, as this project's CI machines are).

mod common;

use abxd::domain::Kind;
use common::{fixtures, plugins_config, unique_tag, wait_until, TestDaemon, WAIT};
use std::path::{Path, PathBuf};

#[test]
fn below_the_memory_floor_no_crawl_starts_status_says_why_and_room_lets_it_run() {
    let config = format!(
        "{}[limits]\nmemory_floor = \"1000T\"\n",
        plugins_config(&[&fixtures().join("plugins")])
    );
    let daemon = TestDaemon::start_with(&config);
    let crawl = daemon.add(&["--plugins", "ok", "http://127.0.0.1:9/"]);
    let status = status_saying(&daemon, "wait for memory");
    assert!(
        status.contains("MemAvailable") && status.contains("under memory_floor 1048576000 MiB"),
        "{status}"
    );
    assert!(
        daemon.log().contains("admission waits for memory"),
        "{}",
        daemon.log()
    );
    // Nothing started: the crawl is queued, no worker ran.
    let store = daemon.store();
    assert_eq!(store.crawls().get(crawl).unwrap().unwrap().status, "queued");
    let rows = store.processes().list(&Default::default()).unwrap();
    assert!(
        !rows.iter().any(|r| r.kind == Kind::CrawlWorker),
        "{rows:#?}"
    );
    // Room (the operator lowers the floor and reloads): the crawl runs.
    daemon.write_config(&format!(
        "{}[limits]\nmemory_floor = 0\n",
        plugins_config(&[&fixtures().join("plugins")])
    ));
    daemon.signal(nix::sys::signal::Signal::SIGHUP);
    daemon.wait_sealed(crawl, WAIT);
    assert!(daemon.ctl_ok(&["status"]).contains("admit:    open"));
}

#[test]
fn snapshots_that_launch_their_own_browser_never_exceed_max_browsers() {
    let config = format!(
        "{}[limits]\nmax_browsers = 1\nmax_snapshot_workers = 3\n",
        plugins_config(&[&fixtures().join("admission")])
    );
    let daemon = TestDaemon::start_with(&config);
    let crawl = daemon.add(&[
        "http://127.0.0.1:9/a",
        "http://127.0.0.1:9/b",
        "http://127.0.0.1:9/c",
    ]);
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(120));
    let rows = browsers_used(&daemon, &[crawl]);
    // Each snapshot's browser was found as a row: the cap had something to count.
    assert_eq!(browsers(&rows).len(), 3, "{rows:#?}");
    // One snapshot (and so one browser) at a time, though three workers were allowed.
    assert_one_at_a_time(&rows, Kind::SnapshotWorker, 3);
}

/// The process rows of `daemon`, once every browser-using hook of `crawls` is checked to have
/// succeeded.
fn browsers_used(daemon: &TestDaemon, crawls: &[i64]) -> Vec<abxd::store::ProcessRow> {
    let store = daemon.store();
    for &crawl in crawls {
        let results = store.results().of_crawl(crawl).unwrap();
        assert!(
            results
                .iter()
                .filter(|r| r.hook.contains("chrome_use"))
                .all(|r| r.status == "succeeded"),
            "{results:?}"
        );
    }
    store.processes().list(&Default::default()).unwrap()
}

/// The rows of the browsers (processes named chromium) found.
fn browsers(rows: &[abxd::store::ProcessRow]) -> Vec<&abxd::store::ProcessRow> {
    (rows.iter())
        .filter(|r| r.kind == Kind::Child && r.argv.first().is_some_and(|a| a == "chromium"))
        .collect()
}

/// That the `count` workers of `kind` ran one after the other, never two at once.
fn assert_one_at_a_time(rows: &[abxd::store::ProcessRow], kind: Kind, count: usize) {
    let mut spans = spans_of(rows, kind);
    spans.sort();
    assert_eq!(spans.len(), count, "{spans:?}");
    for pair in spans.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "{kind} rows overlapped: {spans:?}");
    }
}

#[test]
fn crawls_that_launch_a_browser_each_wait_for_max_browsers() {
    let config = format!(
        "{}[limits]\nmax_browsers = 1\nmax_crawl_workers = 2\nmax_snapshot_workers = 2\n",
        plugins_config(&[&fixtures().join("admission_crawl")])
    );
    let daemon = TestDaemon::start_with(&config);
    let first = daemon.add(&["http://127.0.0.1:9/a", "http://127.0.0.1:9/b"]);
    let second = daemon.add(&["http://127.0.0.1:9/c"]);
    // While the first crawl's browser lives, the second crawl waits, and status says so.
    let status = status_saying(&daemon, "crawls wait for browsers: 1 alive, max_browsers 1");
    assert!(status.contains("browsers (cap 1)"), "{status}");
    daemon.wait_sealed(first, std::time::Duration::from_secs(120));
    daemon.wait_sealed(second, std::time::Duration::from_secs(120));
    let rows = browsers_used(&daemon, &[first, second]);
    // One browser per crawl, found as a row (the cap had something to count), none per snapshot.
    let browsers = browsers(&rows);
    assert_eq!(browsers.len(), 2, "{rows:#?}");
    assert!(
        browsers.iter().all(|b| b.snapshot_id.is_none()),
        "{browsers:#?}"
    );
    // One crawl at a time, though two crawl workers were allowed.
    assert_one_at_a_time(&rows, Kind::CrawlWorker, 2);
    // The first crawl's two snapshots shared its browser: neither waited for the cap.
    let snapshot_workers = (rows.iter())
        .filter(|r| r.kind == Kind::SnapshotWorker && r.crawl_id == Some(first))
        .count();
    assert_eq!(snapshot_workers, 2, "{rows:#?}");
}

#[test]
fn snapshots_that_would_outgrow_the_memory_limit_start_fewer_and_none_is_oom_killed() {
    let Some(budget) = MemoryBudget::make(2 << 30) else {
        return;
    };
    // Three snapshots at once would take 3 × 700 MiB: more than the 2 GiB the cgroup has.
    let config = format!(
        "{}[limits]\nmemory_floor = \"256M\"\nmax_snapshot_workers = 3\n",
        plugins_config(&[&fixtures().join("admission_memory")])
    );
    let mut daemon = TestDaemon::prepare(&config);
    daemon.launch_in_memory_cgroup(&budget.dir);
    let crawl = daemon.add(&[
        "http://127.0.0.1:9/a",
        "http://127.0.0.1:9/b",
        "http://127.0.0.1:9/c",
        "http://127.0.0.1:9/d",
        "http://127.0.0.1:9/e",
    ]);
    // While the first snapshot shows what one costs, a second is taken to cost the prior (the
    // hooks' MEMORY_LIMIT, abx-plugins' 2 GiB), which the budget cannot cover: the others wait,
    // and status says so.
    let status = status_saying(&daemon, "snapshots wait for memory");
    assert!(
        status.contains(&format!("crawl {crawl}'s snapshots wait for memory: "))
            && status.contains("+ 2048 MiB a snapshot costs (until one is measured)"),
        "{status}"
    );
    // Once one was seen to its end, its cost is known: two fit, a third waits for them.
    let status = status_saying(&daemon, "a snapshot costs (measured)");
    assert!(status.contains("the 2 running may still take"), "{status}");
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(120));
    let store = daemon.store();
    let results = store.results().of_crawl(crawl).unwrap();
    assert!(
        results.len() == 5 && results.iter().all(|r| r.status == "succeeded"),
        "{results:#?}\n{}",
        daemon.log()
    );
    assert_eq!(
        budget.oom_kills(),
        0,
        "the kernel OOM-killed in {:?}",
        budget.dir
    );
    // Two at once, where three were allowed: the measured cost of a third did not fit.
    let rows = store.processes().list(&Default::default()).unwrap();
    let spans = spans_of(&rows, Kind::Hook);
    assert_eq!(most_at_once(&spans), 2, "{spans:?}\n{}", daemon.log());
}

/// `abxctl status` once it says `what` (within [`WAIT`]).
fn status_saying(daemon: &TestDaemon, what: &str) -> String {
    wait_until(&format!("status to say {what:?}"), WAIT, || {
        let status = daemon.ctl_ok(&["status"]);
        status.contains(what).then_some(status)
    })
}

/// When each process of `kind` ran: (start, end), in ms.
fn spans_of(rows: &[abxd::store::ProcessRow], kind: Kind) -> Vec<(i64, i64)> {
    (rows.iter())
        .filter(|r| r.kind == kind)
        .map(|r| (r.started_at.unwrap(), r.ended_at.unwrap()))
        .collect()
}

/// The most of `spans` (start, end) that overlapped at one moment.
fn most_at_once(spans: &[(i64, i64)]) -> usize {
    let mut edges: Vec<(i64, i32)> = (spans.iter())
        .flat_map(|&(start, end)| [(start, 1), (end, -1)])
        .collect();
    // (An end before a start at the same millisecond: one that ended as another began.)
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    most as usize
}

/// A memory cgroup of this test's, limited to a budget, removed when dropped (after the daemon
/// in it, which is dropped first: declared after it).
struct MemoryBudget {
    dir: PathBuf,
}

impl MemoryBudget {
    /// One limited to `bytes`: v2 with the memory controller where the host has it, else in the
    /// v1 memory hierarchy. `None` where neither can be had (not in CI, which has one: it fails
    /// there), saying so.
    fn make(bytes: u64) -> Option<MemoryBudget> {
        let name = format!("abxd-{}", unique_tag());
        let v2 = Path::new("/sys/fs/cgroup");
        let v2_memory = std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|controllers| controllers.split_whitespace().any(|c| c == "memory"));
        let (dir, limit) = if v2_memory {
            (v2.join(&name), "memory.max")
        } else {
            (
                Path::new("/sys/fs/cgroup/memory").join(&name),
                "memory.limit_in_bytes",
            )
        };
        let made = std::fs::create_dir(&dir)
            .and_then(|()| std::fs::write(dir.join(limit), bytes.to_string()));
        match made {
            Ok(()) => Some(MemoryBudget { dir }),
            Err(err) => {
                let _ = std::fs::remove_dir(&dir);
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI machines have a memory controller (v2 or v1): {}: {err}",
                    dir.display()
                );
                eprintln!("no memory cgroup can be made here ({err}): the case does not run");
                None
            }
        }
    }

    /// The OOM kills the kernel made in it.
    fn oom_kills(&self) -> u64 {
        ["memory.events", "memory.oom_control"]
            .iter()
            .filter_map(|file| std::fs::read_to_string(self.dir.join(file)).ok())
            .flat_map(|text| {
                (text.lines())
                    .filter_map(|line| line.strip_prefix("oom_kill "))
                    .map(|n| n.trim().parse::<u64>().unwrap())
                    .collect::<Vec<_>>()
            })
            .sum()
    }
}

impl Drop for MemoryBudget {
    fn drop(&mut self) {
        // (Empty once the daemon's tree is gone: the daemon was dropped first.)
        let _ = wait_until_removed(&self.dir);
    }
}

fn wait_until_removed(dir: &Path) -> std::io::Result<()> {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        match std::fs::remove_dir(dir) {
            Err(err) if std::time::Instant::now() < deadline && err.raw_os_error() == Some(16) => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

#[test]
fn a_first_snapshot_that_runs_long_holds_the_others_back_for_30_seconds_at_most() {
    // Each snapshot takes 40 s: waiting for the first to end would keep the two apart. (A prior
    // no host covers, so that the second waits for the first's measured cost.)
    let config = format!(
        "{}[plugins.sleepy]\nenv = {{ SLEEPY_SECONDS = \"40\" }}\n[limits]\nmemory_floor = \"1M\"\n\
         snapshot_memory = \"1000T\"\n",
        plugins_config(&[&fixtures().join("plugins")])
    );
    let daemon = TestDaemon::start_with(&config);
    let crawl = daemon.add(&[
        "--plugins",
        "sleepy",
        "http://127.0.0.1:9/a",
        "http://127.0.0.1:9/b",
    ]);
    status_saying(&daemon, "a snapshot costs (until one is measured)");
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(120));
    let rows = daemon
        .store()
        .processes()
        .list(&Default::default())
        .unwrap();
    let spans = spans_of(&rows, Kind::Hook);
    // The second started while the first still ran, about 30 s after it.
    assert_eq!(most_at_once(&spans), 2, "{spans:?}");
}

/// With memory to spare, a crawl's snapshots start side by side from the first: before one was
/// measured each is taken to cost the prior (2 GiB, abx-plugins' `MEMORY_LIMIT`), and 8 of them
/// beside the floor fit in what this machine has free. Each snapshot's hook waits (up to 60 s)
/// until all 8 run it at once, and fails if they do not: started one at a time, none could.
#[test]
fn with_memory_to_spare_a_crawls_eight_snapshots_start_at_once() {
    const NEEDED: u64 = (256 << 20) + 8 * (2 << 30);
    let available =
        abxd::admission::memory(&abxd::admission::OwnCgroups::find()).map_or(0, |m| m.available);
    if available < NEEDED + (1 << 30) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI machines have 24 GiB: {} MiB available",
            available >> 20
        );
        eprintln!(
            "{} MiB available, under the 8 snapshots' prior: the case does not run",
            available >> 20
        );
        return;
    }
    let meet = tempfile::tempdir().unwrap();
    let config = format!(
        "{}[plugins.meet]\nenv = {{ MEET_DIR = \"{}\", MEET_COUNT = \"8\" }}\n\
         [limits]\nmemory_floor = \"256M\"\nmax_snapshot_workers = 8\n",
        plugins_config(&[&fixtures().join("admission_side_by_side")]),
        meet.path().display()
    );
    let daemon = TestDaemon::start_with(&config);
    let seeds: Vec<String> = (0..8).map(|n| format!("http://127.0.0.1:9/{n}")).collect();
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let crawl = daemon.add(&seeds);
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(120));
    let store = daemon.store();
    let results = store.results().of_crawl(crawl).unwrap();
    // (Each hook ran until the eighth said it was there: all eight ran at that moment. The rows'
    // start times, read from procfs in clock ticks, are too coarse to show it.)
    assert!(
        results.len() == 8 && results.iter().all(|r| r.status == "succeeded"),
        "{results:#?}\n{}",
        daemon.log()
    );
}
