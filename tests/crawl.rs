//! Crawls end to end under the real daemon: the process tree, hook results by the contract,
//! depth, concurrency limits, deadlines and background teardown.

mod common;

use abxd::domain::Kind;
use abxd::store::{HookResult, ProcessFilter, ProcessRow};
use common::{fixtures, plugins_config, wait_until, TestDaemon, WAIT};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

const CRAWL_WAIT: Duration = Duration::from_secs(90);

/// A daemon with the fixture plugins, its store on `backend`, started with a database password in
/// its environment (which workers get and hooks never do; trust authentication ignores it).
fn fixture_daemon(backend: &str, extra: &str) -> TestDaemon {
    let plugins = fixtures().join("plugins");
    let mut daemon = TestDaemon::prepare_on(
        backend,
        &format!(
        "{}[timeouts]\nkill_grace = \"500ms\"\nmin_grace = \"200ms\"\n\
         [plugins.slow]\ntimeout = \"1s\"\n[plugins.envcheck]\nenv = {{ FIXTURE_SETTING = \"from-config\" }}\n{extra}",
            plugins_config(&[&plugins])
        ),
    );
    daemon.launch_with_env(&[("PGPASSWORD", "not-for-hooks")]);
    daemon
}

fn all_rows(daemon: &TestDaemon) -> Vec<ProcessRow> {
    daemon
        .store()
        .processes()
        .list(&ProcessFilter::default())
        .unwrap()
}

fn results_by_hook(daemon: &TestDaemon, crawl: i64) -> BTreeMap<String, HookResult> {
    daemon
        .store()
        .results()
        .of_crawl(crawl)
        .unwrap()
        .into_iter()
        .map(|r| (r.hook.clone(), r))
        .collect()
}

