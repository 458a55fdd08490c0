//! The bundled Chromium plugins against real Chromium: screenshot, PDF, DOM and title of a
//! bundled page, and no browser left behind by the chrome crawl hook.
//!
//! CI installs Chromium and fails here without it; elsewhere the test skips, saying so.

mod common;

use abxd::domain::Kind;
use abxd::store::ProcessFilter;
use common::{plugins_config, TestDaemon};
use std::path::Path;
use std::time::Duration;

fn chromium_available() -> bool {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .any(|name| {
            std::process::Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Live processes of this test (its tag) whose environment carries `ABXD_PROCESS_ID=<row>`.
fn marked(tag: &str, row: i64) -> Vec<i32> {
    let needle = format!("ABXD_PROCESS_ID={row}");
    let tagged = format!("{}={tag}", common::TAG_ENV);
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                let mut vars = env.split(|&b| b == 0);
                vars.clone().any(|v| v == needle.as_bytes()) && vars.any(|v| v == tagged.as_bytes())
            })
        })
        .filter(|&pid| abxd::identity::of_pid(pid).is_some())
        .collect()
}

#[test]
fn chromium_hooks_archive_the_bundled_page_and_leave_no_browser_behind() {
    if !chromium_available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have Chromium installed"
        );
        eprintln!("SKIPPED: Chromium is not installed (CI installs it)");
        return;
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let addr = abxd::serve::serve_dir(&manifest.join("examples/site")).unwrap();
    let daemon = TestDaemon::start_with(&plugins_config(&[&manifest.join("plugins")]));
    let crawl = daemon.add(&[
        &format!("http://{addr}/"),
        "--plugins",
        "chrome,dom,screenshot,pdf,title",
    ]);
    daemon.wait_sealed(crawl, Duration::from_secs(240));

    let results = daemon.store().results().of_crawl(crawl).unwrap();
    for result in &results {
        assert_eq!(result.status, "succeeded", "{result:?}\n{}", daemon.log());
    }
    assert_eq!(results.len(), 5);
    let snapshot = daemon.store().crawls().snapshots(crawl).unwrap()[0].id;
    let dir = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/snapshots/{snapshot}"));
    let png = std::fs::read(dir.join("screenshot/screenshot.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG file");
    assert!(png.len() > 1000);
    let pdf = std::fs::read(dir.join("pdf/output.pdf")).unwrap();
    assert_eq!(&pdf[..5], b"%PDF-", "a PDF file");
    let dom = std::fs::read_to_string(dir.join("dom/output.html")).unwrap();
    assert!(dom.contains("An example page for abxd"), "{dom}");
    let title = std::fs::read_to_string(dir.join("title/title.txt")).unwrap();
    assert_eq!(title.trim(), "abxd example page");

    // The crawl's browser is gone, descendants included.
    let rows = daemon
        .store()
        .processes()
        .list(&ProcessFilter::default())
        .unwrap();
    let chrome_hook = rows
        .iter()
        .find(|r| r.kind == Kind::Hook && r.argv[0].contains("chrome_launch"))
        .unwrap();
    assert_eq!(chrome_hook.exit_code, Some(0), "chromium shut down cleanly");
    let survivors: Vec<String> = marked(&daemon.tag, chrome_hook.id)
        .into_iter()
        .map(|pid| std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .collect();
    assert!(
        survivors.is_empty(),
        "chromium processes survived their crawl: {survivors:?}"
    );
    // Chromium's own processes (browser, zygotes, renderers, …) were recorded as child rows
    // while they ran, and every one of them ended.
    let chromium_rows: Vec<&abxd::store::ProcessRow> = rows
        .iter()
        .filter(|r| r.kind == Kind::Child && r.argv.first().is_some_and(|a| a.contains("chrom")))
        .collect();
    let distinct: std::collections::BTreeSet<i32> =
        chromium_rows.iter().filter_map(|r| r.pid).collect();
    assert!(
        distinct.len() >= 2,
        "chromium processes as child rows: {chromium_rows:#?}"
    );
    assert!(chromium_rows.iter().all(|r| !r.status.is_live()));
    let cdp = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/chrome/cdp_url.txt"));
    assert!(std::fs::read_to_string(cdp)
        .unwrap()
        .starts_with("ws://127.0.0.1:"));
}
