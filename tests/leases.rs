//! Claims on the work queue from several processes at once: each item goes to exactly one.

mod common;

use abxd::domain::Queue;
use abxd::store::Store;
use std::process::{Command, Stdio};
use std::time::Duration;

const CLAIMER_DB: &str = "ABXD_TEST_CLAIMER_DB";
const ITEMS: usize = 1000;

/// Not a test on its own: the body of each claimer process, run by
/// `two_processes_claiming_one_queue_claim_every_item_exactly_once` through this test binary.
#[test]
#[ignore = "helper process, started by another test"]
fn claimer_process() {
    let path = std::env::var(CLAIMER_DB).expect("started by the claiming test");
    let store = Store::open(std::path::Path::new(&path)).unwrap();
    // Start together: both claimers are up before either claims.
    let go = format!("{path}.go");
    common::wait_until("the go signal", common::WAIT, || {
        std::path::Path::new(&go).exists().then_some(())
    });
    while let Some(claim) = store
        .queue()
        .claim(Queue::Crawls, None, Duration::from_secs(3600), None)
        .unwrap()
    {
        println!("claimed {}", claim.id);
    }
}

#[test]
fn two_processes_claiming_one_queue_claim_every_item_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abxd.sqlite3");
    let store = Store::open(&path).unwrap();
    for i in 0..ITEMS {
        store
            .crawls()
            .add(
                &abxd::domain::CrawlSpec::of_urls(vec![format!("http://example.invalid/{i}")], 0),
                None,
            )
            .unwrap();
    }
    drop(store);

    let tag = common::unique_tag();
    let claimers: Vec<_> = (0..2)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--ignored", "--exact", "claimer_process", "--nocapture"])
                .env(CLAIMER_DB, &path)
                .env(common::TAG_ENV, &tag)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::fs::write(format!("{}.go", path.display()), "").unwrap();
    let mut claimed: Vec<i64> = Vec::new();
    let mut per_claimer = Vec::new();
    for claimer in claimers {
        let output = claimer.wait_with_output().unwrap();
        assert!(output.status.success());
        let ids: Vec<i64> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("claimed ")?.parse().ok())
            .collect();
        per_claimer.push(ids.len());
        claimed.extend(ids);
    }
    common::kill_tagged(&tag);
    eprintln!("claims per claimer: {per_claimer:?}");
    claimed.sort();
    let expected: Vec<i64> = (1..=ITEMS as i64).collect();
    assert_eq!(
        claimed, expected,
        "every item claimed exactly once (per claimer: {per_claimer:?})"
    );
}