#[test]
fn a_crawl_runs_as_a_process_tree_and_records_results_by_the_hook_contract() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let daemon = fixture_daemon(backend, "");
        let crawl = daemon.add(&["http://127.0.0.1:9/page"]);
        daemon.wait_sealed(crawl, CRAWL_WAIT);

        let rows = all_rows(&daemon);
        let by_id: HashMap<i64, &ProcessRow> = rows.iter().map(|r| (r.id, r)).collect();
        let kind_of_parent = |row: &ProcessRow| row.parent_id.map(|p| by_id[&p].kind);
        let orchestrator = rows.iter().find(|r| r.kind == Kind::Orchestrator).unwrap();
        let crawl_worker = rows.iter().find(|r| r.kind == Kind::CrawlWorker).unwrap();
        let snapshot_worker = rows
            .iter()
            .find(|r| r.kind == Kind::SnapshotWorker)
            .unwrap();
        assert_eq!(crawl_worker.parent_id, Some(orchestrator.id));
        assert_eq!(crawl_worker.crawl_id, Some(crawl));
        assert_eq!(snapshot_worker.parent_id, Some(crawl_worker.id));
        let hooks: Vec<&ProcessRow> = rows.iter().filter(|r| r.kind == Kind::Hook).collect();
        assert_eq!(hooks.len(), 10, "9 snapshot hooks and 1 crawl hook");
        for hook in &hooks {
            let crawl_hook = hook.argv[0].contains("on_Crawl__");
            let expected = if crawl_hook {
                Kind::CrawlWorker
            } else {
                Kind::SnapshotWorker
            };
            assert_eq!(kind_of_parent(hook), Some(expected), "{:?}", hook.argv);
            assert!(!hook.status.is_live(), "{:?} still live", hook.argv);
            assert!(hook.result_id.is_some());
        }
        for worker in [crawl_worker, snapshot_worker] {
            assert_eq!(worker.exit_code, Some(0), "{:?}", worker.argv);
        }

        let results = results_by_hook(&daemon, crawl);
        let status = |hook: &str| results[hook].status.as_str();
        assert_eq!(status("on_Snapshot__05_envcheck.sh"), "succeeded");
        assert_eq!(status("on_Snapshot__10_ok.sh"), "succeeded");
        assert_eq!(
            results["on_Snapshot__10_ok.sh"].output.as_deref(),
            Some("all good")
        );
        assert_eq!(
            results["on_Snapshot__10_ok.sh"].output_files,
            vec!["ok.txt".to_string()]
        );
        assert_eq!(results["on_Snapshot__10_ok.sh"].output_size, 5);
        assert_eq!(status("on_Snapshot__20_skipper.sh"), "skipped");
        assert_eq!(
            results["on_Snapshot__20_skipper.sh"].output.as_deref(),
            Some("skipped: the tool this needs is missing")
        );
        assert_eq!(status("on_Snapshot__30_failer.sh"), "failed");
        assert_eq!(
            results["on_Snapshot__30_failer.sh"].output.as_deref(),
            Some("something broke")
        );
        assert_eq!(status("on_Snapshot__40_recorder.sh"), "skipped");
        assert_eq!(status("on_Snapshot__50_slow.sh"), "failed");
        assert!(results["on_Snapshot__50_slow.sh"]
            .output
            .as_deref()
            .unwrap()
            .starts_with("timeout"));
        assert_eq!(status("on_Snapshot__15_background.bg.sh"), "succeeded");
        // No record and ended by the scope-end SIGTERM: it ran and reported nothing.
        assert_eq!(status("on_Snapshot__12_bgquiet.bg.sh"), "noresults");
        // `abxctl show --json` spells it as the counts, the database and the docs do.
        let shown: serde_json::Value =
            serde_json::from_str(&daemon.ctl_ok(&["show", "--json", &crawl.to_string()])).unwrap();
        let said_of_bgquiet: Vec<&serde_json::Value> = shown["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|snapshot| snapshot["results"].as_array().unwrap())
            .filter(|result| result["hook"] == "on_Snapshot__12_bgquiet.bg.sh")
            .map(|result| &result["status"])
            .collect();
        assert_eq!(said_of_bgquiet, ["noresults"], "{shown}");
        assert_eq!(status("on_Crawl__10_crawlbg.bg.sh"), "succeeded");
        for result in results.values() {
            assert!(
                result.started_at.is_some() && result.ended_at.is_some(),
                "{result:?}"
            );
        }

        // The timed-out hook: SIGTERM to its group at the deadline, recorded as a timeout.
        let slow = hooks
            .iter()
            .find(|h| h.argv[0].ends_with("on_Snapshot__50_slow.sh"))
            .unwrap();
        assert_eq!(slow.end_reason, Some(abxd::domain::EndReason::Timeout));
        assert!(slow.sigterm_at.is_some());
        // The background hooks were torn down when their snapshot (or crawl) ended, after the last
        // foreground hook.
        let last_foreground_end = hooks
            .iter()
            .filter(|h| h.snapshot_id.is_some() && !h.argv[0].contains(".bg."))
            .filter_map(|h| h.ended_at)
            .max()
            .unwrap();
        for bg in hooks.iter().filter(|h| h.argv[0].contains(".bg.")) {
            assert!(bg.sigterm_at.is_some(), "{:?} was not torn down", bg.argv);
            assert!(bg.sigterm_at.unwrap() >= last_foreground_end || bg.snapshot_id.is_none());
            // The quiet one does not trap SIGTERM: its row says how it really ended.
            if bg.argv[0].contains("bgquiet") {
                assert_eq!(bg.exit_signal, Some(15));
            } else {
                assert_eq!(bg.exit_code, Some(0));
            }
        }
        // The hook after a background hook waits for its first output (bgquiet writes after 0.4 s).
        let started = |name: &str| {
            hooks
                .iter()
                .find(|h| h.argv[0].ends_with(name))
                .and_then(|h| h.started_at)
                .unwrap()
        };
        let waited =
            started("on_Snapshot__15_background.bg.sh") - started("on_Snapshot__12_bgquiet.bg.sh");
        assert!(
            waited >= 400,
            "the next hook started {waited} ms after the background hook"
        );
        let crawlbg = hooks
            .iter()
            .find(|h| h.argv[0].contains("on_Crawl__"))
            .unwrap();
        assert!(crawlbg.sigterm_at.unwrap() >= snapshot_worker.ended_at.unwrap());

        // What the hook contract passes: argv, cwd, env, stdin, its own process group.
        let snapshot = &daemon.store().crawls().snapshots(crawl).unwrap()[0];
        let snapshot_dir = daemon
            .data_dir()
            .join(format!("crawls/{crawl}/snapshots/{}", snapshot.id));
        let contract = std::fs::read_to_string(snapshot_dir.join("envcheck/contract.txt")).unwrap();
        let envcheck = hooks
            .iter()
            .find(|h| h.argv[0].contains("envcheck"))
            .unwrap();
        for line in [
            format!(
                "argv=--url=http://127.0.0.1:9/page --snapshot-id={} --depth=0",
                snapshot.uuid.as_deref().unwrap()
            ),
            format!("cwd={}", snapshot_dir.join("envcheck").display()),
            format!("CRAWL_ID={crawl}"),
            format!(
                "CRAWL_DIR={}",
                daemon.data_dir().join(format!("crawls/{crawl}")).display()
            ),
            format!("SNAPSHOT_ID={}", snapshot.id),
            format!("SNAPSHOT_DIR={}", snapshot_dir.display()),
            format!("ABXD_PROCESS_ID={}", envcheck.id),
            format!("SNAP_DIR={}", snapshot_dir.display()),
            // (abxd's own runtime dir; the crawl's browser profile is below it: see below.)
            format!("TMP_DIR={}", daemon.data_dir().join("tmp").display()),
            format!(
                "EXTRA_CONTEXT={}",
                serde_json::json!({
                    "crawl_id": daemon.store().crawls().get(crawl).unwrap().unwrap().uuid,
                    "snapshot_id": snapshot.uuid,
                    "snapshot_depth": 0,
                    "plugin": "envcheck",
                    "hook_name": "on_Snapshot__05_envcheck",
                })
            ),
            // config.json defaults, the hook's timeout from its own key.
            "ENVCHECK_TIMEOUT=20".to_string(),
            "ENVCHECK_MODE=strict".to_string(),
            "TIMEOUT=20".to_string(),
            "FIXTURE_SETTING=from-config".to_string(),
            "NOTIFY_SOCKET=<unset>".to_string(),
            "PGPASSWORD=<unset>".to_string(),
            "ABXD_CONFIG_TEXT=<unset>".to_string(),
            "stdin=/dev/null".to_string(),
            format!(
                "pgid={} pid={}",
                envcheck.pid.unwrap(),
                envcheck.pid.unwrap()
            ),
        ] {
            assert!(
                contract.lines().any(|l| l == line),
                "missing {line:?} in\n{contract}"
            );
        }
        // The crawl's own browser profile, outside the archive, as abx-dl 1.13 gives its run
        // one: below TMP_DIR. The hook made it there; the crawl's end removed it.
        let persona = contract
            .lines()
            .find_map(|l| l.strip_prefix("PERSONAS_DIR="))
            .map(std::path::PathBuf::from)
            .unwrap();
        let personas = daemon.data_dir().join("tmp/personas");
        assert!(persona.starts_with(&personas), "{persona:?}");
        assert!(persona.ends_with(".persona"), "{persona:?}");
        assert!(
            !persona.parent().unwrap().exists(),
            "{persona:?} outlived its crawl"
        );

        // show reports every hook.
        let show = daemon.ctl_ok(&["show", &crawl.to_string()]);
        for hook in results.keys() {
            assert!(show.contains(hook.as_str()), "{show}");
        }
        assert!(show.contains("sealed (finished)"), "{show}");
        // A Tag record tags its snapshot.
        assert_eq!(
            daemon.store().results().tags(snapshot.id).unwrap(),
            vec!["fixture-tag".to_string()]
        );
        assert!(show.contains("    tags: fixture-tag"), "{show}");
    }
}

