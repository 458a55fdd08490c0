//! abxd as an ArchiveBox collection's runner (`[archivebox] serve_queue`), along an ArchiveBox
//! user's path: Crawls queued by ArchiveBox itself (`archivebox add --bg`) are claimed, run by
//! abxd and written back as ArchiveBox's own runner writes them — compared column by column
//! with a crawl ArchiveBox's runner ran on the same page; ArchiveBox shows them started while
//! they run; a cancel made in ArchiveBox stops the crawl's processes; a pause from abxctl shows
//! there; and abxd killed mid-crawl leaves ArchiveBox's rows consistent once it is back.
//!
//! ArchiveBox 0.9.73 is found at `$ABXD_ARCHIVEBOX` (default: where `.ci/run` installs it); in
//! CI it must be there, elsewhere each test says it skips.

mod common;

use common::abx::{launch, plugins_of, serve_test_site, Tools};
use common::archivebox::{
    archivebox, archivebox_rows, left_empty, new_collection, run_archivebox, run_archivebox_said,
    Row,
};
use common::{plugins_config, wait_until, TestDaemon};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a crawl of a few pages may take here, ArchiveBox's turns included.
const CRAWL: Duration = Duration::from_secs(180);

/// abxd's daemon's row in ArchiveBox's process table, while it runs (its pid).
const ABXD_RUNNER: &str = "SELECT pid FROM machine_process WHERE json_extract(env, \
                           '$.ABXD_DAEMON') IS NOT NULL AND status = 'running'";

/// The one value of the first row of `sql`.
fn archivebox_value(collection: &Path, sql: &str) -> Option<String> {
    let rows = archivebox_rows(collection, sql);
    rows.first()
        .and_then(|row| row.values().next().cloned())
        .flatten()
}

/// The ids of the Crawls of the collection, oldest first.
fn crawl_ids(collection: &Path) -> Vec<String> {
    (archivebox_rows(
        collection,
        "SELECT id FROM crawls_crawl ORDER BY created_at",
    )
    .iter())
    .map(|row| row["id"].clone().unwrap())
    .collect()
}

/// Where ArchiveBox keeps the snapshot `id`: `archive/users/USER/snapshots/DATE/DOMAIN/ID`.
fn snapshot_dir(collection: &Path, id: &str) -> PathBuf {
    find_snapshot_dir(collection, id)
        .unwrap_or_else(|| panic!("no directory of snapshot {id} in the collection"))
}

/// [`snapshot_dir`], if the collection has it yet.
fn find_snapshot_dir(collection: &Path, id: &str) -> Option<PathBuf> {
    let users = collection.join("archive/users");
    let mut found = Vec::new();
    for user in std::fs::read_dir(users).into_iter().flatten().flatten() {
        for date in std::fs::read_dir(user.path().join("snapshots"))
            .into_iter()
            .flatten()
        {
            for domain in std::fs::read_dir(date.unwrap().path()).unwrap().flatten() {
                found.push(domain.path().join(id));
            }
        }
    }
    found.into_iter().find(|dir| dir.is_dir())
}

/// A daemon serving `collection`'s queue (its turns a second apart), with `config` besides;
/// not started. Its dir is one the collection's owner may enter.
fn serving(
    archivebox: &Path,
    collection_in: impl FnOnce(&TestDaemon) -> PathBuf,
    config: &str,
) -> (TestDaemon, PathBuf) {
    let daemon = TestDaemon::prepare(config);
    std::fs::set_permissions(daemon.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let collection = collection_in(&daemon);
    daemon.write_config(&format!(
        "{config}[archivebox]\ncommand = \"{}\"\ndata_dir = \"{}\"\nserve_queue = true\n\
         queue_interval = \"1s\"\n",
        archivebox.display(),
        collection.display()
    ));
    (daemon, collection)
}

/// Waits until ArchiveBox's Crawl `id` is sealed there, and every one of its snapshots too.
fn wait_sealed_in_archivebox(daemon: &TestDaemon, collection: &Path, id: &str) {
    wait_until("ArchiveBox's Crawl to be sealed there", CRAWL, || {
        let crawl = archivebox_value(
            collection,
            &format!("SELECT status FROM crawls_crawl WHERE id = '{id}'"),
        );
        let open = archivebox_value(
            collection,
            &format!(
                "SELECT count(*) FROM core_snapshot WHERE crawl_id = '{id}' AND status != 'sealed'"
            ),
        );
        let done = crawl.as_deref() == Some("sealed") && open.as_deref() == Some("0");
        if daemon.log().contains("panicked") {
            panic!("{}", daemon.log());
        }
        done.then_some(())
    });
}

/// A URL the collection has a snapshot of is not archived again unless the Crawl says so
/// (`ONLY_NEW`, on by default, as ArchiveBox's `create_snapshots_from_urls` skips it): a second
/// `add --bg` of a page is sealed with no snapshot; with `--update` it is archived again. A
/// snapshot deleted in ArchiveBox is then deleted by ArchiveBox's retention, which abxd runs.
#[test]
fn a_page_the_collection_has_is_archived_again_only_when_the_crawl_says_so() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let Setup {
        url,
        mut daemon,
        collection,
        ..
    } = setup(&archivebox, false);
    daemon.launch();
    let again = ["add", "--bg", "-ptitle", &url];
    let update = ["add", "--bg", "--update", "-ptitle", &url];
    for line in [&again[..], &again, &update] {
        run_archivebox(&archivebox, &collection, line);
        let id = crawl_ids(&collection).pop().unwrap();
        wait_sealed_in_archivebox(&daemon, &collection, &id);
    }
    let counts: Vec<String> = (crawl_ids(&collection).iter())
        .map(|id| {
            let sql = format!("SELECT count(*) FROM core_snapshot WHERE crawl_id = '{id}'");
            archivebox_value(&collection, &sql).unwrap()
        })
        .collect();
    assert_eq!(counts, ["1", "0", "1"]);

    // Deleted in ArchiveBox (`request_delete`, what its admin and API call): ArchiveBox's
    // retention, run by abxd's turns as by its runner, deletes it.
    let first = crawl_ids(&collection).remove(0);
    let python = archivebox.parent().unwrap().join("python");
    common::archivebox::run_python(
        &python,
        &collection,
        &format!(
            "from archivebox.config.django import setup_django; setup_django(); \
             from archivebox.core.models import Snapshot; \
             Snapshot.objects.filter(crawl_id='{first}').request_delete()"
        ),
    );
    wait_until("ArchiveBox's retention to delete it", CRAWL, || {
        let sql = format!("SELECT count(*) FROM core_snapshot WHERE crawl_id = '{first}'");
        (archivebox_value(&collection, &sql).as_deref() == Some("0")).then_some(())
    });
    daemon.assert_nothing_survives();
}

