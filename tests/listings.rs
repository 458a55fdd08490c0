//! Listings that page, along the operator's path: `abxctl show` of a crawl larger than a page
//! sums it up (its counts, its failures, its last snapshots) and pages the rest — by number for
//! people, by cursor for programs — and the web view's crawl page pages too.

mod common;

use common::{plugin, plugins_config, TestDaemon};
use std::time::Duration;

/// Snapshots of the crawl: more than two pages of 10.
const SEEDS: usize = 25;

/// The seeds whose hook fails.
const FAILING: [usize; 2] = [3, 17];

fn seed(n: usize) -> String {
    match FAILING.contains(&n) {
        true => format!("http://127.0.0.1:9/fail-{n}"),
        false => format!("http://127.0.0.1:9/page-{n}"),
    }
}

/// A daemon whose `paged` hook fails for the URLs with `fail` in them, and a crawl of the
/// [`SEEDS`] seeds through it, sealed.
fn daemon_with_a_sealed_crawl(root: &std::path::Path) -> (TestDaemon, i64) {
    plugin(
        root,
        "paged",
        "on_Snapshot__10_paged.sh",
        r#"case "$*" in
    *--url=*fail*) echo '{"type":"ArchiveResult","status":"failed","output_str":"no"}'; exit 1 ;;
esac
echo '{"type":"ArchiveResult","status":"succeeded","output_str":"yes"}'
"#,
    );
    let daemon = TestDaemon::start_with(&format!(
        "{}[limits]\nmax_snapshot_workers = 4\n",
        plugins_config(&[root])
    ));
    let mut args = vec!["-p".to_string(), "paged".to_string()];
    args.extend((1..=SEEDS).map(seed));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let crawl = daemon.add(&args);
    daemon.wait_sealed(crawl, Duration::from_secs(120));
    (daemon, crawl)
}

#[test]
fn show_sums_up_a_crawl_larger_than_a_page_and_pages_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let (daemon, crawl) = daemon_with_a_sealed_crawl(root.path());
    let id = crawl.to_string();
    let shown = |args: &[&str]| {
        let mut all = vec!["show", id.as_str()];
        all.extend_from_slice(args);
        daemon.ctl_ok(&all)
    };
    let lists = |text: &str, n: usize| text.contains(&format!("{}\n", seed(n)));

    // The first page: the counts, the failures, its ten snapshots, where the next starts, and
    // the crawl's last snapshots.
    let first = shown(&["--limit", "10"]);
    for expected in [
        "snapshots: 0 queued, 0 started, 25 sealed; results: 23 ok, 0 noresults, 2 failed",
        "\n  failed: 2\n",
        "snapshots 1–10 of 25",
        &format!("next: abxctl show {crawl} --page 2 --limit 10"),
        "  last:\n",
    ] {
        assert!(first.contains(expected), "{expected:?} in:\n{first}");
    }
    assert!(lists(&first, 1) && lists(&first, 10), "{first}");
    assert!(!lists(&first, 11) && !lists(&first, 22), "{first}");
    assert!(lists(&first, 25), "the last snapshots:\n{first}");
    // Each failure is named with its snapshot, also the one past this page.
    let failed: serde_json::Value =
        serde_json::from_str(&shown(&["--status", "failed", "--json"])).unwrap();
    let failed_ids: Vec<i64> = (failed["snapshots"].as_array().unwrap().iter())
        .map(|s| s["id"].as_i64().unwrap())
        .collect();
    assert_eq!(failed_ids.len(), FAILING.len(), "{failed}");
    for snapshot in failed_ids {
        let line = format!("    snapshot {snapshot}: on_Snapshot__10_paged.sh (result");
        assert!(first.contains(&line), "{line:?} in:\n{first}");
    }

    // The last page: what is left, and no next one.
    let last = shown(&["--page", "3", "--limit", "10"]);
    assert!(last.contains("snapshots 21–25 of 25"), "{last}");
    assert!(!last.contains("next:"), "{last}");
    assert!(lists(&last, 21) && !lists(&last, 20), "{last}");

    // Only the snapshots with a failed result.
    let failed = shown(&["--status", "failed"]);
    assert!(failed.contains("snapshots 1–2 of 2 failed"), "{failed}");
    assert!(FAILING.iter().all(|&n| lists(&failed, n)), "{failed}");
    assert!(!lists(&failed, 1), "{failed}");

    // A program pages on with the cursor until there is none, and sees each snapshot once.
    let mut seen = Vec::new();
    let mut after: Option<i64> = None;
    loop {
        let mut args = vec!["--json".to_string(), "--limit".into(), "10".into()];
        if let Some(after) = after {
            args.extend(["--after".into(), after.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let page: serde_json::Value = serde_json::from_str(&shown(&args)).unwrap();
        assert_eq!(page["page"]["snapshots"], SEEDS, "{page}");
        let snapshots = page["snapshots"].as_array().unwrap();
        assert!(snapshots.len() <= 10 && !snapshots.is_empty(), "{page}");
        seen.extend(
            snapshots
                .iter()
                .map(|s| s["url"].as_str().unwrap().to_string()),
        );
        match page["page"]["next_after"].as_i64() {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let expected: Vec<String> = (1..=SEEDS).map(seed).collect();
    assert_eq!(seen, expected);

    // Nonsense is refused, naming what is wrong.
    let out = daemon.ctl(&["show", &id, "--page", "0"]);
    assert_eq!(out.status.code(), Some(abxd::exit::USAGE));
    let out = daemon.ctl(&["show", &id, "--status", "done"]);
    assert_eq!(out.status.code(), Some(abxd::exit::USAGE));
    assert!(String::from_utf8_lossy(&out.stderr).contains("failed"));
}

#[test]
fn a_crawl_that_fits_in_a_page_is_shown_whole_without_a_pager() {
    let root = tempfile::tempdir().unwrap();
    let (daemon, crawl) = daemon_with_a_sealed_crawl(root.path());
    let whole = daemon.ctl_ok(&["show", &crawl.to_string()]);
    assert!((1..=SEEDS).all(|n| whole.contains(&seed(n))), "{whole}");
    assert!(
        !whole.contains("next:") && !whole.contains("last:"),
        "{whole}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&daemon.ctl_ok(&["show", &crawl.to_string(), "--json"])).unwrap();
    assert_eq!(json["snapshots"].as_array().unwrap().len(), SEEDS);
    assert!(json["page"]["next_after"].is_null(), "{json}");
}