#[test]
fn depth_1_crawls_each_linked_page_once_and_no_page_twice() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let site = tempfile::tempdir().unwrap();
        let page = |name: &str, links: &[&str]| {
            let anchors: String = links
                .iter()
                .map(|l| format!("<a href=\"{l}\">{l}</a>\n"))
                .collect();
            std::fs::write(
                site.path().join(name),
                format!("<html><head><title>{name}</title></head><body>{anchors}</body></html>"),
            )
            .unwrap();
        };
        page("index.html", &["b.html", "c.html", "index.html", "#top"]);
        page("b.html", &["index.html", "c.html", "d.html"]);
        page("c.html", &["b.html", "d.html"]);
        page("d.html", &[]);
        let addr = abxd::serve::serve_dir(site.path()).unwrap();
        let bundled = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins");
        let daemon = TestDaemon::start_on(backend, &plugins_config(&[&bundled]));
        let root = format!("http://{addr}/index.html");
        let crawl = daemon.add(&[&root, "--depth", "1", "--plugins", "links,title"]);
        daemon.wait_sealed(crawl, CRAWL_WAIT);

        let snapshots = daemon.store().crawls().snapshots(crawl).unwrap();
        let found: BTreeSet<(String, u32)> =
            snapshots.iter().map(|s| (s.url.clone(), s.depth)).collect();
        let expected: BTreeSet<(String, u32)> = [
            (root.clone(), 0),
            (format!("http://{addr}/b.html"), 1),
            (format!("http://{addr}/c.html"), 1),
        ]
        .into();
        assert_eq!(found, expected);
        assert_eq!(snapshots.len(), 3, "no URL twice");
        assert!(snapshots.iter().all(|s| s.status == "sealed"));
        let results = daemon.store().results().of_crawl(crawl).unwrap();
        assert_eq!(results.len(), 6, "links and title, once per snapshot");
        let workers = all_rows(&daemon)
            .into_iter()
            .filter(|r| r.kind == Kind::SnapshotWorker)
            .count();
        assert_eq!(workers, 3, "one snapshot worker per snapshot");
    }
}