/// ArchiveBox cannot tell a Crawl abxd ran from one its runner ran: ArchiveBox 0.9.73 crawls a
/// local page with three of its plugins, then the same `add` line is queued with `--bg`, abxd
/// takes it from ArchiveBox's queue and runs it, and every Snapshot and ArchiveResult column
/// ArchiveBox's runner filled — with each hook's Process — abxd filled, with its own values;
/// the Crawl is sealed there, its lease let go; abxd's daemon is the collection's runner (a
/// RUNNING orchestrator Process row with its pid); `abxctl crawls` marks the crawl ArchiveBox's.
#[test]
fn a_crawl_archivebox_queued_is_run_by_abxd_and_written_back_as_archiveboxs_runner_writes_it() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let venv = archivebox.parent().unwrap().parent().unwrap().to_path_buf();
    let Some(tools) = Tools::with_venv(Some(venv.clone())) else {
        return;
    };
    let url = format!("http://{}/", serve_test_site());
    let plugins_dir = plugins_of(&venv);
    let config = plugins_config(&[&plugins_dir]);
    let (mut daemon, collection) =
        serving(&archivebox, |d| new_collection(&archivebox, d), &config);

    // ArchiveBox's own runner first (a foreground `add`), then the same line queued for a
    // runner in the background: abxd. (`--update`: the page again, though the collection has it.)
    let line = [
        "add",
        "-d",
        "0",
        "--update",
        "-t",
        "news, Tech,news",
        "-pfavicon,wget,hashes",
        &url,
    ];
    run_archivebox(&archivebox, &collection, &line);
    let mut queued = line.to_vec();
    queued.insert(1, "--bg");
    run_archivebox(&archivebox, &collection, &queued);
    let [own_crawl, ours_crawl] = &crawl_ids(&collection)[..] else {
        panic!("not two crawls: {:?}", crawl_ids(&collection));
    };
    launch(&mut daemon, &tools.env(&[]));
    wait_sealed_in_archivebox(&daemon, &collection, ours_crawl);

    let snapshot_of = |crawl: &str| {
        let sql = format!("SELECT * FROM core_snapshot WHERE crawl_id = '{crawl}'");
        archivebox_rows(&collection, &sql).remove(0)
    };
    let (own, ours) = (snapshot_of(own_crawl), snapshot_of(ours_crawl));
    assert_eq!(
        left_empty(&own, &ours),
        Vec::<String>::new(),
        "the Snapshot: {ours:#?}"
    );
    for column in ["status", "depth", "fs_version", "url", "title"] {
        assert_eq!(ours[column], own[column], "{column}");
    }
    // Its id is abxd's snapshot's, its files where ArchiveBox looks for them.
    let store = daemon.store();
    let crawl = 1; // (abxd's first crawl: the Crawl it claimed)
    let abxd_snapshot = store.crawls().snapshots(crawl).unwrap().remove(0);
    assert_eq!(ours["id"].as_deref(), abxd_snapshot.uuid.as_deref());

    let results_of = |snapshot: &str| {
        let sql = format!(
            "SELECT r.*, p.cmd AS process_cmd, p.pwd AS process_pwd, p.status AS process_status, \
             p.exit_code AS process_exit_code, p.started_at AS process_started_at, \
             p.ended_at AS process_ended_at FROM core_archiveresult r \
             LEFT JOIN machine_process p ON p.id = r.process_id WHERE r.snapshot_id = '{snapshot}' \
             ORDER BY r.hook_name"
        );
        archivebox_rows(&collection, &sql)
    };
    let own_results = results_of(own["id"].as_deref().unwrap());
    let our_results = results_of(ours["id"].as_deref().unwrap());
    let hooks = |rows: &[Row]| -> Vec<String> {
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
    for (own, ours) in own_results.iter().zip(&our_results) {
        let hook = ours["hook_name"].as_deref().unwrap();
        assert_eq!(
            left_empty(own, ours),
            Vec::<String>::new(),
            "{hook}: {ours:#?}"
        );
        assert_eq!(ours["status"], own["status"], "{hook}");
        assert_eq!(ours["process_status"].as_deref(), Some("exited"), "{hook}");
        let pwd = ours["process_pwd"].as_deref().unwrap();
        assert!(
            pwd.starts_with(&collection.display().to_string()),
            "{hook}: {pwd}"
        );
        assert!(
            pwd.contains(ours["snapshot_id"].as_deref().unwrap()),
            "{hook}: {pwd}"
        );
    }
    // Tagged alike.
    let tags_of = |snapshot: &str| -> Vec<String> {
        let sql = format!(
            "SELECT t.name FROM core_snapshot_tags st JOIN core_tag t ON t.id = st.tag_id \
             WHERE st.snapshot_id = '{snapshot}' ORDER BY t.name"
        );
        (archivebox_rows(&collection, &sql).iter())
            .map(|row| row["name"].clone().unwrap())
            .collect()
    };
    assert_eq!(tags_of(ours["id"].as_deref().unwrap()), ["Tech", "news"]);
    // The Crawl sealed, let go (no lease left), its snapshot's index written there.
    let ours_crawl_row = &archivebox_rows(
        &collection,
        &format!("SELECT status, retry_at FROM crawls_crawl WHERE id = '{ours_crawl}'"),
    )[0];
    assert_eq!(ours_crawl_row["status"].as_deref(), Some("sealed"));
    assert_eq!(ours_crawl_row["retry_at"], None, "{ours_crawl_row:?}");
    let dir = snapshot_dir(&collection, ours["id"].as_deref().unwrap());
    assert!(dir.join("index.jsonl").is_file(), "{}", dir.display());

    // abxd's daemon is the collection's runner, as ArchiveBox's gate and UI look for one.
    let runner = archivebox_rows(
        &collection,
        "SELECT pid, status, worker_type, started_at, json_extract(env, '$.ABXD_DAEMON') AS \
         ours FROM machine_process WHERE process_type = 'orchestrator' AND status = 'running'",
    );
    assert_eq!(runner.len(), 1, "{runner:#?}");
    assert_eq!(
        runner[0]["pid"].as_deref(),
        Some(&*daemon.pid().to_string())
    );
    // (The gate's own type, without a start time: see `orchestrator_row`.)
    assert_eq!(runner[0]["worker_type"].as_deref(), Some("worker_runner"));
    assert_eq!(runner[0]["started_at"], None, "{runner:#?}");
    assert!(runner[0]["ours"].is_some(), "{runner:#?}");

    // abxctl marks it ArchiveBox's.
    let listed = daemon.ctl_ok(&["crawls"]);
    assert!(listed.contains("[ArchiveBox]"), "{listed}");
    let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
    assert!(
        shown.contains(&format!("its Crawl {ours_crawl}")),
        "{shown}"
    );
    daemon.assert_nothing_survives();
}

/// What most tests here start from: the test site, a daemon (not started) serving a new
/// collection's queue with the bundled plugins — and, `gated`, a `gate` plugin before them —,
/// and the file that opens the gate (in `_gates`' dir, kept while it is held).
struct Setup {
    url: String,
    daemon: TestDaemon,
    collection: PathBuf,
    flag: PathBuf,
    _gates: TestDaemon,
}

