//! Benchmark 14: what politeness costs the claim (issue 59). Snapshots are claimed (and sealed,
//! giving their site's slot back) from a crawl of `library_links` queued spread over one host key
//! per 20 — and, as the baseline, from the same number queued on one host key — with limits
//! that never hold a claim back, so the figure is the cost of choosing, not of waiting: the
//! claim reads lanes by index, so its cost must not grow with the host keys.

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
            let claim = (store.queue().hosts())
                .claim_snapshot(Some(crawl), lease, None, &lifted)
                .unwrap()
                .expect("a snapshot is due");
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
