//! The hook contract of abx-dl 1.13 (what ArchiveBox 0.9.73 runs), along the operator's path:
//! the exit over what a hook printed, an operator's stop, and the crawl hooks a crawl cannot go
//! on without.

mod common;

use abxd::domain::Kind;
use common::{fixtures, plugins_config, wait_until, TestDaemon, WAIT};

fn daemon(extra: &str) -> TestDaemon {
    TestDaemon::start_with(&format!(
        "{}{extra}",
        plugins_config(&[&fixtures().join("resource"), &fixtures().join("plugins")])
    ))
}

fn statuses(daemon: &TestDaemon, crawl: i64) -> Vec<(String, String, Option<String>)> {
    (daemon.store().results().of_crawl(crawl).unwrap())
        .into_iter()
        .map(|r| (r.plugin, r.status.to_string(), r.output))
        .collect()
}

#[test]
fn a_hook_that_says_it_succeeded_and_then_crashes_failed_and_keeps_its_words() {
    let daemon = daemon("");
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "liar"]);
    daemon.wait_sealed(crawl, WAIT);
    assert_eq!(
        statuses(&daemon, crawl),
        [(
            "liar".to_string(),
            "failed".to_string(),
            Some("exited with code 3: saved page.html".to_string())
        )]
    );
}

#[test]
fn a_hook_an_operator_stops_is_cancelled_not_failed() {
    let daemon = daemon("[plugins.sleepy.env]\nSLEEPY_SECONDS = \"60\"\n");
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "sleepy"]);
    let row = wait_until("the hook to run", WAIT, || {
        daemon
            .live_rows(Kind::Hook)
            .into_iter()
            .find(|r| r.crawl_id == Some(crawl) && r.pid.is_some())
    });
    daemon.ctl_ok(&["kill", &row.id.to_string()]);
    daemon.wait_sealed(crawl, WAIT);
    let results = statuses(&daemon, crawl);
    assert_eq!(results[0].1, "cancelled", "{results:?}");
}

#[test]
fn a_crawl_hook_that_fails_before_it_is_ready_fails_the_crawl_and_no_snapshot_runs() {
    let daemon = daemon("");
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "unready,ok"]);
    daemon.wait_sealed(crawl, WAIT);
    let row = daemon.store().crawls().get(crawl).unwrap().unwrap();
    assert_eq!(row.outcome.map(|o| o.as_str()), Some("failed"));
    assert!(daemon.store().crawls().snapshots(crawl).unwrap().is_empty());
    let results = statuses(&daemon, crawl);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].1, "failed");
    assert_eq!(results[0].2.as_deref(), Some("cannot start the browser"));
    let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
    assert!(shown.contains("sealed (failed)"), "{shown}");
    // `add --wait` on such a crawl says a hook failed.
    let output = daemon.ctl(&[
        "add",
        "--wait",
        "http://127.0.0.1:9/b",
        "--plugins",
        "unready",
    ]);
    assert_eq!(output.status.code(), Some(abxd::exit::HOOKS_FAILED));
}

#[test]
fn a_required_crawl_resource_that_dies_admits_no_new_snapshot_and_the_crawl_fails() {
    let daemon = daemon("[limits]\nmax_snapshot_workers = 1\n");
    let seeds: Vec<String> = (0..8).map(|i| format!("http://127.0.0.1:9/{i}")).collect();
    let mut args: Vec<&str> = seeds.iter().map(String::as_str).collect();
    args.extend(["--plugins", "user"]);
    let crawl = daemon.add(&args);
    daemon.wait_sealed(crawl, WAIT);
    let store = daemon.store();
    assert_eq!(
        store
            .crawls()
            .get(crawl)
            .unwrap()
            .unwrap()
            .outcome
            .map(|o| o.as_str()),
        Some("failed")
    );
    let results = store.results().of_crawl(crawl).unwrap();
    let browser = results.iter().find(|r| r.plugin == "browser").unwrap();
    assert_eq!(browser.status.as_str(), "failed", "{browser:?}");
    let died = browser.ended_at.unwrap();
    // No snapshot was admitted (claimed for a worker) after the browser died; some never ran.
    for snapshot in store.crawls().snapshots(crawl).unwrap() {
        if let Some(started) = snapshot.started_at {
            assert!(
                started <= died,
                "{snapshot:?} admitted after the browser died at {died}"
            );
        }
    }
    let used: Vec<_> = results.iter().filter(|r| r.plugin == "user").collect();
    let ran = used
        .iter()
        .filter(|r| r.status.as_str() == "succeeded")
        .count();
    assert!(ran < seeds.len(), "every snapshot ran: {used:?}");
    assert!(store
        .crawls()
        .snapshots(crawl)
        .unwrap()
        .iter()
        .all(|s| s.status.as_str() == "sealed"));
}