fn setup(archivebox: &Path, gated: bool) -> Setup {
    let url = format!("http://{}/", serve_test_site());
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins");
    let gates = TestDaemon::prepare("");
    std::fs::set_permissions(gates.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let gate = gated_plugins(gates.dir.path());
    let dirs: Vec<&Path> = match gated {
        true => vec![&gate, &bundled],
        false => vec![&bundled],
    };
    let config = format!(
        "{}[crawl]\negress = \"unrestricted\"\n",
        plugins_config(&dirs)
    );
    let (daemon, collection) = serving(archivebox, |d| new_collection(archivebox, d), &config);
    Setup {
        url,
        daemon,
        collection,
        flag: gates.dir.path().join("open"),
        _gates: gates,
    }
}

/// The bundled plugins, and a `gate` plugin whose hook waits until the file `open` appears in
/// the test's dir: what a test holds a crawl at.
fn gated_plugins(daemon_dir: &Path) -> PathBuf {
    let root = daemon_dir.join("gated-plugins");
    let flag = daemon_dir.join("open");
    common::plugin(
        &root,
        "gate",
        "on_Snapshot__15_gate.sh",
        &format!(
            "until [ -e {flag} ]; do sleep 0.1; done\n\
             echo '{{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"opened\"}}'\n",
            flag = flag.display()
        ),
    );
    root
}

/// A Crawl queued with `archivebox add --bg --depth 1 -t TAG`: ArchiveBox lists its result
/// `started` while abxd's hook runs, then every page of it (the page and the one it links to)
/// sealed, tagged, with a title and its results; a pause made with abxctl shows in ArchiveBox,
/// and a resume too.
#[test]
fn archivebox_shows_a_queued_crawl_started_while_abxd_runs_it_and_follows_abxctls_pause() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let Setup {
        url,
        mut daemon,
        collection,
        flag,
        _gates,
    } = setup(&archivebox, true);
    run_archivebox(
        &archivebox,
        &collection,
        &[
            "add",
            "--bg",
            "--depth",
            "1",
            "-t",
            "queued-tag",
            "--plugins",
            "gate,title,links",
            &url,
        ],
    );
    let id = crawl_ids(&collection).remove(0);
    daemon.launch();

    // Held at the gate: ArchiveBox's own listing shows the hook started, with its process.
    wait_until("ArchiveBox to list the gate started", CRAWL, || {
        let rows = archivebox_rows(
            &collection,
            "SELECT r.status, p.status AS process FROM core_archiveresult r \
             JOIN machine_process p ON p.id = r.process_id WHERE r.hook_name LIKE '%gate%'",
        );
        (rows.first()?.get("status")?.as_deref() == Some("started")
            && rows[0]["process"].as_deref() == Some("running"))
        .then_some(())
    });
    let listed = run_archivebox(&archivebox, &collection, &["archiveresult", "list"]);
    assert!(listed.contains("\"started\""), "{listed}");
    let crawl = 1;

    // Paused with abxctl: ArchiveBox shows it paused; resumed: queued or started again.
    daemon.ctl_ok(&["pause", &crawl.to_string()]);
    let status_sql = format!("SELECT status FROM crawls_crawl WHERE id = '{id}'");
    wait_until("ArchiveBox to show the pause", CRAWL, || {
        (archivebox_value(&collection, &status_sql).as_deref() == Some("paused")).then_some(())
    });
    daemon.ctl_ok(&["resume", &crawl.to_string()]);
    wait_until("ArchiveBox to show the resume", CRAWL, || {
        (archivebox_value(&collection, &status_sql).as_deref() != Some("paused")).then_some(())
    });

    std::fs::write(&flag, "").unwrap();
    wait_sealed_in_archivebox(&daemon, &collection, &id);
    let snapshots = archivebox_rows(
        &collection,
        &format!(
            "SELECT id, url, depth, title, status FROM core_snapshot WHERE crawl_id = '{id}' \
             ORDER BY depth"
        ),
    );
    let pages: Vec<(Option<String>, Option<String>)> = (snapshots.iter())
        .map(|s| (s["depth"].clone(), s["title"].clone()))
        .collect();
    assert_eq!(
        pages,
        [
            (Some("0".into()), Some("The abxd test page".into())),
            (Some("1".into()), Some("Other".into()))
        ],
        "{snapshots:#?}"
    );
    for snapshot in &snapshots {
        let snapshot_id = snapshot["id"].as_deref().unwrap();
        let tags = archivebox_value(
            &collection,
            &format!(
                "SELECT t.name FROM core_snapshot_tags st JOIN core_tag t ON t.id = st.tag_id \
                 WHERE st.snapshot_id = '{snapshot_id}'"
            ),
        );
        assert_eq!(tags.as_deref(), Some("queued-tag"), "{snapshot:?}");
        let statuses = archivebox_rows(
            &collection,
            &format!(
                "SELECT hook_name, status FROM core_archiveresult WHERE snapshot_id = \
                 '{snapshot_id}' ORDER BY hook_name"
            ),
        );
        assert!(
            statuses
                .iter()
                .all(|r| r["status"].as_deref() != Some("started")),
            "{statuses:#?}"
        );
        assert!(statuses.len() >= 3, "{statuses:#?}");
    }
    daemon.assert_nothing_survives();
}

/// A Crawl cancelled in ArchiveBox (as its UI's cancel does: `Crawl.cancel()`, run by
/// ArchiveBox's own Python) while abxd runs it: abxd cancels its crawl and tears its processes
/// down within a turn, and ArchiveBox's rows end sealed, none left started.
#[test]
fn a_crawl_cancelled_in_archivebox_stops_its_processes_in_abxd() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let Setup {
        url,
        mut daemon,
        collection,
        _gates,
        ..
    } = setup(&archivebox, true);
    run_archivebox(
        &archivebox,
        &collection,
        &["add", "--bg", "--plugins", "gate,title", &url],
    );
    let id = crawl_ids(&collection).remove(0);
    daemon.launch();
    let gate = wait_until("the gate hook to run", CRAWL, || {
        let rows = daemon.ps_json(false);
        (rows["processes"].as_array()?.iter())
            .find(|row| row["argv"].to_string().contains("gate"))
            .and_then(|row| row["pid"].as_i64())
    });
    let cancel = format!(
        "from archivebox.config.django import setup_django; setup_django(); \
         from archivebox.crawls.models import Crawl; Crawl.objects.get(id='{id}').cancel()"
    );
    let python = archivebox.parent().unwrap().join("python");
    common::archivebox::run_python(&python, &collection, &cancel);
    wait_until("the gate hook to be torn down", CRAWL, || {
        (!Path::new(&format!("/proc/{gate}")).exists()).then_some(())
    });
    let crawl = daemon.store().crawls().get(1).unwrap().unwrap();
    assert_eq!(
        crawl.outcome.map(|o| o.to_string()).as_deref(),
        Some("cancelled")
    );
    wait_sealed_in_archivebox(&daemon, &collection, &id);
    let started = archivebox_value(
        &collection,
        "SELECT count(*) FROM core_archiveresult WHERE status = 'started'",
    );
    assert_eq!(started.as_deref(), Some("0"));
    daemon.assert_nothing_survives();
}

