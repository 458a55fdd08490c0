//! Benchmark 14: what politeness costs the claim (issue 59). Snapshots are claimed (and sealed,
//! giving their site's slot back) from a crawl of `library_links` queued spread over one host key
//! per 20 — and, as the baseline, from the same number queued on one host key — with limits
//! that never hold a claim back, so the figure is the cost of choosing, not of waiting: the
//! claim reads lanes by index, so its cost must not grow with the host keys. Then what loopback
//! sites saw of two crawls under the default limits, and a one-URL crawl's wait beside a big one.

use crate::common::sites::{closest_starts, most_at_once, Site};
use crate::common::TestDaemon;
use crate::harness::*;
use abxd::config::Politeness;
use abxd::domain::{CrawlRules, CrawlSpec};
use abxd::store::Store;
use std::time::{Duration, Instant};

/// (14) Claims per second with `library_links` queued over `library_links / 20` host keys,
/// beside the same queued on one host key.
pub(crate) fn politeness_cost(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let queued = s.library_links;
    let claims = s.library_window;
    let lifted = Politeness {
        max_per_host: u32::MAX,
        delay: Duration::ZERO,
        ..Politeness::default()
    };
    let rate = |hosts: usize| -> f64 {
        let store = Store::open(&dir.path().join(format!("politeness-{hosts}.sqlite3"))).unwrap();
        let crawl = store
            .crawls()
            .add(&CrawlSpec::of_urls(vec!["http://seed/".into()], 0), None)
            .unwrap();
        let urls: Vec<String> = (0..queued)
            .map(|n| format!("http://site{}.example/{n}", n % hosts))
            .collect();
        for chunk in urls.chunks(10_000) {
            (store.crawls())
                .add_snapshots_within(crawl, chunk, 0, None, &CrawlRules::default())
                .unwrap();
        }
        let lease = Duration::from_secs(60);
        let started = Instant::now();
        for _ in 0..claims {
            // (The host's budget at its default: its deal is read at every claim.)
            let budget = abxd::store::Budget::of(&Default::default());
            let claimed = (store.queue().hosts())
                .claim_snapshot(Some(crawl), lease, None, (&lifted, budget))
                .unwrap();
            let abxd::store::SnapshotClaim::Claimed(claim) = claimed else {
                panic!("no snapshot claimed: {claimed:?}");
            };
            assert!(store.queue().seal(claim).unwrap());
        }
        claims as f64 / started.elapsed().as_secs_f64()
    };
    let one = rate(1);
    let many = rate((queued / 20).max(1));
    figures.add(
        &format!(
            "14 snapshots claimed per second, {queued} queued over {} sites",
            (queued / 20).max(1)
        ),
        many,
        Some(("over 1 site (per s)", one)),
    );
}

/// (14) What the sites saw of two crawls under the default politeness (2 at once, 1 s apart),
/// from their own logs; and how long a one-URL crawl waits for its first start beside a crawl
/// of `crawl_snapshots`, against an idle daemon's wait.
pub(crate) fn politeness_seen(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let bundled = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins");
    let config = format!(
        "[paths]\nplugins_dirs = [{:?}]\n[limits]\nmax_snapshot_workers = 8\n\
         [politeness]\n[crawl]\negress = \"unrestricted\"\n",
        bundled.display().to_string()
    );
    let sites: Vec<Site> = ["127.0.0.11", "127.0.0.12", "127.0.0.13"]
        .iter()
        .map(|ip| Site::start(ip, Duration::from_millis(300), 0, 0))
        .collect();
    let daemon = quiet_daemon(dir.path(), &config);
    let pages = if s.hooks < 100 { 3 } else { 10 };
    let crawls: Vec<i64> = ["a", "b"]
        .iter()
        .map(|crawl| {
            let mut args: Vec<String> = (sites.iter())
                .flat_map(|site| (0..pages).map(move |n| site.url(&format!("{crawl}{n}"))))
                .collect();
            args.extend(["--plugins".into(), "headers".into()]);
            daemon.add(&args.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .collect();
    for crawl in crawls {
        daemon.wait_sealed(crawl, Duration::from_secs(600));
    }
    let at_once = sites
        .iter()
        .map(|s| most_at_once(&s.visits()))
        .max()
        .unwrap();
    let closest = (sites.iter())
        .filter_map(|s| closest_starts(&s.visits()))
        .min()
        .unwrap();
    figures.add(
        "14 most requests one site had open at once (max_per_host 2)",
        at_once as f64,
        None,
    );
    figures.add(
        "14 closest two starts on one site, ms (delay 1000 ms)",
        closest as f64,
        None,
    );
    drop(daemon);

    let slow = dir.path().join("slow-plugins");
    write_plugin(
        &slow,
        "slow",
        &[(
            "on_Snapshot__10_slow.sh".into(),
            "#!/bin/sh\nsleep 5\necho '{\"type\": \"ArchiveResult\", \"status\": \"succeeded\"}'\n",
        )],
    );
    let config = format!(
        "[paths]\nplugins_dirs = [{:?}]\n",
        slow.display().to_string()
    );
    let first_start = |daemon: &TestDaemon| -> f64 {
        let started = Instant::now();
        let crawl = daemon.add(&["http://small.example/", "--plugins", "slow"]);
        loop {
            let snapshots = daemon.store().crawls().snapshots(crawl).unwrap();
            if snapshots.iter().any(|s| s.started_at.is_some()) {
                return started.elapsed().as_secs_f64() * 1000.0;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let idle = {
        let daemon = quiet_daemon(dir.path(), &config);
        first_start(&daemon)
    };
    let busy = {
        let daemon = quiet_daemon(dir.path(), &config);
        let mut args: Vec<String> = (0..s.crawl_snapshots)
            .map(|n| format!("http://big.example/{n}"))
            .collect();
        args.extend(["--plugins".into(), "slow".into()]);
        let big = daemon.add(&args.iter().map(String::as_str).collect::<Vec<_>>());
        while daemon
            .store()
            .crawls()
            .snapshots(big)
            .unwrap()
            .iter()
            .filter(|s| s.started_at.is_some())
            .count()
            < 2
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        first_start(&daemon)
    };
    figures.add(
        &format!(
            "14 a one-URL crawl's first start beside a crawl of {} (ms)",
            s.crawl_snapshots
        ),
        busy,
        Some(("on an idle daemon (ms)", idle)),
    );
}