#[test]
fn a_hook_waits_for_the_plugins_it_reads_from_and_one_after_background_cleanup_for_them_all() {
    let daemon = TestDaemon::start_with(&plugins_config(&[&fixtures().join("order")]));
    let crawl = daemon.add(&[
        "http://127.0.0.1:9/",
        "--plugins",
        "slowbg,endless,reader,hasher",
    ]);
    daemon.wait_sealed(crawl, WAIT);
    let mut results = statuses(&daemon, crawl);
    results.sort();
    assert_eq!(
        results,
        [
            (
                "endless".into(),
                "noresults".into(),
                Some("recording".into())
            ),
            (
                "hasher".into(),
                "succeeded".into(),
                Some("hashed all".into())
            ),
            (
                "reader".into(),
                "succeeded".into(),
                Some("read the download".into())
            ),
            (
                "slowbg".into(),
                "succeeded".into(),
                Some("downloaded".into())
            ),
        ]
    );
}

#[test]
fn at_a_snapshots_end_background_hooks_stop_dependents_first_then_what_they_require() {
    let daemon = TestDaemon::start_with(&plugins_config(&[&fixtures().join("order")]));
    // (`finisher` is the foreground hook that ends the snapshot; `recorder` pulls `browserish` in.)
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "recorder,finisher"]);
    daemon.wait_sealed(crawl, WAIT);
    let rows = daemon
        .store()
        .processes()
        .list(&Default::default())
        .unwrap();
    let row = |plugin: &str| {
        (rows.iter())
            .find(|r| r.kind == Kind::Hook && r.argv[0].contains(&format!("/{plugin}/")))
            .unwrap_or_else(|| panic!("no {plugin} row: {rows:#?}"))
            .clone()
    };
    let (recorder, browserish) = (row("recorder"), row("browserish"));
    let recorder_ended = recorder.ended_at.expect("the recorder ended");
    let browserish_stopped = browserish.sigterm_at.expect("the resource was stopped");
    assert!(
        recorder.sigterm_at.is_some() && browserish_stopped >= recorder_ended,
        "the resource was stopped at {browserish_stopped}, before its dependent ended at \
         {recorder_ended}"
    );
    let mut statuses = statuses(&daemon, crawl);
    statuses.sort();
    assert_eq!(
        statuses,
        [
            (
                "browserish".into(),
                "noresults".into(),
                Some("serving".into())
            ),
            ("finisher".into(), "succeeded".into(), Some("done".into())),
            (
                "recorder".into(),
                "noresults".into(),
                Some("recording".into())
            ),
        ]
    );
}

#[test]
fn a_hook_tree_over_its_memory_limit_is_killed_and_failed_and_the_snapshot_goes_on() {
    // 100 MB for the hog (abx-plugins' MEMORY_LIMIT, set for it alone), none for the others.
    let daemon = daemon("[plugins.hog.env]\nMEMORY_LIMIT = \"100000000\"\n");
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "hog,ok"]);
    // (`wait_sealed` also waits until no process of the crawl is live: the hog's child too.)
    daemon.wait_sealed(crawl, WAIT);
    let mut results = statuses(&daemon, crawl);
    results.sort();
    assert_eq!(
        results,
        [
            (
                "hog".to_string(),
                "failed".to_string(),
                Some("memory limit".to_string())
            ),
            (
                "ok".to_string(),
                "succeeded".to_string(),
                Some("all good".to_string())
            ),
        ]
    );
}