/// A Crawl queued with `--crawl-max-concurrent-snapshots 1` runs one page at a time in abxd;
/// cancelled with abxctl before its second page ran, ArchiveBox's Crawl and both its Snapshots
/// end sealed (the one that never ran with no files), no lease left, and abxd lets go of it.
#[test]
fn a_crawl_cancelled_with_abxctl_before_all_its_pages_ran_is_sealed_and_let_go_in_archivebox() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let Setup {
        url,
        mut daemon,
        collection,
        _gates,
        ..
    } = setup(&archivebox, true);
    let other = format!("{url}other.html");
    run_archivebox(
        &archivebox,
        &collection,
        &[
            "add",
            "--bg",
            "--crawl-max-concurrent-snapshots",
            "1",
            "--plugins",
            "gate,title",
            &url,
            &other,
        ],
    );
    let id = crawl_ids(&collection).remove(0);
    daemon.launch();
    wait_until("the gate hook to run", CRAWL, || {
        let rows = daemon.ps_json(false);
        (rows["processes"].as_array()?.iter())
            .any(|row| row["argv"].to_string().contains("gate"))
            .then_some(())
    });
    let crawl = daemon.store().crawls().get(1).unwrap().unwrap();
    assert_eq!(crawl.rules.max_concurrent_snapshots, Some(1));
    let gates = (daemon.ps_json(false)["processes"]
        .as_array()
        .unwrap()
        .iter())
    .filter(|row| row["argv"].to_string().contains("gate"))
    .count();
    assert_eq!(gates, 1, "one page at a time");

    daemon.ctl_ok(&["cancel", "1"]);
    wait_sealed_in_archivebox(&daemon, &collection, &id);
    wait_until("abxd to let go of the Crawl", CRAWL, || {
        let held = daemon.store().crawls().served().held().unwrap();
        held.is_empty().then_some(())
    });
    let rows = archivebox_rows(
        &collection,
        &format!(
            "SELECT s.url, s.status, s.retry_at, c.retry_at AS crawl_retry_at FROM core_snapshot \
             s JOIN crawls_crawl c ON c.id = s.crawl_id WHERE c.id = '{id}' ORDER BY s.url"
        ),
    );
    assert_eq!(rows.len(), 2, "{rows:#?}");
    for row in &rows {
        assert_eq!(row["status"].as_deref(), Some("sealed"), "{row:?}");
        assert_eq!(
            (&row["retry_at"], &row["crawl_retry_at"]),
            (&None, &None),
            "{row:?}"
        );
    }
    daemon.assert_nothing_survives();
}

/// abxd killed (SIGKILL) while a Crawl of ArchiveBox's queue runs, then started again: the
/// crawl goes on where it was — no finished hook run again, none lost — and ArchiveBox's rows
/// end consistent: its Crawl and snapshots sealed, no result left started, its lease let go,
/// and `archivebox status` counting what `abxctl show` counts.
#[test]
fn abxd_killed_mid_crawl_leaves_archiveboxs_rows_consistent_and_repeats_nothing() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let (
        Setup {
            mut daemon,
            collection,
            flag,
            _gates,
            ..
        },
        id,
    ) = held_at_the_gate(&archivebox);
    daemon.crash();
    daemon.launch();
    std::fs::write(&flag, "").unwrap();
    wait_sealed_in_archivebox(&daemon, &collection, &id);

    let store = daemon.store();
    let crawl = 1;
    let headers_runs = (store.processes().list(&Default::default()).unwrap().iter())
        .filter(|row| row.crawl_id == Some(crawl) && row.argv.iter().any(|a| a.contains("headers")))
        .count();
    assert_eq!(headers_runs, 1, "the headers hook ran once");
    let rows = archivebox_rows(
        &collection,
        "SELECT hook_name, status FROM core_archiveresult ORDER BY hook_name",
    );
    assert!(
        rows.iter()
            .all(|r| r["status"].as_deref() != Some("started")),
        "{rows:#?}"
    );
    let gate = (rows.iter())
        .find(|r| {
            r["hook_name"]
                .as_deref()
                .is_some_and(|h| h.contains("gate"))
        })
        .unwrap();
    assert_eq!(gate["status"].as_deref(), Some("succeeded"), "{rows:#?}");
    let lease = archivebox_value(
        &collection,
        &format!("SELECT retry_at FROM crawls_crawl WHERE id = '{id}'"),
    );
    assert_eq!(lease, None, "no lease left on the sealed Crawl");

    // ArchiveBox's own `status` says what abxd's `show` says: every snapshot archived, none
    // pending, each directory there and matched by its row.
    let shown: serde_json::Value =
        serde_json::from_str(&daemon.ctl_ok(&["show", "--json", "1"])).unwrap();
    let (total, sealed) = (
        shown["crawl"]["snapshots"]["total"].as_u64().unwrap(),
        shown["crawl"]["snapshots"]["sealed"].as_u64().unwrap(),
    );
    assert_eq!((total, sealed), (1, 1), "{shown:#}");
    let status = run_archivebox(&archivebox, &collection, &["status"]);
    let count = |label: &str| -> Option<u64> {
        (status.lines()).find_map(|line| {
            let rest = line.trim().strip_prefix("> ")?.strip_prefix(label)?;
            rest.split_whitespace().next()?.parse().ok()
        })
    };
    let counted = [
        "indexed:",
        "archived:",
        "unarchived:",
        "present:",
        "valid:",
        "orphaned:",
    ]
    .map(count);
    assert_eq!(
        counted,
        [total, sealed, total - sealed, total, total, 0].map(Some),
        "{status}"
    );
    daemon.assert_nothing_survives();
}

/// A serving daemon holding a page at the gate: a Crawl of `headers,gate,title` queued with
/// `archivebox add --bg`, until ArchiveBox lists the headers hook succeeded and the gate
/// started. The setup, and the Crawl's id.
fn held_at_the_gate(archivebox: &Path) -> (Setup, String) {
    let mut setup = setup(archivebox, true);
    let plugins = ["add", "--bg", "--plugins", "headers,gate,title", &setup.url];
    run_archivebox(archivebox, &setup.collection, &plugins);
    let id = crawl_ids(&setup.collection).remove(0);
    setup.daemon.launch();
    let collection = &setup.collection;
    wait_until(
        "ArchiveBox to list headers succeeded and the gate started",
        CRAWL,
        || {
            let rows = archivebox_rows(
                collection,
                "SELECT hook_name, status FROM core_archiveresult ORDER BY hook_name",
            );
            let status = |hook: &str| {
                (rows.iter())
                    .find(|r| r["hook_name"].as_deref().is_some_and(|h| h.contains(hook)))
                    .and_then(|r| r["status"].clone())
            };
            (status("gate").as_deref() == Some("started")
                && status("headers").as_deref() == Some("succeeded"))
            .then_some(())
        },
    );
    (setup, id)
}

