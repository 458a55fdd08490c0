//! Admission along the operator's path: new work starts only while the host has the memory for it
//! (`[limits] memory_floor`) and, for a crawl or a snapshot that launches its own browser, while
//! fewer than `max_browsers` browsers are alive; `abxctl status` says what waits for what, and work that
//! waited starts once there is room (here: a reload that lowers the floor).
//!
//! This machine's memory cannot be made scarce on purpose: the floor is set above what any host
//! has, which is the same decision a full host makes.

mod common;

use abxd::domain::Kind;
use common::{fixtures, plugins_config, wait_until, TestDaemon, WAIT};

#[test]
fn below_the_memory_floor_no_crawl_starts_status_says_why_and_room_lets_it_run() {
    let config = format!(
        "{}[limits]\nmemory_floor = \"1000T\"\n",
        plugins_config(&[&fixtures().join("plugins")])
    );
    let daemon = TestDaemon::start_with(&config);
    let crawl = daemon.add(&["--plugins", "ok", "http://127.0.0.1:9/"]);
    let status = wait_until("status to say the crawl waits", WAIT, || {
        let status = daemon.ctl_ok(&["status"]);
        status.contains("wait for memory").then_some(status)
    });
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
    assert_eq!(store.crawl(crawl).unwrap().unwrap().status, "queued");
    let rows = store.processes(&Default::default()).unwrap();
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
        let results = store.results(crawl).unwrap();
        assert!(
            results
                .iter()
                .filter(|r| r.hook.contains("chrome_use"))
                .all(|r| r.status == "succeeded"),
            "{results:?}"
        );
    }
    store.processes(&Default::default()).unwrap()
}

/// The rows of the browsers (processes named chromium) found.
fn browsers(rows: &[abxd::store::ProcessRow]) -> Vec<&abxd::store::ProcessRow> {
    (rows.iter())
        .filter(|r| r.kind == Kind::Child && r.argv.first().is_some_and(|a| a == "chromium"))
        .collect()
}

/// That the `count` workers of `kind` ran one after the other, never two at once.
fn assert_one_at_a_time(rows: &[abxd::store::ProcessRow], kind: Kind, count: usize) {
    let mut spans: Vec<(i64, i64)> = (rows.iter())
        .filter(|r| r.kind == kind)
        .map(|r| (r.started_at.unwrap(), r.ended_at.unwrap()))
        .collect();
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
    let status = wait_until("status to say a crawl waits for browsers", WAIT, || {
        let status = daemon.ctl_ok(&["status"]);
        status
            .contains("crawls wait for browsers: 1 alive, max_browsers 1")
            .then_some(status)
    });
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
