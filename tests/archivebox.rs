//! Crawls ArchiveBox opens, along an ArchiveBox user's path: `[archivebox] data_dir` (or
//! `abxctl export --archivebox DIR`) copies a sealed crawl's snapshots into their collection as
//! ArchiveBox 0.9's portable snapshot directories, and ArchiveBox's own import
//! (`archivebox update --rescan`, run by abxd as the collection's owner) puts them in its index —
//! ArchiveBox's CLI then lists them. An export carries nothing out of a snapshot's directory, and
//! one that cannot be done says why, the crawl untouched.
//!
//! ArchiveBox 0.9.73 is found at `$ABXD_ARCHIVEBOX` (default: where `.ci/run` installs it); in
//! CI it must be there, elsewhere the test that needs it says it skips.

mod common;

use common::abx::{launch, plugins_of, serve_test_site, Tools};
use common::archivebox::{
    archivebox, archivebox_rows, collection_dir, export_and_wait, left_empty, listed_results,
    new_collection, records, run_archivebox,
};
use common::{fixtures, hook_user, plugins_config, wait_until, TestDaemon, WAIT};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

/// A daemon whose crawls run the `leaky` fixture plugin, not started; `extra` is more config.
fn prepared(extra: &str) -> TestDaemon {
    let config = plugins_config(&[&fixtures().join("export")]);
    prepared_with(&format!("{config}{extra}"))
}