/// A hook's files reach the Snapshot's directory in ArchiveBox once its plugin's hooks ended,
/// not at the seal (so ArchiveBox's UI shows them, as under its own runner): while the gate
/// holds the page, the headers plugin's files are there, each one its result names, and no
/// index yet; at the seal, every plugin's files and the index are.
#[test]
fn a_plugins_files_reach_archivebox_as_its_hooks_end() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let (
        Setup {
            daemon,
            collection,
            flag,
            _gates,
            ..
        },
        id,
    ) = held_at_the_gate(&archivebox);
    let snapshot = archivebox_value(
        &collection,
        &format!("SELECT id FROM core_snapshot WHERE crawl_id = '{id}'"),
    )
    .unwrap();
    let files_sql = format!(
        "SELECT output_files FROM core_archiveresult WHERE snapshot_id = '{snapshot}' AND \
         plugin = 'headers'"
    );
    let named: serde_json::Value =
        serde_json::from_str(&archivebox_value(&collection, &files_sql).unwrap()).unwrap();
    let named: Vec<String> = named.as_object().unwrap().keys().cloned().collect();
    assert!(!named.is_empty(), "the headers result names its files");
    let dir = wait_until("the headers plugin's files in ArchiveBox", CRAWL, || {
        let dir = find_snapshot_dir(&collection, &snapshot)?;
        named
            .iter()
            .all(|file| dir.join("headers").join(file).is_file())
            .then_some(dir)
    });
    assert!(
        !dir.join("index.jsonl").exists(),
        "no index before the seal"
    );
    let gates = daemon.ps_json(false);
    assert!(
        gates.to_string().contains("gate"),
        "the gate still holds the page: {gates:#}"
    );

    std::fs::write(&flag, "").unwrap();
    wait_sealed_in_archivebox(&daemon, &collection, &id);
    for file in &named {
        assert!(dir.join("headers").join(file).is_file(), "{file}");
    }
    assert!(dir.join("title").is_dir() && dir.join("index.jsonl").is_file());
    daemon.assert_nothing_survives();
}

#[test]
fn serving_a_queue_without_a_collection_is_refused_naming_the_key() {
    let daemon = TestDaemon::prepare("[archivebox]\nserve_queue = true\n");
    let output = daemon.abxd_command(&["check-config"]).output().unwrap();
    assert!(!output.status.success());
    let stderr = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stderr),
        daemon.log()
    );
    assert!(stderr.contains("archivebox.serve_queue"), "{stderr}");
    assert!(stderr.contains("archivebox.data_dir"), "{stderr}");
}

/// An ArchiveBox runner started beside abxd yields to it: a foreground `archivebox add` (which
/// would run its Crawl with ArchiveBox's own runner) finds abxd's daemon the collection's
/// runner — the newest live one, which ArchiveBox's gate elects — stands by while abxd runs its
/// Crawl, and returns once it is sealed; no ArchiveBox runner entered the gate.
#[test]
fn a_foreground_archivebox_add_stands_by_while_abxd_runs_its_crawl() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let Setup {
        url,
        daemon,
        collection,
        ..
    } = the_collections_runner(&archivebox);
    let said = run_archivebox(
        &archivebox,
        &collection,
        &["add", "--plugins", "title", &url],
    );
    let id = crawl_ids(&collection).remove(0);
    let crawl_sql = format!("SELECT status FROM crawls_crawl WHERE id = '{id}'");
    assert_eq!(
        archivebox_value(&collection, &crawl_sql).as_deref(),
        Some("sealed"),
        "{said}"
    );
    assert_archived_by_abxd(&daemon, &collection, &id);
    let runners = archivebox_value(
        &collection,
        "SELECT count(*) FROM machine_process WHERE worker_type IN ('worker_runner', \
         'runner_waiting') AND json_extract(env, '$.ABXD_DAEMON') IS NULL",
    );
    assert_eq!(
        runners.as_deref(),
        Some("0"),
        "no ArchiveBox runner ran: {said}"
    );
    daemon.assert_nothing_survives();
}

/// A serving daemon (no gate) started, once it is the collection's runner there.
fn the_collections_runner(archivebox: &Path) -> Setup {
    let mut setup = setup(archivebox, false);
    setup.daemon.launch();
    wait_until("abxd to be the collection's runner", CRAWL, || {
        archivebox_value(&setup.collection, ABXD_RUNNER)
    });
    setup
}

/// ArchiveBox's Crawl `id` was run by abxd (its first crawl), the page's title written there.
fn assert_archived_by_abxd(daemon: &TestDaemon, collection: &Path, id: &str) {
    let crawl = daemon.store().crawls().get(1).unwrap();
    let served = crawl.and_then(|c| c.options.archivebox).map(|a| a.id);
    assert_eq!(served.as_deref(), Some(id), "abxd ran it");
    let title = archivebox_value(
        collection,
        &format!("SELECT title FROM core_snapshot WHERE crawl_id = '{id}'"),
    );
    assert_eq!(title.as_deref(), Some("The abxd test page"));
}

/// A runner of ArchiveBox's started by hand while abxd serves the collection (`archivebox
/// run`, which ArchiveBox's docs tell its users to run) finds abxd's daemon the newer runner in
/// ArchiveBox's gate and exits, taking nothing: a Crawl queued while abxd's daemon is stopped
/// (SIGSTOP: alive, but taking no turn) is left queued by it, and archived by abxd once the
/// daemon goes on. Without abxd's row in the gate, `archivebox run` archives that Crawl itself.
#[test]
fn an_archivebox_run_started_by_mistake_yields_to_abxd_and_takes_nothing() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let Setup {
        url,
        daemon,
        collection,
        ..
    } = the_collections_runner(&archivebox);
    let stopped = Stopped::new(&daemon);
    wait_until("the daemon's turn to end", CRAWL, || {
        common::children_of(daemon.pid()).is_empty().then_some(())
    });
    run_archivebox(
        &archivebox,
        &collection,
        &["add", "--bg", "--plugins", "title", &url],
    );
    let id = crawl_ids(&collection).remove(0);

    let said = run_archivebox_said(&archivebox, &collection, &["run", "--no-stdin"]);
    assert!(
        said.contains(&format!("Newer ArchiveBox runner pid={}", daemon.pid())),
        "{said}"
    );
    let crawl = &archivebox_rows(
        &collection,
        &format!(
            "SELECT status, (SELECT count(*) FROM core_snapshot WHERE crawl_id = c.id) AS \
             snapshots FROM crawls_crawl c WHERE id = '{id}'"
        ),
    )[0];
    assert_eq!(crawl["status"].as_deref(), Some("queued"), "{said}");
    assert_eq!(crawl["snapshots"].as_deref(), Some("0"), "{said}");

    drop(stopped);
    wait_sealed_in_archivebox(&daemon, &collection, &id);
    assert_archived_by_abxd(&daemon, &collection, &id);
    daemon.assert_nothing_survives();
}

