//! Admission along the operator's path: new work starts only while the host has the memory for it
//! (`[limits] memory_floor`) and, for a snapshot that launches its own browser, while fewer than
//! `max_browsers` browsers are alive; `abxctl status` says what waits for what, and work that
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
    let store = daemon.store();
    let results = store.results(crawl).unwrap();
    assert!(
        results
            .iter()
            .filter(|r| r.hook.contains("chrome_use"))
            .all(|r| r.status == "succeeded"),
        "{results:?}"
    );
    let rows = store.processes(&Default::default()).unwrap();
    // Each snapshot's browser was found as a row: the cap had something to count.
    let browsers: Vec<_> = (rows.iter())
        .filter(|r| r.kind == Kind::Child && r.argv.first().is_some_and(|a| a == "chromium"))
        .collect();
    assert_eq!(browsers.len(), 3, "{rows:#?}");
    // One snapshot (and so one browser) at a time, though three workers were allowed.
    let mut spans: Vec<(i64, i64)> = (rows.iter())
        .filter(|r| r.kind == Kind::SnapshotWorker)
        .map(|r| (r.started_at.unwrap(), r.ended_at.unwrap()))
        .collect();
    spans.sort();
    assert_eq!(spans.len(), 3, "{spans:?}");
    for pair in spans.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "snapshots overlapped: {spans:?}");
    }
}