/// The largest number of intervals [start, end) that overlap at any moment.
fn max_overlap(intervals: &[(i64, i64)]) -> usize {
    let mut edges: Vec<(i64, i32)> = intervals
        .iter()
        .flat_map(|&(start, end)| [(start, 1), (end, -1)])
        .collect();
    // At the same millisecond, an end comes before a start.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, delta) in edges {
        now += delta;
        most = most.max(now);
    }
    most as usize
}

#[test]
fn no_more_snapshot_workers_run_at_once_than_the_limit() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let daemon = fixture_daemon(backend, "[limits]\nmax_snapshot_workers = 2\n");
        let urls: Vec<String> = (0..6).map(|i| format!("http://127.0.0.1:9/{i}")).collect();
        let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
        args.extend(["--plugins", "sleepy"]);
        let crawl = daemon.add(&args);
        daemon.wait_sealed(crawl, CRAWL_WAIT);

        let workers: Vec<(i64, i64)> = all_rows(&daemon)
            .into_iter()
            .filter(|r| r.kind == Kind::SnapshotWorker)
            .map(|r| (r.started_at.unwrap(), r.ended_at.unwrap()))
            .collect();
        assert_eq!(workers.len(), 6);
        assert_eq!(
            max_overlap(&workers),
            2,
            "the limit is used, and never exceeded"
        );
    }
}

/// ArchiveBox's `add --crawl-max-concurrent-snapshots N`: the crawl's own limit, in place of
/// `[limits] max_snapshot_workers` — above it or below.
#[test]
fn a_crawls_max_concurrent_snapshots_is_its_limit_in_place_of_the_configured_one() {
    // (Each snapshot long enough that three started together still run together.)
    let config = "[limits]\nmax_snapshot_workers = 2\n\
                  [plugins.sleepy]\nenv = { SLEEPY_SECONDS = \"1\" }\n";
    let daemon = fixture_daemon("sqlite", config);
    for (most, expected) in [("3", 3), ("1", 1)] {
        let urls: Vec<String> = (0..6)
            .map(|i| format!("http://127.0.0.1:9/{most}/{i}"))
            .collect();
        let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
        args.extend([
            "--plugins",
            "sleepy",
            "--crawl-max-concurrent-snapshots",
            most,
        ]);
        let crawl = daemon.add(&args);
        daemon.wait_sealed(crawl, CRAWL_WAIT);
        let workers: Vec<(i64, i64)> = all_rows(&daemon)
            .into_iter()
            .filter(|r| r.kind == Kind::SnapshotWorker && r.crawl_id == Some(crawl))
            .map(|r| (r.started_at.unwrap(), r.ended_at.unwrap()))
            .collect();
        assert_eq!(workers.len(), 6);
        assert_eq!(
            max_overlap(&workers),
            expected,
            "--crawl-max-concurrent-snapshots {most}"
        );
    }
    let shown = daemon.ctl_ok(&["show", "1"]);
    assert!(shown.contains("max_concurrent_snapshots 3"), "{shown}");
}