/// A runner of ArchiveBox's that holds the collection before abxd serves it keeps it: abxd
/// claims nothing while it runs and says so, naming its pid, once; a Crawl queued meanwhile is
/// ArchiveBox's runner's to archive. Once that runner exits, abxd takes the gate and the next
/// Crawl is abxd's.
#[test]
fn an_archivebox_runner_already_running_keeps_the_collection_until_it_exits() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let Setup {
        url,
        mut daemon,
        collection,
        ..
    } = setup(&archivebox, false);
    let runner = Owned::start(&archivebox, &["run", "--daemon", "--no-stdin"], &collection);
    let theirs = "SELECT pid FROM machine_process WHERE worker_type = 'worker_runner' AND \
                  status = 'running' AND json_extract(env, '$.ABXD_DAEMON') IS NULL";
    let pid = wait_until("ArchiveBox's runner to hold the gate", CRAWL, || {
        archivebox_value(&collection, theirs)
    });
    daemon.launch();
    let said = format!("ArchiveBox's own runner (pid {pid}");
    wait_until("abxd to say who holds the collection", CRAWL, || {
        daemon.log().contains(&said).then_some(())
    });
    run_archivebox(
        &archivebox,
        &collection,
        // (A plugin ArchiveBox's runner needs no binary for: it installs none here.)
        &["add", "--bg", "--plugins", "hashes", &url],
    );
    let first = crawl_ids(&collection).remove(0);
    wait_sealed_in_archivebox(&daemon, &collection, &first);
    assert!(
        daemon.store().crawls().get(1).unwrap().is_none(),
        "abxd took nothing"
    );
    assert_eq!(archivebox_value(&collection, ABXD_RUNNER), None);
    let warned = (daemon.log().lines())
        .filter(|line| line.contains("WARN") && line.contains(&said))
        .count();
    assert_eq!(warned, 1, "said once while it lasts: {}", daemon.log());

    // (Killed: its row is left running, as a runner that died leaves it.)
    drop(runner);
    let other = format!("{url}other.html");
    run_archivebox(
        &archivebox,
        &collection,
        &["add", "--bg", "--plugins", "title", &other],
    );
    let second = crawl_ids(&collection).pop().unwrap();
    wait_sealed_in_archivebox(&daemon, &collection, &second);
    assert!(archivebox_value(&collection, ABXD_RUNNER).is_some());
    let served = (daemon.store().crawls().get(1).unwrap())
        .and_then(|c| c.options.archivebox)
        .map(|a| a.id);
    assert_eq!(served.as_deref(), Some(second.as_str()), "abxd ran it");
    daemon.assert_nothing_survives();
}

/// The daemon stopped (SIGSTOP) while this lives; continued (SIGCONT) when dropped, also when
/// the test fails.
struct Stopped(i32);

impl Stopped {
    fn new(daemon: &TestDaemon) -> Stopped {
        daemon.signal(nix::sys::signal::Signal::SIGSTOP);
        Stopped(daemon.pid())
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
    }
}

/// A long-running process of ArchiveBox's, started in the collection as its owner in a process
/// group of its own; its group killed when dropped, also when the test fails.
struct Owned(std::process::Child);

impl Owned {
    fn start(program: &Path, args: &[&str], collection: &Path) -> Owned {
        use std::os::unix::process::CommandExt;
        let user = common::hook_user();
        let child = std::process::Command::new(program)
            .args(args)
            .current_dir(collection)
            .env("HOME", collection)
            .env("DATA_DIR", collection)
            .env(common::TAG_ENV, "archivebox-test")
            .uid(user.uid.as_raw())
            .gid(user.gid.as_raw())
            .process_group(0)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        Owned(child)
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(-(self.0.id() as i32));
        let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// ArchiveBox's web UI alone, as docs/service.md has an operator run it beside abxd: Daphne
/// serving `archivebox.core.asgi:application` from the collection, as its owner — no runner of
/// ArchiveBox's.
struct WebUi {
    _daphne: Owned,
    port: u16,
}

impl WebUi {
    fn start(archivebox: &Path, collection: &Path) -> WebUi {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let python = archivebox.parent().unwrap().join("python");
        let port_arg = port.to_string();
        let args = ["-m", "daphne", "--bind", "127.0.0.1", "--port", &port_arg];
        let args = [&args[..], &["archivebox.core.asgi:application"]].concat();
        let daphne = Owned::start(&python, &args, collection);
        let ui = WebUi {
            _daphne: daphne,
            port,
        };
        wait_until("ArchiveBox's web UI to answer", CRAWL, || {
            ui.request("GET", "/api/v1/docs", "", "").ok()
        });
        ui
    }

    /// One HTTP/1.0 request; the response's status line and body.
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &str,
        body: &str,
    ) -> std::io::Result<String> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        write!(
            stream,
            "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        Ok(response)
    }
}

/// A Crawl created through ArchiveBox's REST API, over HTTP to its web UI running alone (Daphne,
/// no runner of its own), is archived by abxd: sealed there with its tags and title. Paused and
/// resumed through the same API (`PATCH /crawl/ID`, the calls its UI makes), abxd's crawl is
/// paused and resumed within a turn.
#[test]
fn a_crawl_created_and_paused_through_archiveboxs_rest_api_is_followed_by_abxd() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let Setup {
        url,
        mut daemon,
        collection,
        flag,
        _gates,
    } = setup(&archivebox, true);
    let python = archivebox.parent().unwrap().join("python");
    let token = common::archivebox::run_python(
        &python,
        &collection,
        "from archivebox.config.django import setup_django; setup_django(); \
         from archivebox.api.models import APIToken; print(APIToken.objects.create().token)",
    );
    let token = token.lines().last().unwrap().trim().to_string();
    let ui = WebUi::start(&archivebox, &collection);
    daemon.launch();

