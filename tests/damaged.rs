//! A damaged database: the daemon refuses it at start with what is wrong and how to recover
//! (never a panic, nothing left running), `abxd store check` lists the damage, `abxd store
//! recover` copies what can be read into a new file the daemon starts on, and `abxd store
//! backup` makes a consistent copy while a crawl runs.

mod common;

use abxd::domain::Kind;
use abxd::store::{NewProcess, Store};
use common::{plugin, plugins_config, wait_until, TestDaemon, WAIT};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

/// How many process rows the stores below hold: enough for a few hundred pages.
const ROWS: usize = 3_000;

/// A daemon, not started, whose data dir holds a store of [`ROWS`] process rows written as a
/// daemon writes them; the store's path.
fn daemon_with_history() -> (TestDaemon, std::path::PathBuf) {
    let daemon = TestDaemon::prepare("");
    std::fs::create_dir_all(daemon.data_dir()).unwrap();
    let path = daemon.database();
    fill(&path);
    (daemon, path)
}

/// [`ROWS`] process rows into the store at `path`.
fn fill(path: &Path) {
    fill_with(path, 4);
}

/// [`ROWS`] process rows, each with `words` words of argv, into the store at `path`.
fn fill_with(path: &Path, words: usize) {
    let store = Store::open(path).unwrap();
    store.batch(|store| {
        for n in 0..ROWS {
            let row = NewProcess {
                parent_id: None,
                kind: Kind::Hook,
                crawl_id: None,
                snapshot_id: None,
                result_id: None,
                argv: vec![format!("/plugins/p/on_Snapshot__10_hook_{n}.sh"); words],
                cwd: "/".into(),
                timeout_ms: None,
            };
            store.processes().insert(&row).unwrap();
        }
    });
    store.file().truncate_wal().unwrap();
}

/// Runs `abxd ARGS` on `daemon`'s config to its end: its exit code and what it printed (stdout
/// and the log).
fn abxd(daemon: &TestDaemon, args: &[&str]) -> (i32, String) {
    let output = daemon
        .abxd_command(args)
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        daemon.log()
    );
    assert!(!printed.contains("panicked"), "{printed}");
    (output.status.code().unwrap_or(-1), printed)
}

/// Runs `abxd store recover` into `recovered.sqlite3` in `daemon`'s dir: its exit code, what it
/// printed, and that path.
fn recover(daemon: &TestDaemon) -> (i32, String, std::path::PathBuf) {
    let recovered = daemon.dir.path().join("recovered.sqlite3");
    let (code, said) = abxd(
        daemon,
        &["store", "recover", "--to", recovered.to_str().unwrap()],
    );
    (code, said, recovered)
}

/// How many process rows the store at `path` holds.
fn process_rows(path: &Path) -> usize {
    let store = Store::open_read_only(path).unwrap();
    store.processes().list(&Default::default()).unwrap().len()
}

/// The daemon refuses to start on its store, naming the file, `what`, and the recovery.
fn assert_refused(daemon: &mut TestDaemon, path: &Path, what: &str) {
    daemon.launch_expecting_failure();
    let log = daemon.log();
    assert!(!log.contains("panicked"), "{log}");
    for said in [
        &format!("database {} is damaged", path.display()),
        what,
        "abxd store check",
        "abxd store recover --to NEW",
    ] {
        assert!(log.contains(said), "{said:?} not in: {log}");
    }
}

#[test]
fn a_truncated_database_is_refused_at_start_naming_what_is_wrong() {
    let (mut daemon, path) = daemon_with_history();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let len = file.metadata().unwrap().len();
    file.set_len(len / 2).unwrap();
    assert_refused(&mut daemon, &path, "is truncated");
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        len / 2,
        "the file is left as it was"
    );
    let (code, said) = abxd(&daemon, &["store", "check"]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("truncated"), "{said}");
    // What lay in the first half is recovered; the rest is said to be out of reach.
    let (code, said, recovered) = recover(&daemon);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("could not be reached"), "{said}");
    let kept = process_rows(&recovered);
    assert!(kept > 0 && kept < ROWS, "{kept} of {ROWS}: {said}");
    assert!(!daemon.dir.path().join("recovered.sqlite3.reading").exists());
}