#[test]
fn a_crawl_added_while_the_daemon_is_down_runs_when_it_starts() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let mut daemon =
            TestDaemon::prepare_on(backend, &plugins_config(&[&fixtures().join("plugins")]));
        // Before the daemon ever ran there is no database, and abxctl makes none.
        let output = daemon.ctl(&["add", "http://127.0.0.1:9/", "--plugins", "ok"]);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("start the daemon once"), "{stderr}");
        if backend == "sqlite" {
            assert!(!daemon.database().exists());
        }
        daemon.create_database();
        let output = daemon.ctl(&["add", "http://127.0.0.1:9/", "--plugins", "ok"]);
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains("abxd is not running: the crawl runs when it starts"),
            "{stdout}"
        );
        daemon.launch();
        daemon.wait_sealed(1, CRAWL_WAIT);
        let results = results_by_hook(&daemon, 1);
        assert_eq!(results["on_Snapshot__10_ok.sh"].status, "succeeded");
    }
}

/// With an error elsewhere in supervisor.toml, abxctl reads only `[paths]` and `[control]` of
/// it: with the daemon down it writes no crawl, whose `[crawl]` rules it did not read, and says
/// which key is wrong; once the file is right, the crawl gets `[crawl]`'s rules.
#[test]
fn with_the_daemon_down_a_config_read_only_in_part_queues_no_crawl() {
    let plugins = plugins_config(&[&fixtures().join("plugins")]);
    let daemon = TestDaemon::prepare(&format!("{plugins}[crawl]\nmax_urls = 3\n"));
    daemon.create_database();
    daemon.write_config(&format!(
        "{plugins}[crawl]\nmax_urls = 3\n[limits]\nno_such_limit = 1\n"
    ));
    let output = daemon.ctl(&["add", "http://127.0.0.1:9/", "--plugins", "ok"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no_such_limit"), "{stderr}");
    assert!(stderr.contains("writes no work with abxd down"), "{stderr}");
    assert!(daemon.store().crawls().all().unwrap().is_empty());
    daemon.write_config(&format!("{plugins}[crawl]\nmax_urls = 3\n"));
    let output = daemon.ctl(&["add", "http://127.0.0.1:9/", "--plugins", "ok"]);
    assert!(output.status.success(), "{output:?}");
    let crawls = daemon.store().crawls().all().unwrap();
    assert_eq!(crawls.len(), 1);
    assert_eq!(
        crawls[0].rules.max_urls,
        Some(3),
        "[crawl]'s rule, read whole"
    );
}

#[test]
fn add_wait_follows_the_crawl_and_prints_its_results() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let daemon = fixture_daemon(backend, "");
        let output = daemon.ctl(&[
            "add",
            "http://127.0.0.1:9/",
            "--plugins",
            "ok,failer",
            "--wait",
        ]);
        // A hook failed: the crawl is sealed, and the status says so.
        assert_eq!(output.status.code(), Some(abxd::exit::HOOKS_FAILED));
        let output = String::from_utf8_lossy(&output.stdout);
        assert!(output.contains("sealed (finished)"), "{output}");
        assert!(output.contains("on_Snapshot__10_ok.sh"), "{output}");
        assert!(output.contains("on_Snapshot__30_failer.sh"), "{output}");
        let crawls = daemon.ctl_ok(&["crawls"]);
        assert!(
            crawls.contains("1 ok, 0 noresults, 1 failed, 0 skipped"),
            "{crawls}"
        );
    }
}

#[test]
fn logs_prints_a_hooks_output() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let daemon = fixture_daemon(backend, "");
        let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "failer"]);
        daemon.wait_sealed(crawl, CRAWL_WAIT);
        let hook = all_rows(&daemon)
            .into_iter()
            .find(|r| r.kind == Kind::Hook)
            .unwrap();
        let logs = daemon.ctl_ok(&["logs", &hook.id.to_string()]);
        assert!(logs.contains("something broke"), "{logs}");
        let missing = daemon.ctl(&["logs", "9999"]);
        assert!(String::from_utf8_lossy(&missing.stderr).contains("no process row 9999"));
    }
}

#[test]
fn bad_urls_are_refused_before_anything_is_queued() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let daemon = fixture_daemon(backend, "");
        let output = daemon.ctl(&["add", "not a url"]);
        assert_eq!(output.status.code(), Some(abxd::exit::USAGE));
        assert!(String::from_utf8_lossy(&output.stderr).contains("is not an http://"));
        // The cloud metadata address holds credentials: never a seed either.
        let output = daemon.ctl(&["add", "http://169.254.169.254/latest/meta-data/"]);
        assert_eq!(output.status.code(), Some(abxd::exit::USAGE));
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains("is a cloud metadata address"), "{said}");
        assert!(daemon.store().crawls().all().unwrap().is_empty());
        wait_until("nothing to change", WAIT, || Some(()));
    }
}