    let body = serde_json::json!({
        "urls": [url], "max_depth": 0, "tags_str": "from-the-api",
        "config": {"PLUGINS": "gate,title,headers"},
    })
    .to_string();
    let headers = format!("X-ArchiveBox-API-Key: {token}\r\nContent-Type: application/json\r\n");
    let created = ui
        .request("POST", "/api/v1/crawls/crawls", &headers, &body)
        .unwrap();
    assert!(
        created.starts_with("HTTP/1.1 200") || created.starts_with("HTTP/1.0 200"),
        "{created}"
    );
    let id = crawl_ids(&collection).remove(0);
    let paused = |daemon: &TestDaemon| {
        let shown = daemon.ctl_ok(&["show", "--json", "1"]);
        let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
        !shown["crawl"]["paused_at"].is_null()
    };
    wait_until("abxd to run the gate", CRAWL, || {
        let rows = daemon.ps_json(false);
        (rows["processes"].as_array()?.iter())
            .any(|row| row["argv"].to_string().contains("gate"))
            .then_some(())
    });
    for (action, want) in [("pause", true), ("resume", false)] {
        let body = format!("{{\"action\": \"{action}\"}}");
        let said = ui.request(
            "PATCH",
            &format!("/api/v1/crawls/crawl/{id}"),
            &headers,
            &body,
        );
        assert!(said.as_deref().unwrap().contains(" 200 "), "{said:?}");
        wait_until(
            &format!("abxd to follow ArchiveBox's {action}"),
            CRAWL,
            || (paused(&daemon) == want).then_some(()),
        );
    }
    std::fs::write(&flag, "").unwrap();
    wait_sealed_in_archivebox(&daemon, &collection, &id);
    let snapshot = &archivebox_rows(
        &collection,
        &format!("SELECT id, title FROM core_snapshot WHERE crawl_id = '{id}'"),
    )[0];
    assert_eq!(snapshot["title"].as_deref(), Some("The abxd test page"));
    let results = archivebox_rows(
        &collection,
        &format!(
            "SELECT hook_name, status FROM core_archiveresult WHERE snapshot_id = '{}' \
             ORDER BY hook_name",
            snapshot["id"].as_deref().unwrap()
        ),
    );
    let statuses: Vec<(&str, &str)> = (results.iter())
        .map(|r| {
            (
                r["hook_name"].as_deref().unwrap(),
                r["status"].as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("on_Snapshot__10_headers", "succeeded"),
            ("on_Snapshot__15_gate", "succeeded"),
            ("on_Snapshot__20_title", "succeeded")
        ]
    );
    drop(ui);
    daemon.assert_nothing_survives();
}

/// A schedule made with ArchiveBox's own `archivebox schedule` comes due with no runner of
/// ArchiveBox's: abxd dispatches it as ArchiveBox's runner loop does, and archives the Crawl it
/// queues.
#[test]
fn a_schedule_made_in_archivebox_is_dispatched_and_archived_by_abxd() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let Setup {
        url,
        mut daemon,
        collection,
        ..
    } = setup(&archivebox, false);
    let every_minute = [
        "schedule",
        "--add",
        "--every",
        "* * * * *",
        "-t",
        "scheduled",
        &url,
    ];
    run_archivebox(&archivebox, &collection, &every_minute);
    daemon.launch();
    // (Due at the next minute.)
    let dispatched = wait_until("abxd to archive a Crawl the schedule queued", CRAWL, || {
        let rows = archivebox_rows(
            &collection,
            "SELECT c.id FROM crawls_crawl c JOIN core_snapshot s ON s.crawl_id = c.id \
             WHERE c.schedule_id IS NOT NULL AND c.status = 'sealed' AND s.status = 'sealed' \
             AND s.title IS NOT NULL",
        );
        rows.first().and_then(|row| row["id"].clone())
    });
    let tags = archivebox_value(
        &collection,
        &format!(
            "SELECT t.name FROM core_snapshot s JOIN core_snapshot_tags st ON st.snapshot_id = \
             s.id JOIN core_tag t ON t.id = st.tag_id WHERE s.crawl_id = '{dispatched}'"
        ),
    );
    assert_eq!(tags.as_deref(), Some("scheduled"));
    let ours = daemon.ctl_ok(&["crawls"]);
    assert!(ours.contains("[ArchiveBox]"), "{ours}");
    daemon.assert_nothing_survives();
}

/// ArchiveBox's database locked (as its UI holds it while it writes) while abxd's crawl ends:
/// ArchiveBox's side of the turn waits for the lock (a separate process: abxd's loop goes on),
/// and once the lock is gone ArchiveBox holds every result — delayed, none lost. (Held past
/// ArchiveBox's own 61 s of retries, a turn fails and the next one writes it: every write of a
/// turn is idempotent.)
#[test]
fn a_locked_archivebox_database_delays_what_abxd_writes_back_and_loses_nothing() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let Setup {
        url,
        mut daemon,
        collection,
        flag,
        _gates,
    } = setup(&archivebox, true);
    run_archivebox(
        &archivebox,
        &collection,
        &["add", "--bg", "--plugins", "gate,title,headers", &url],
    );
    let id = crawl_ids(&collection).remove(0);
    daemon.launch();
    wait_until("ArchiveBox to list the gate started", CRAWL, || {
        let status = archivebox_value(
            &collection,
            "SELECT status FROM core_archiveresult WHERE hook_name LIKE '%gate%'",
        );
        (status.as_deref() == Some("started")).then_some(())
    });

    // The lock, held while abxd's crawl ends and a turn tries to write it back.
    let lock = rusqlite::Connection::open(collection.join("index.sqlite3")).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    std::fs::write(&flag, "").unwrap();
    daemon.wait_sealed(1, CRAWL);
    let turns = |log: &str| {
        log.matches("ArchiveBox's queue: ArchiveBox's side of the turn")
            .count()
    };
    let before = turns(&daemon.log());
    wait_until(
        "a turn to start while the database is locked",
        CRAWL,
        || (turns(&daemon.log()) > before).then_some(()),
    );
    let started = archivebox_value(
        &collection,
        "SELECT count(*) FROM core_archiveresult WHERE status = 'started'",
    );
    assert_eq!(
        started.as_deref(),
        Some("1"),
        "nothing written while locked"
    );
    lock.execute_batch("COMMIT").unwrap();
    drop(lock);

    wait_sealed_in_archivebox(&daemon, &collection, &id);
    let statuses: Vec<(String, String)> = (archivebox_rows(
        &collection,
        "SELECT hook_name, status FROM core_archiveresult ORDER BY hook_name",
    )
    .iter())
    .map(|r| {
        (
            r["hook_name"].clone().unwrap(),
            r["status"].clone().unwrap(),
        )
    })
    .collect();
    assert_eq!(
        statuses,
        [
            (
                "on_Snapshot__10_headers".to_string(),
                "succeeded".to_string()
            ),
            ("on_Snapshot__15_gate".into(), "succeeded".into()),
            ("on_Snapshot__20_title".into(), "succeeded".into()),
        ]
    );
    daemon.assert_nothing_survives();
}

/// Pages abxd makes at once — the links one hook reports, added in one transaction — each become
/// a Snapshot in ArchiveBox, whose `timestamp` must be unique: every page is sealed there, one
/// level below the page that found it, that page its `parent_snapshot` (as ArchiveBox's runner
/// links a discovered Snapshot).
#[test]
fn every_page_one_hook_discovers_at_once_is_a_snapshot_in_archivebox_under_its_parent() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let base = format!("http://{}/", serve_test_site());
    let placeholder = TestDaemon::prepare("");
    let plugins = placeholder.dir.path().join("many-plugins");
    common::plugin(
        &plugins,
        "many",
        "on_Snapshot__12_many.sh",
        &format!(
            "case \"$*\" in *--depth=0*) for page in a b c d; do\n\
             echo '{{\"type\":\"Snapshot\",\"url\":\"{base}'$page'.html\"}}'; done;; esac\n\
             echo '{{\"type\":\"ArchiveResult\",\"status\":\"succeeded\"}}'\n"
        ),
    );
    let config = format!(
        "{}[crawl]\negress = \"unrestricted\"\n",
        plugins_config(&[&plugins])
    );
    let (mut daemon, collection) =
        serving(&archivebox, |d| new_collection(&archivebox, d), &config);
    run_archivebox(
        &archivebox,
        &collection,
        &["add", "--bg", "-d", "1", "-pmany", &base],
    );
    let id = crawl_ids(&collection).remove(0);
    daemon.launch();
    wait_sealed_in_archivebox(&daemon, &collection, &id);
    let found: Vec<(String, String, Option<String>)> = archivebox_rows(
        &collection,
        &format!(
            "SELECT s.url, s.depth, p.url AS parent FROM core_snapshot s LEFT JOIN \
             core_snapshot p ON p.id = s.parent_snapshot_id WHERE s.crawl_id = '{id}' \
             ORDER BY s.url"
        ),
    )
    .into_iter()
    .map(|row| {
        let text = |column: &str| row[column].clone();
        (text("url").unwrap(), text("depth").unwrap(), text("parent"))
    })
    .collect();
    // The seed, then what its hook found: one level deeper, the seed their parent.
    let mut want = vec![(base.clone(), "0".to_string(), None)];
    for page in ["a.html", "b.html", "c.html", "d.html"] {
        want.push((format!("{base}{page}"), "1".into(), Some(base.clone())));
    }
    assert_eq!(found, want);
    daemon.assert_nothing_survives();
}