#[test]
fn each_snapshot_dir_holds_an_index_jsonl_as_abx_dl_writes_it_with_uuid7_ids() {
    let daemon = daemon("");
    let crawl = daemon.add(&["http://127.0.0.1:9/page", "--plugins", "ok,failer"]);
    daemon.wait_sealed(crawl, WAIT);
    let store = daemon.store();
    let snapshot = &store.crawls().snapshots(crawl).unwrap()[0];
    let uuid = |id: &Option<String>| -> String {
        let id = id.clone().expect("a uuid");
        assert_eq!(id.len(), 32, "{id}");
        assert_eq!(&id[12..13], "7", "a UUIDv7: {id}");
        id
    };
    let snapshot_uuid = uuid(&snapshot.uuid);
    let crawl_uuid = uuid(&store.crawls().get(crawl).unwrap().unwrap().uuid);
    let dir = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/snapshots/{}", snapshot.id));
    let text = std::fs::read_to_string(dir.join("index.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The Snapshot record first — sealed, as ArchiveBox 0.9.73 leaves it — then a Process and an
    // ArchiveResult per hook, as they ended, then the crawl's Crawl record, then ArchiveBox's own
    // ArchiveResult record of each hook (times, command, files keyed by path; no id).
    assert_eq!(records[0]["type"], "Snapshot", "{text}");
    assert_eq!(records[0]["status"], "sealed", "{text}");
    assert_eq!(records[0]["fs_version"], "0.9.4");
    assert_eq!(records[0]["schema_version"], "0.9.73");
    assert!(records[0]["timestamp"].as_str().unwrap().contains('.'));
    let crawl_record = &records[5];
    assert_eq!(crawl_record["type"], "Crawl", "{text}");
    assert_eq!(crawl_record["id"], crawl_uuid.as_str());
    assert_eq!(records[0]["id"], snapshot_uuid.as_str());
    assert_eq!(records[0]["crawl_id"], crawl_uuid.as_str());
    assert_eq!(records[0]["url"], "http://127.0.0.1:9/page");
    let types: Vec<&str> = records
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "Snapshot",
            "Process",
            "ArchiveResult",
            "Process",
            "ArchiveResult",
            "Crawl",
            "ArchiveResult",
            "ArchiveResult"
        ],
        "{text}"
    );
    for archivebox in &records[6..] {
        let run = (records.iter())
            .find(|r| r["type"] == "Process" && r["hook_name"] == archivebox["hook_name"])
            .unwrap();
        assert!(archivebox.get("id").is_none(), "{archivebox}");
        assert_eq!(archivebox["start_ts"], run["started_at"], "{archivebox}");
        assert_eq!(archivebox["end_ts"], run["ended_at"], "{archivebox}");
        assert_eq!(archivebox["cmd"], run["cmd"], "{archivebox}");
    }
    let ok = (records[6..].iter()).find(|r| r["plugin"] == "ok").unwrap();
    assert_eq!(ok["output_files"]["ok.txt"]["size"], 5, "{ok}");
    assert_eq!(ok["output_size"], 5, "{ok}");
    assert_eq!(ok["output_mimetypes"], "text/plain", "{ok}");
    for result in store.results().of_crawl(crawl).unwrap() {
        let record = records[..5]
            .iter()
            .find(|r| r["type"] == "ArchiveResult" && r["plugin"] == result.plugin.as_str())
            .unwrap_or_else(|| panic!("no record of {}: {text}", result.plugin));
        assert_eq!(record["id"], uuid(&result.uuid).as_str());
        assert_eq!(record["snapshot_id"], snapshot_uuid.as_str());
        assert_eq!(record["status"], result.status.as_str());
        // Its run's process row has a UUIDv7 of its own: the Process record's id, which the
        // ArchiveResult names as its `process_id`, and `abxctl show --json` shows.
        let row = store
            .processes()
            .get(result.process_id.unwrap())
            .unwrap()
            .unwrap();
        let process_uuid = uuid(&row.uuid);
        assert_eq!(record["process_id"], process_uuid.as_str(), "{text}");
        assert!(
            (records.iter()).any(|r| r["type"] == "Process" && r["id"] == process_uuid.as_str()),
            "{text}"
        );
        let shown: serde_json::Value =
            serde_json::from_str(&daemon.ctl_ok(&["show", "--json", &crawl.to_string()])).unwrap();
        let shown = shown.to_string();
        assert!(
            shown.contains(&format!("\"uuid\":\"{process_uuid}\"")),
            "{shown}"
        );
    }
    let ok = records
        .iter()
        .find(|r| r["type"] == "ArchiveResult" && r["plugin"] == "ok")
        .unwrap();
    assert_eq!(
        ok["output_files"],
        serde_json::json!([{"path": "ok.txt", "extension": "txt", "mimetype": "text/plain",
                            "size": 5}])
    );
    // Hooks got the snapshot's UUIDv7, as abx-dl gives it.
    let process = records.iter().find(|r| r["type"] == "Process").unwrap();
    let argv: Vec<&str> = (process["cmd"].as_array().unwrap().iter())
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        argv.contains(&format!("--snapshot-id={snapshot_uuid}").as_str()),
        "{argv:?}"
    );
}