#[test]
fn abxd_run_crawls_a_local_directory_and_prints_a_summary() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let daemon =
            TestDaemon::prepare_on(backend, &plugins_config(&[&fixtures().join("plugins")]));
        let site = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/site");
        let output = daemon
            .abxd_command(&["run", site.to_str().unwrap(), "--plugins", "ok,skipper"])
            .stdout(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", daemon.log());
        assert!(stdout.contains("serving "), "{stdout}");
        assert!(stdout.contains("sealed (finished)"), "{stdout}");
        assert!(stdout.contains("on_Snapshot__10_ok.sh"), "{stdout}");
        assert!(
            stdout.contains("skipped: the tool this needs is missing"),
            "{stdout}"
        );
        // Its own loopback server is no site to be polite to: the crawl's rules lift
        // `[politeness]` to what its workers allow.
        let crawl = daemon.store().crawls().all().unwrap().remove(0);
        assert_eq!(crawl.rules.delay_ms, Some(0));
        let workers = abxd::config::Limits::default().max_snapshot_workers;
        assert_eq!(crawl.rules.max_per_host, Some(u64::from(workers)));
        // The daemon stopped cleanly: its row is final, nothing of it runs.
        let rows = daemon
            .store()
            .processes()
            .list(&ProcessFilter::default())
            .unwrap();
        assert!(rows.iter().all(|r| !r.status.is_live()), "{rows:?}");
        assert!(common::tagged_pids(&daemon.tag).is_empty());
    }
}

#[test]
fn a_disabled_plugin_does_not_run_even_when_the_crawl_lists_it() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let daemon = fixture_daemon(backend, "[plugins.failer]\nenabled = false\n");
        let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "ok,failer"]);
        daemon.wait_sealed(crawl, CRAWL_WAIT);
        let hooks: Vec<String> = results_by_hook(&daemon, crawl).into_keys().collect();
        assert_eq!(hooks, vec!["on_Snapshot__10_ok.sh".to_string()]);
    }
}

#[test]
fn a_worker_renews_its_lease_while_a_hook_outlasts_it() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let daemon = TestDaemon::start_on(backend, &format!(
            "{}[timeouts]\nlease = \"600ms\"\n[plugins.sleepy]\nenv = {{ SLEEPY_SECONDS = \"1.5\" }}\n",
            plugins_config(&[&fixtures().join("plugins")])
        ));
        // While the hook sleeps (1.5 s, longer than the lease), the snapshot's lease keeps moving.
        let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "sleepy"]);
        daemon.wait_sealed(crawl, CRAWL_WAIT);
        let snapshot = &daemon.store().crawls().snapshots(crawl).unwrap()[0];
        let worker = all_rows(&daemon)
            .into_iter()
            .find(|r| r.kind == Kind::SnapshotWorker)
            .unwrap();
        // (`retry_at` is on the boot clock, `started_at` on the wall clock: one is moved onto the
        // other.)
        let wall_minus_boot = abxd::store::now_ms() - abxd::store::boot_clock_ms();
        let started = worker.started_at.unwrap() - wall_minus_boot;
        assert!(
            snapshot.retry_at > started + 600,
            "the lease was renewed past its first expiry"
        );
        assert_eq!(
            all_rows(&daemon)
                .iter()
                .filter(|r| r.kind == Kind::SnapshotWorker)
                .count(),
            1
        );
    }
}