/// A daemon with `config`, not started, whose dir the collection's owner may enter.
fn prepared_with(config: &str) -> TestDaemon {
    let daemon = TestDaemon::prepare(config);
    // (Its dir is 0700: the collection's owner must reach the collection inside it.)
    std::fs::set_permissions(daemon.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    daemon
}

fn daemon(extra: &str) -> TestDaemon {
    let mut daemon = prepared(extra);
    daemon.launch();
    daemon
}

fn export_of(daemon: &TestDaemon, crawl: i64) -> serde_json::Value {
    let shown: serde_json::Value =
        serde_json::from_str(&daemon.ctl_ok(&["show", "--json", &crawl.to_string()])).unwrap();
    shown["crawl"]["exports"][0].clone()
}

#[test]
fn archivebox_imports_an_exported_crawl_with_every_snapshot_sealed_and_every_status_abxds() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let config = format!("[archivebox]\ncommand = \"{}\"\n", archivebox.display());
    let daemon = daemon(&config);
    let collection = new_collection(&archivebox, &daemon);

    let crawl = daemon.add(&["--plugins", "leaky,title", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, WAIT);
    let target = collection.display().to_string();
    let (ok, said, stderr) = export_and_wait(&daemon, &collection, crawl);
    assert!(ok, "{said}{stderr}\n{}", daemon.log());
    assert!(said.contains("imported"), "{said}");
    assert!(said.contains("ArchiveBox Imported: 1"), "{said}");
    // Each step was a process row under the orchestrator, ArchiveBox's as the collection's owner.
    let rows = daemon.ps_json(true);
    let import = (rows["processes"].as_array().unwrap().iter())
        .find(|row| {
            row["argv"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == "--rescan")
        })
        .unwrap_or_else(|| panic!("no import row: {rows}"));
    assert_eq!(import["exit_code"], 0, "{import}");

    // ArchiveBox's own CLI: the snapshot, sealed, with abxd's id; every result, with abxd's status.
    let store = daemon.store();
    let snapshot = &store.crawls().snapshots(crawl).unwrap()[0];
    let snapshots = records(&run_archivebox(
        &archivebox,
        &collection,
        &["snapshot", "list"],
    ));
    let listed = (snapshots.iter())
        .find(|s| s["type"] == "Snapshot")
        .unwrap_or_else(|| panic!("ArchiveBox lists no snapshot: {snapshots:?}"));
    assert_eq!(listed["id"].as_str(), snapshot.uuid.as_deref());
    assert_eq!(listed["url"], "http://127.0.0.1:9/");
    assert_eq!(listed["status"], "sealed");
    assert_eq!(listed["title"], "A page ArchiveBox shows");
    let statuses = listed_results(&archivebox, &collection);
    let mut abxds: Vec<(String, String)> = (store.results().of_crawl(crawl).unwrap().iter())
        .map(|r| {
            let name = r.hook.trim_end_matches(".sh").to_string();
            (name, r.status.as_str().to_string())
        })
        .collect();
    abxds.sort();
    assert_eq!(statuses, abxds, "ArchiveBox's results are abxd's");
    assert_eq!(
        abxds.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>(),
        ["succeeded", "skipped", "succeeded", "failed"]
    );

    // Asked again: nothing copied twice, ArchiveBox finds it unchanged.
    let again = daemon.ctl_ok(&["export", "--archivebox", &target, "--wait"]);
    assert!(again.contains("1 there already"), "{again}");
}

/// Exports into one collection are imported together: three sealed crawls exported at once
/// cost ArchiveBox one import (which reads the whole collection), and each says so.
#[test]
fn exports_into_one_collection_are_imported_by_one_run_of_archiveboxs_import() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let config = format!("[archivebox]\ncommand = \"{}\"\n", archivebox.display());
    let daemon = daemon(&config);
    let collection = new_collection(&archivebox, &daemon);
    let mut crawls: Vec<i64> = (1..=2)
        .map(|n| daemon.add(&["-p", "leaky,title", &format!("http://127.0.0.1:9/{n}")]))
        .collect();
    // (A crawl's seeds are added in one go, most in one millisecond: each needs a timestamp of
    // its own in ArchiveBox.)
    let seeds: Vec<String> = (0..20)
        .map(|n| format!("http://127.0.0.1:9/s/{n}"))
        .collect();
    let mut args = vec!["-p", "title"];
    args.extend(seeds.iter().map(String::as_str));
    crawls.push(daemon.add(&args));
    for &crawl in &crawls {
        daemon.wait_sealed(crawl, WAIT);
    }
    let target = collection.display().to_string();
    let said = daemon.ctl_ok(&["export", "--archivebox", &target, "--wait"]);
    let rows = daemon.ps_json(true);
    let imports = (rows["processes"].as_array().unwrap().iter())
        .filter(|row| {
            row["argv"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == "--rescan")
        })
        .count();
    assert_eq!(imports, 1, "one import for the three: {said}");
    for &crawl in &crawls {
        let export = export_of(&daemon, crawl);
        assert_eq!(export["status"], "imported", "{export}");
        let detail = export["detail"].as_str().unwrap();
        assert!(detail.contains("one import for 3 crawls"), "{detail}");
    }
    let listed = records(&run_archivebox(
        &archivebox,
        &collection,
        &["snapshot", "list"],
    ));
    let snapshots = listed.iter().filter(|r| r["type"] == "Snapshot").count();
    assert_eq!(snapshots, 22, "every snapshot imported: {said}");
}

/// A result run again (`abxctl retry`) leaves two runs of one result in its snapshot's index;
/// ArchiveBox's own import keeps the latest: one ArchiveResult for the hook, succeeded, with the
/// second run's output.
#[test]
fn a_result_run_again_leaves_archivebox_with_its_latest_run() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let config = format!("[archivebox]\ncommand = \"{}\"\n", archivebox.display());
    let daemon = daemon(&config);
    let collection = new_collection(&archivebox, &daemon);
    let crawl = daemon.add(&["-p", "flaky,title", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, WAIT);
    daemon.ctl_ok(&[
        "retry",
        &crawl.to_string(),
        "--hook",
        "on_Snapshot__20_flaky.sh",
    ]);
    wait_until("the result run again", WAIT, || {
        let results = daemon.store().results().of_crawl(crawl).unwrap();
        let flaky = results.iter().find(|r| r.plugin == "flaky")?.clone();
        (flaky.status.as_str() == "succeeded").then_some(())
    });
    daemon.wait_sealed(crawl, WAIT);
    let store = daemon.store();
    let snapshot = &store.crawls().snapshots(crawl).unwrap()[0];
    let index = std::fs::read_to_string(daemon.data_dir().join(format!(
        "crawls/{crawl}/snapshots/{}/index.jsonl",
        snapshot.id
    )))
    .unwrap();
    let runs = (index.lines())
        .filter(|l| l.contains("\"ArchiveResult\"") && l.contains("on_Snapshot__20_flaky"))
        .filter(|l| !l.contains("schema_version"))
        .count();
    assert_eq!(runs, 2, "both runs in the index: {index}");

    let (ok, said, stderr) = export_and_wait(&daemon, &collection, crawl);
    assert!(ok, "{said}{stderr}");
    let flaky: Vec<_> = listed_results(&archivebox, &collection)
        .into_iter()
        .filter(|(hook, _)| hook.contains("flaky"))
        .collect();
    assert_eq!(
        flaky,
        [("on_Snapshot__20_flaky".to_string(), "succeeded".to_string())]
    );
    let rows = archivebox_rows(
        &collection,
        "SELECT output_str FROM core_archiveresult WHERE hook_name LIKE '%flaky%'",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["output_str"].as_deref(), Some("on the second try"));
}