/// Pages re-archived from ArchiveBox's UI are run again by abxd, into the same Snapshot: its
/// "Redo failed" (`retry_failed_archiveresults`, what the admin action calls) runs again only
/// the plugins that failed, and their new files replace the old ones in the Snapshot's
/// directory; its "Redo" (`archive(overwrite=True)`) runs the whole page again; and a Snapshot
/// ArchiveBox's own runner made before abxd served the queue is redone by abxd the same way.
/// Each stays one Snapshot, sealed and let go of, its Crawl sealed.
#[test]
fn a_snapshot_re_archived_from_archiveboxs_ui_is_run_again_by_abxd_into_the_same_snapshot() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let url = format!("http://{}/", serve_test_site());
    let other = format!("{url}other.html");
    let flaky = TestDaemon::prepare("");
    std::fs::set_permissions(flaky.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let fixed = flaky.dir.path().join("fixed");
    let flaky_root = flaky.dir.path().join("plugins");
    common::plugin(
        &flaky_root,
        "flaky",
        "on_Snapshot__20_flaky.sh",
        &format!(
            "if [ -e {fixed} ]; then echo fixed > ran.txt\n\
             echo '{{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"fixed\"}}'\n\
             else echo broken > ran.txt\n\
             echo '{{\"type\":\"ArchiveResult\",\"status\":\"failed\",\"output_str\":\"not yet\"}}'\n\
             exit 1; fi\n",
            fixed = fixed.display()
        ),
    );
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins");
    let config = format!(
        "{}[crawl]\negress = \"unrestricted\"\n",
        plugins_config(&[&flaky_root, &bundled])
    );
    let (mut daemon, collection) =
        serving(&archivebox, |d| new_collection(&archivebox, d), &config);
    let python = archivebox.parent().unwrap().join("python");
    let redo = |snapshot: &str, call: &str| {
        common::archivebox::run_python(
            &python,
            &collection,
            &format!(
                "from archivebox.config.django import setup_django; setup_django(); \
                 from archivebox.core.models import Snapshot; \
                 Snapshot.objects.get(id='{snapshot}').{call}"
            ),
        )
    };
    let value = |sql: String| archivebox_value(&collection, &sql);
    let result_of = |snapshot: &str, plugin: &str| {
        archivebox_rows(
            &collection,
            &format!(
                "SELECT r.status, r.end_ts, p.cmd FROM core_archiveresult r LEFT JOIN \
                 machine_process p ON p.id = r.process_id WHERE r.snapshot_id = '{snapshot}' \
                 AND r.plugin = '{plugin}'"
            ),
        )
        .remove(0)
    };
    let settled = |snapshot: &str| {
        let sql = format!(
            "SELECT s.status || ' ' || coalesce(s.retry_at, '-') || ' ' || c.status || ' ' || \
             (s.downloaded_at IS NOT NULL) FROM core_snapshot s JOIN crawls_crawl c \
             ON c.id = s.crawl_id WHERE s.id = '{snapshot}'"
        );
        value(sql).as_deref() == Some("sealed - sealed 1")
    };

    // A page ArchiveBox's own runner archives (a foreground `add`), before abxd serves.
    run_archivebox(
        &archivebox,
        &collection,
        &["add", "-d", "0", "-pwget", &other],
    );
    let own_snapshot = value(format!(
        "SELECT id FROM core_snapshot WHERE url = '{other}'"
    ))
    .unwrap();
    let own_wget = result_of(&own_snapshot, "wget");

    daemon.launch();
    run_archivebox(
        &archivebox,
        &collection,
        &["add", "--bg", "-d", "0", "--plugins", "flaky,title", &url],
    );
    let crawl = crawl_ids(&collection).pop().unwrap();
    wait_sealed_in_archivebox(&daemon, &collection, &crawl);
    let snapshot = value(format!(
        "SELECT id FROM core_snapshot WHERE crawl_id = '{crawl}'"
    ))
    .unwrap();
    assert_eq!(
        result_of(&snapshot, "flaky")["status"].as_deref(),
        Some("failed")
    );
    let ran = snapshot_dir(&collection, &snapshot).join("flaky/ran.txt");
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "broken\n");
    let title = result_of(&snapshot, "title");

    // "Redo failed": only the plugin that failed runs again, its files replacing the old ones.
    std::fs::write(&fixed, "").unwrap();
    redo(&snapshot, "retry_failed_archiveresults()");
    wait_until("the failed plugin to be run again", CRAWL, || {
        let done = result_of(&snapshot, "flaky")["status"].as_deref() == Some("succeeded");
        (done && settled(&snapshot)).then_some(())
    });
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "fixed\n");
    assert_eq!(result_of(&snapshot, "title"), title, "title ran again");
    let config = value(format!(
        "SELECT config FROM core_snapshot WHERE id = '{snapshot}'"
    ));
    assert!(
        !config.clone().unwrap_or_default().contains("RETRY_PLUGINS"),
        "{config:?}"
    );

    // "Redo": the whole page again, the same Snapshot.
    redo(&snapshot, "archive(overwrite=True)");
    wait_until("the page to be archived again", CRAWL, || {
        let again = result_of(&snapshot, "title")["end_ts"] > title["end_ts"];
        (again && settled(&snapshot)).then_some(())
    });

    // A Snapshot ArchiveBox's runner made: redone by abxd, its hook's process abxd's.
    redo(&own_snapshot, "archive(overwrite=True)");
    wait_until(
        "ArchiveBox's own snapshot to be archived again",
        CRAWL,
        || {
            let again = result_of(&own_snapshot, "wget")["end_ts"] > own_wget["end_ts"];
            (again && settled(&own_snapshot)).then_some(())
        },
    );
    let wget = result_of(&own_snapshot, "wget");
    assert_eq!(wget["status"].as_deref(), Some("succeeded"), "{wget:?}");
    assert!(
        (wget["cmd"].as_deref().unwrap_or_default()).contains(&bundled.display().to_string()),
        "not abxd's hook: {wget:?}"
    );
    let sql = "SELECT url, count(*) AS n FROM core_snapshot GROUP BY url ORDER BY url";
    let counts: Vec<(Option<String>, Option<String>)> = (archivebox_rows(&collection, sql).iter())
        .map(|row| (row["url"].clone(), row["n"].clone()))
        .collect();
    assert_eq!(
        counts,
        [
            (Some(url.clone()), Some("1".into())),
            (Some(other.clone()), Some("1".into()))
        ]
    );
    // abxd ran a crawl for each: the first, and a redo of each Snapshot.
    let crawls = daemon.store().crawls().all().unwrap();
    assert_eq!(crawls.len(), 4, "{crawls:#?}");
    let last = daemon.store().crawls().snapshots(crawls[3].id).unwrap();
    assert_eq!(last[0].uuid.as_deref(), Some(own_snapshot.as_str()));
    daemon.assert_nothing_survives();
}