#[test]
fn workers_run_with_the_daemons_config_even_after_the_file_was_broken() {
    let daemon = fixture_daemon("sqlite", "");
    std::fs::write(&daemon.config, "[limits]\nmax_crawl_workers = 0\n").unwrap();
    daemon.signal(nix::sys::signal::Signal::SIGHUP);
    wait_until("the refused reload", WAIT, || {
        daemon.log().contains("reload refused").then_some(())
    });
    // abxctl gets a config of its own that points at the same data dir.
    let other = daemon.path("abxctl.toml");
    std::fs::write(
        &other,
        format!(
            "[paths]\ndata_dir = {:?}\n",
            daemon.data_dir().display().to_string()
        ),
    )
    .unwrap();
    let output = std::process::Command::new(common::abxctl_bin())
        .args([
            "--config",
            other.to_str().unwrap(),
            "add",
            "http://127.0.0.1:9/",
            "--plugins",
            "ok",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    daemon.wait_sealed(1, CRAWL_WAIT);
    let results = results_by_hook(&daemon, 1);
    assert_eq!(results["on_Snapshot__10_ok.sh"].status, "succeeded");
}

#[test]
fn a_plugin_that_does_not_exist_is_refused_naming_it_and_what_exists() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let plugins = plugins_config(&[&fixtures().join("plugins")]);
        let mut daemon = TestDaemon::prepare_on(backend, &plugins);
        // While the daemon is down (abxctl writes the database itself) and while it runs.
        for running in [false, true] {
            if running {
                daemon.launch();
            }
            let output = daemon.ctl(&["add", "http://127.0.0.1:9/", "--plugins", "ok,wgett"]);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(!output.status.success(), "{stderr}");
            assert!(
                stderr.contains("no plugin named wgett; plugins: background, bgquiet, crawlbg"),
                "{stderr}"
            );
        }
        assert!(
            daemon.store().crawls().all().unwrap().is_empty(),
            "nothing was queued"
        );
        // abxd run refuses before it starts anything.
        daemon.signal(nix::sys::signal::Signal::SIGTERM);
        daemon.wait_exit();
        let status = daemon
            .abxd_command(&["run", "--plugins", "wgett", "http://127.0.0.1:9/"])
            .status()
            .unwrap();
        assert!(!status.success());
        assert!(
            daemon.log().contains("abxd: no plugin named wgett"),
            "{}",
            daemon.log()
        );
        assert!(
            daemon.store().crawls().all().unwrap().is_empty(),
            "nothing was queued"
        );
        // A [plugins.X] table of no plugin: check-config and the daemon refuse the file.
        let mut typo = TestDaemon::prepare_on(
            backend,
            &format!("{plugins}[plugins.wgett]\nenabled = false\n"),
        );
        let status = typo.abxd_command(&["check-config"]).status().unwrap();
        assert!(!status.success());
        let log = typo.log();
        assert!(
            log.contains("key `plugins.wgett`: no plugin named wgett"),
            "{log}"
        );
        typo.launch_expecting_failure();
        assert!(
            typo.log().contains("no plugin named wgett"),
            "{}",
            typo.log()
        );
    }
}

/// Tears down what a test started under its tag, also when it fails.
struct Tagged(String);

impl Drop for Tagged {
    fn drop(&mut self) {
        common::kill_tagged(&self.0);
    }
}

#[test]
fn abxd_run_in_an_empty_directory_archives_with_the_abx_plugins_of_a_python_on_the_path() {
    // Where pip puts abx-plugins: a virtualenv whose bin/ is on the PATH (as `abx-dl` users have).
    let root = tempfile::tempdir().unwrap();
    let venv = root.path().join("venv");
    let plugins = venv.join("lib/python3.13/site-packages/abx_plugins/plugins");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::create_dir_all(plugins.join("ok")).unwrap();
    let hook = "on_Snapshot__10_ok.sh";
    std::fs::copy(
        fixtures().join("plugins/ok").join(hook),
        plugins.join("ok").join(hook),
    )
    .unwrap();
    let empty = root.path().join("here");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(
        !std::path::Path::new("/etc/abxd/supervisor.toml").exists(),
        "this machine has an installed config: abxd would read it instead of the defaults"
    );
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let tag = Tagged(common::unique_tag());
    let abxd = |args: &[&str]| {
        std::process::Command::new(common::abxd_bin())
            .args(args)
            .current_dir(&empty)
            .env("PATH", &path)
            .env_remove("ABXD_CONFIG")
            .env(common::TAG_ENV, &tag.0)
            .output()
            .unwrap()
    };
    // No config file anywhere: the built-in defaults find the plugins, and name no file.
    let checked = abxd(&["check-config"]);
    let shown = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{shown}");
    assert!(shown.contains(&plugins.display().to_string()), "{shown}");
    let output = abxd(&["run", "--hooks-user", "root", "http://127.0.0.1:9/"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("sealed (finished)"), "{stdout}");
    assert!(stdout.contains(hook), "{stdout}");
    // (It says it runs on the defaults; nothing blames a file that is not there.)
    for line in stderr.lines().filter(|l| l.contains("supervisor.toml")) {
        assert!(line.contains("no config file at"), "{stderr}");
    }
    assert!(empty.join("data/abxd.sqlite3").exists());
}