#[test]
fn an_export_carries_nothing_out_of_a_snapshot_and_without_archivebox_fails_saying_so() {
    let mut daemon = prepared("");
    let collection = collection_dir(&daemon);
    // A collection as far as the copy goes (ArchiveBox's own database is ArchiveBox's to open).
    std::fs::write(collection.join("index.sqlite3"), "").unwrap();
    // `[archivebox] data_dir` exports each new crawl once it seals: with no ArchiveBox there.
    let target = collection.display().to_string();
    daemon.write_config(&format!(
        "{}[archivebox]\ndata_dir = \"{target}\"\ncommand = \"/nonexistent/archivebox\"\n",
        plugins_config(&[&fixtures().join("export")])
    ));
    daemon.launch();
    let crawl = daemon.add(&["--plugins", "leaky", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, WAIT);
    let export = wait_until("the export's end", WAIT, || {
        let export = export_of(&daemon, crawl);
        (export["status"] == "failed").then_some(export)
    });
    let detail = export["detail"].as_str().unwrap();
    assert!(detail.contains("1 snapshots copied"), "{detail}");
    assert!(detail.contains("cannot run ArchiveBox"), "{detail}");
    assert!(detail.contains("archivebox.command"), "{detail}");
    let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
    assert!(
        shown.contains(&format!("archivebox {target} (user system): failed")),
        "{shown}"
    );
    // The crawl is as it was.
    let store = daemon.store();
    assert_eq!(
        store.crawls().get(crawl).unwrap().unwrap().status.as_str(),
        "sealed"
    );

    // In the collection: the snapshot at ArchiveBox's place for it, its owner's, with what lay
    // in it — and none of what pointed outside.
    let snapshot = &store.crawls().snapshots(crawl).unwrap()[0];
    let rel = abxd::portable::snapshot_dir(
        "system",
        snapshot.created_at,
        &snapshot.url,
        snapshot.uuid.as_deref().unwrap(),
    );
    let placed = collection.join(rel).join("leaky");
    assert_eq!(
        std::fs::read_to_string(placed.join("page.html")).unwrap(),
        "kept\n"
    );
    assert_eq!(
        std::fs::read_link(placed.join("latest.html")).unwrap(),
        Path::new("page.html")
    );
    assert_eq!(
        placed.join("page.html").metadata().unwrap().uid(),
        hook_user().uid.as_raw()
    );
    for outside in ["passwd", "climbing", "pipe"] {
        assert!(
            placed.join(outside).symlink_metadata().is_err(),
            "{outside} was copied"
        );
    }
    let index = std::fs::read_to_string(placed.parent().unwrap().join("index.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(index.lines().next().unwrap()).unwrap();
    assert_eq!(first["status"], "sealed", "{index}");
    let logs = std::fs::read_dir(daemon.data_dir().join("logs/export")).unwrap();
    let copy_log = (logs.flatten())
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .find(|text| text.contains("left out"))
        .expect("the copy names what it left out");
    for outside in ["leaky/passwd", "leaky/climbing", "leaky/pipe"] {
        assert!(copy_log.contains(outside), "{copy_log}");
    }
}

#[test]
fn abxctl_export_refuses_what_is_not_an_archivebox_collection_naming_it() {
    let daemon = daemon("");
    let crawl = daemon.add(&["--plugins", "leaky", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, WAIT);
    let missing = daemon.path("nowhere");
    let plain = daemon.path("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let roots = daemon.path("roots");
    std::fs::create_dir_all(&roots).unwrap();
    std::fs::write(roots.join("index.sqlite3"), "").unwrap();
    for (dir, says) in [
        (&missing, "No such file or directory"),
        (&plain, "run `archivebox init` in it first"),
        (
            &roots,
            "belongs to root, and ArchiveBox does not run as root",
        ),
    ] {
        let output = daemon
            .ctl_command(&["export", "--archivebox", &dir.display().to_string()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(stderr.contains(&dir.display().to_string()), "{stderr}");
    }
    let bad_user = daemon
        .ctl_command(&[
            "export",
            "--archivebox",
            &roots.display().to_string(),
            "--user",
            "../x",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bad_user.stderr).contains("--user"));
    // Nothing was queued.
    assert!(daemon.store().exports().of_crawl(crawl).unwrap().is_empty());
}

/// The plugins both crawls of [`archivebox_fills_for_abxds_crawl_every_column_it_fills_for_its_own`]
/// run: ArchiveBox's own, from its virtualenv, none needing a browser.
const SAME_PLUGINS: &str = "favicon,wget,hashes";

/// ArchiveBox cannot tell abxd's crawl of a page from its own: in one collection ArchiveBox
/// 0.9.73 crawls a local page with three of its plugins, abxd crawls the same page with the same
/// plugins and exports into it, and every Snapshot and ArchiveResult column ArchiveBox filled for
/// its crawl — and the command and directory of each hook's Process — is filled for abxd's, with
/// abxd's times; `archivebox status` lists both among the recent changes, `archivebox snapshot
/// list` both.
#[test]
fn archivebox_fills_for_abxds_crawl_every_column_it_fills_for_its_own() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let venv = archivebox.parent().unwrap().parent().unwrap().to_path_buf();
    let Some(tools) = Tools::with_venv(Some(venv.clone())) else {
        return;
    };
    let url = format!("http://{}/", serve_test_site());
    let plugins_dir = plugins_of(&venv);
    let mut daemon = prepared_with(&format!(
        "{}[archivebox]\ncommand = \"{}\"\n",
        plugins_config(&[&plugins_dir]),
        archivebox.display()
    ));
    let collection = new_collection(&archivebox, &daemon);

    // ArchiveBox's own crawl of the page, as its user runs one — and abxd's, from the same
    // `add` line (ArchiveBox's short flags, its tags), exported into the same collection.
    let plugins = format!("-p{SAME_PLUGINS}");
    let line = ["add", "-d", "0", "-t", "news, Tech,news", &plugins, &url];
    run_archivebox(&archivebox, &collection, &line);
    launch(&mut daemon, &tools.env(&[]));
    let crawl = daemon.add(&line[1..]);
    daemon.wait_sealed(crawl, Duration::from_secs(120));
    let (ok, said, stderr) = export_and_wait(&daemon, &collection, crawl);
    assert!(ok && said.contains("imported"), "{said}{stderr}");
    let store = daemon.store();
    let snapshot = store.crawls().snapshots(crawl).unwrap().remove(0);
    let ours_id = snapshot.uuid.clone().unwrap().replace('-', "");

    let snapshots = archivebox_rows(&collection, "SELECT * FROM core_snapshot");
    assert_eq!(snapshots.len(), 2, "{snapshots:#?}");
    let is_ours = |row: &BTreeMap<String, Option<String>>| row["id"].as_deref() == Some(&ours_id);
    let (ours, own): (Vec<_>, Vec<_>) = snapshots.iter().partition(|row| is_ours(row));
    let (ours, own) = (ours[0], own[0]);
    assert_eq!(
        left_empty(own, ours),
        Vec::<String>::new(),
        "the Snapshot: {ours:#?}"
    );
    let downloaded = jiff::Timestamp::from_millisecond(snapshot.sealed_at.unwrap()).unwrap();
    let said_downloaded: jiff::Timestamp = format!(
        "{}Z",
        ours["downloaded_at"].as_deref().unwrap().replace(' ', "T")
    )
    .parse()
    .unwrap();
    assert_eq!(
        said_downloaded, downloaded,
        "downloaded_at is when abxd sealed it"
    );

    let results_of = |snapshot: &str| {
        let sql = format!(
            "SELECT r.*, p.cmd AS process_cmd, p.pwd AS process_pwd FROM core_archiveresult r \
             LEFT JOIN machine_process p ON p.id = r.process_id WHERE r.snapshot_id = '{snapshot}' \
             ORDER BY r.hook_name"
        );
        archivebox_rows(&collection, &sql)
    };
    let (own_results, our_results) = (
        results_of(own["id"].as_deref().unwrap()),
        results_of(&ours_id),
    );
    let hooks = |rows: &[BTreeMap<String, Option<String>>]| -> Vec<String> {
        rows.iter()
            .map(|r| r["hook_name"].clone().unwrap())
            .collect()
    };
    assert_eq!(
        hooks(&our_results),
        hooks(&own_results),
        "the same hooks ran"
    );
    assert!(own_results.len() >= 3, "{own_results:#?}");
    let abxd_results = store.results().of_crawl(crawl).unwrap();
    for (own, ours) in own_results.iter().zip(&our_results) {
        let hook = ours["hook_name"].as_deref().unwrap();
        assert_eq!(
            left_empty(own, ours),
            Vec::<String>::new(),
            "{hook}: {ours:#?}"
        );
        assert_eq!(ours["status"], own["status"], "{hook}");
        // With abxd's values: the hook abxd ran, where it ran it, within the snapshot's run.
        let abxd = (abxd_results.iter())
            .find(|r| Path::new(&r.hook).file_stem().unwrap().to_string_lossy() == hook)
            .unwrap_or_else(|| panic!("{hook}: not among abxd's results {abxd_results:?}"));
        let cmd = ours["process_cmd"].as_deref().unwrap();
        assert!(
            cmd.contains(&plugins_dir.display().to_string()),
            "{hook}: {cmd}"
        );
        let pwd = ours["process_pwd"].as_deref().unwrap();
        assert!(
            pwd.starts_with(&daemon.path("data").display().to_string()),
            "{hook}: {pwd}"
        );
        let start = ours["start_ts"].as_deref().unwrap();
        assert!(
            *start < *ours["end_ts"].as_deref().unwrap(),
            "{hook}: {ours:#?}"
        );
        assert_eq!(
            ours["status"].as_deref(),
            Some(abxd.status.as_str()),
            "{hook}"
        );
    }

    // Tagged alike: each snapshot, and each crawl.
    let tags_of = |snapshot: &str| -> Vec<String> {
        let sql = format!(
            "SELECT t.name FROM core_snapshot_tags st JOIN core_tag t ON t.id = st.tag_id \
             WHERE st.snapshot_id = '{snapshot}' ORDER BY t.name"
        );
        (archivebox_rows(&collection, &sql).iter())
            .map(|row| row["name"].clone().unwrap())
            .collect()
    };
    assert_eq!(tags_of(own["id"].as_deref().unwrap()), ["Tech", "news"]);
    assert_eq!(
        tags_of(&ours_id),
        ["Tech", "news"],
        "abxd's snapshot's tags"
    );
    let crawl_tags = archivebox_rows(&collection, "SELECT tags_str FROM crawls_crawl ORDER BY id");
    assert_eq!(crawl_tags[0], crawl_tags[1], "{crawl_tags:#?}");

    // ArchiveBox's own commands show both crawls alike.
    let status = run_archivebox(&archivebox, &collection, &["status"]);
    let recent = (status.lines())
        .filter(|line| line.contains("   > ") && line.contains(&url))
        .count();
    assert_eq!(
        recent, 2,
        "both snapshots among the recent changes:\n{status}"
    );
    let listed = records(&run_archivebox(
        &archivebox,
        &collection,
        &["snapshot", "list"],
    ));
    let ids: Vec<&str> = (listed.iter())
        .filter(|r| r["type"] == "Snapshot")
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 2, "{listed:#?}");
    daemon.assert_nothing_survives();
}

/// The User-Agent of each request a page was asked with: (path, agent).
type Agents = std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// A page on loopback that remembers the User-Agent of each request, by path.
fn serve_remembering_agents() -> (std::net::SocketAddr, Agents) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let agents = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let remembered = std::sync::Arc::clone(&agents);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                if let Some(agent) = line.trim_end().strip_prefix("User-Agent: ") {
                    remembered
                        .lock()
                        .unwrap()
                        .push((path.clone(), agent.to_string()));
                }
                line.clear();
            }
            let body = "<html><head><title>agents</title></head><body>hi</body></html>";
            let head = format!(
                "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            );
            let mut stream = &stream;
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    (addr, agents)
}

/// An ArchiveBox user's settings carried: what `archivebox config --set` wrote to their
/// collection's `ArchiveBox.conf` reaches abxd's hooks as it reaches ArchiveBox's own — wget
/// sends the same User-Agent under both — and `abxctl plugins --env wget` says where each value
/// came from.
#[test]
fn the_collections_archivebox_conf_reaches_abxds_hooks_as_it_reaches_archiveboxs() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let venv = archivebox.parent().unwrap().parent().unwrap().to_path_buf();
    let Some(tools) = Tools::with_venv(Some(venv.clone())) else {
        return;
    };
    let (addr, agents) = serve_remembering_agents();
    let mut daemon = prepared_with("");
    let collection = new_collection(&archivebox, &daemon);
    let agent = "conf-agent/1.0 (set in ArchiveBox.conf)";
    let setting = format!("USER_AGENT={agent}");
    run_archivebox(&archivebox, &collection, &["config", "--set", &setting]);
    let conf = std::fs::read_to_string(collection.join("ArchiveBox.conf")).unwrap();
    assert!(conf.contains(agent), "ArchiveBox wrote it there: {conf}");
    daemon.write_config(&format!(
        "{}[archivebox]\ncommand = \"{}\"\ndata_dir = \"{}\"\n",
        plugins_config(&[&plugins_of(&venv)]),
        archivebox.display(),
        collection.display()
    ));

    // ArchiveBox's own crawl of one page, then abxd's of another, in the same collection.
    let own = format!("http://{addr}/archivebox.html");
    run_archivebox(&archivebox, &collection, &["add", "-p", "wget", &own]);
    launch(&mut daemon, &tools.env(&[]));
    let ours = format!("http://{addr}/abxd.html");
    let crawl = daemon.add(&["-p", "wget", &ours]);
    daemon.wait_sealed(crawl, Duration::from_secs(120));
    let agents = agents.lock().unwrap().clone();
    let agent_of = |path: &str| -> Vec<&str> {
        (agents.iter())
            .filter(|(p, _)| p == path)
            .map(|(_, a)| a.as_str())
            .collect()
    };
    assert!(!agent_of("/archivebox.html").is_empty(), "{agents:?}");
    assert_eq!(
        agent_of("/archivebox.html"),
        [agent],
        "ArchiveBox's own wget"
    );
    assert_eq!(agent_of("/abxd.html"), [agent], "abxd's wget");

    let shown = daemon.ctl_ok(&["plugins", "--env", "wget"]);
    let line = (shown.lines())
        .find(|line| line.trim_start().starts_with("WGET_USER_AGENT "))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(
        line.contains(agent) && line.contains("ArchiveBox.conf (USER_AGENT) through USER_AGENT"),
        "{shown}"
    );
    assert!(shown.contains("its default"), "{shown}");
    let json: serde_json::Value =
        serde_json::from_str(&daemon.ctl_ok(&["plugins", "--env", "wget", "--json"])).unwrap();
    assert_eq!(json["daemon_running"], true);
    assert_eq!(
        json["collection"],
        collection.join("ArchiveBox.conf").display().to_string()
    );
    let unknown = daemon.ctl(&["plugins", "--env", "wgett"]);
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        !unknown.status.success() && stderr.contains("no plugin named wgett"),
        "{stderr}"
    );
}
