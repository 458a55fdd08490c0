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

use common::archivebox::{
    archivebox, collection_dir, export_and_wait, listed_results, new_collection, records,
    run_archivebox,
};
use common::{fixtures, hook_user, plugins_config, wait_until, TestDaemon, WAIT};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// A daemon whose crawls run the `leaky` fixture plugin, not started; `extra` is more config.
fn prepared(extra: &str) -> TestDaemon {
    let config = plugins_config(&[&fixtures().join("export")]);
    let daemon = TestDaemon::prepare(&format!("{config}{extra}"));
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