#[test]
fn a_file_whose_schema_is_lost_is_said_to_hold_nothing_recoverable() {
    let daemon = TestDaemon::prepare("");
    std::fs::create_dir_all(daemon.data_dir()).unwrap();
    let path = daemon.database();
    drop(Store::open(&path).unwrap());
    // Its first pages kept, the schema's later ones cut off.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(4 * 4096).unwrap();
    let (code, said, recovered) = recover(&daemon);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("nothing can be recovered"), "{said}");
    assert!(said.contains("its schema cannot be read"), "{said}");
    assert!(
        !recovered.exists(),
        "no file is left of a recovery that failed"
    );
    assert!(!daemon.dir.path().join("recovered.sqlite3.reading").exists());
}

#[test]
fn a_flipped_page_is_refused_at_start_listed_by_check_and_recovered_into_a_new_file() {
    let (mut daemon, path) = daemon_with_history();
    // A page in the middle of the file, one of the process table's: its bytes inverted.
    let page = 4096u64;
    let pages = std::fs::metadata(&path).unwrap().len() / page;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let at = (pages / 2) * page;
    let mut bytes = vec![0u8; page as usize];
    use std::io::Read;
    file.seek(SeekFrom::Start(at)).unwrap();
    file.read_exact(&mut bytes).unwrap();
    for byte in &mut bytes {
        *byte = !*byte;
    }
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(&bytes).unwrap();
    drop(file);
    assert_refused(&mut daemon, &path, "quick check");

    let (code, said) = abxd(&daemon, &["store", "check"]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("is damaged"), "{said}");

    let (code, said, recovered) = recover(&daemon);
    assert_eq!(code, 0, "{said}");
    let kept = process_rows(&recovered);
    assert!(
        kept > 0 && kept < ROWS,
        "{kept} rows kept of {ROWS}: {said}"
    );
    assert!(said.contains("could not be read"), "{said}");
    assert!(said.contains(&format!("processes: {kept} rows")), "{said}");

    // The new file is whole, and the daemon starts on it.
    std::fs::rename(&recovered, &path).unwrap();
    let (code, said) = abxd(&daemon, &["store", "check"]);
    assert_eq!(code, 0, "{said}");
    daemon.launch();
    daemon.ctl_ok(&["status"]);
}

#[test]
fn a_wal_from_another_database_is_refused_at_start() {
    let (mut daemon, path) = daemon_with_history();
    // Another store's log (its pages laid out otherwise: rows three times as long), with
    // commits it never copied into its file, put beside this one.
    let other = daemon.dir.path().join("other.sqlite3");
    fill_with(&other, 12);
    let writer = rusqlite::Connection::open(&other).unwrap();
    writer
        .execute_batch(
            "PRAGMA wal_autocheckpoint = 0; \
             UPDATE processes SET argv = '[\"rewritten\"]', cwd = '/elsewhere'; \
             DELETE FROM processes WHERE id % 3 = 0;",
        )
        .unwrap();
    let wal = |db: &Path| std::path::PathBuf::from(format!("{}-wal", db.display()));
    std::fs::copy(wal(&other), wal(&path)).unwrap();
    drop(writer);
    let before = std::fs::read(&path).unwrap();
    assert_refused(&mut daemon, &path, "quick check");
    assert!(
        std::fs::read(&path).unwrap() == before,
        "the other log was never written into the file"
    );
}

#[test]
fn a_backup_made_while_a_crawl_runs_is_whole_and_holds_the_crawl() {
    let placeholder = TestDaemon::prepare("");
    let plugins = placeholder.dir.path().join("plugins-slow");
    plugin(
        &plugins,
        "slow",
        "on_Snapshot__10_slow.sh",
        "sleep 60\necho '{\"type\":\"ArchiveResult\",\"status\":\"succeeded\"}'\n",
    );
    let mut daemon = TestDaemon::prepare(&plugins_config(&[&plugins]));
    daemon.launch();
    let crawl = daemon.add(&["http://127.0.0.1:9/"]);
    wait_until("the slow hook to run", WAIT, || {
        let rows = daemon.ps_json(false);
        rows.to_string().contains("slow").then_some(())
    });
    let copy = daemon.dir.path().join("backup.sqlite3");
    let (code, said) = abxd(&daemon, &["store", "backup", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{said}");
    let (code, said) = abxd(&daemon, &["store", "backup", copy.to_str().unwrap()]);
    assert_eq!(code, 2, "a backup never overwrites: {said}");
    let checked = abxd::store::check_file(&copy).unwrap();
    assert!(checked.is_empty(), "{checked:?}");
    let backup = Store::open_read_only(&copy).unwrap();
    assert!(backup.crawls().get(crawl).unwrap().is_some());
    daemon.ctl_ok(&["cancel", &crawl.to_string()]);
}
