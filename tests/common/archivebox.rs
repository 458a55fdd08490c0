//! ArchiveBox 0.9.73 itself, run as an ArchiveBox user runs it: found where `.ci/run` installs it
//! (or at `$ABXD_ARCHIVEBOX`), always as an unprivileged user — started as root, ArchiveBox makes
//! a system user of its own and switches to it.
//!
//! Invariant: in CI a test that needs ArchiveBox fails without it; elsewhere it says it skips.

use super::{hook_user, TestDaemon};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// Where `.ci/run` installs ArchiveBox 0.9.73 (readable by an unprivileged user).
pub const CI_ARCHIVEBOX: &str = "/var/cache/abxd-ci/archivebox-0.9.73/bin/archivebox";

/// The `archivebox` program, or `None` (outside CI only) when it is not installed.
pub fn archivebox() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var("ABXD_ARCHIVEBOX").unwrap_or(CI_ARCHIVEBOX.into()));
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "ArchiveBox 0.9.73 must be at {} in CI (.ci/run installs it)",
        path.display()
    );
    eprintln!(
        "skipped: no ArchiveBox at {} (set ABXD_ARCHIVEBOX, or run .ci/run once)",
        path.display()
    );
    None
}

/// An empty directory in the daemon's dir, given to [`HOOK_USER`].
pub fn collection_dir(daemon: &TestDaemon) -> PathBuf {
    let user = hook_user();
    let dir = daemon.path("archivebox");
    std::fs::create_dir_all(&dir).unwrap();
    nix::unistd::chown(&dir, Some(user.uid), Some(user.gid)).unwrap();
    dir
}

/// Runs ArchiveBox in `collection` as its owner, as that user would; returns its stdout.
pub fn run_archivebox(archivebox: &Path, collection: &Path, args: &[&str]) -> String {
    archivebox_output(archivebox, collection, args).0
}

/// Runs ArchiveBox as [`run_archivebox`] does; returns all it printed (stdout, then stderr).
pub fn run_archivebox_said(archivebox: &Path, collection: &Path, args: &[&str]) -> String {
    let (stdout, stderr) = archivebox_output(archivebox, collection, args);
    format!("{stdout}{stderr}")
}

fn archivebox_output(archivebox: &Path, collection: &Path, args: &[&str]) -> (String, String) {
    let mut command = std::process::Command::new(archivebox);
    command.args(args);
    as_owner(command, collection, &format!("archivebox {args:?}"))
}

/// Runs `code` with ArchiveBox's Python (`python`) in `collection`, as its owner — what
/// ArchiveBox's web UI does in its own process (a cancel, a pause) without a browser; returns
/// what it printed.
pub fn run_python(python: &Path, collection: &Path, code: &str) -> String {
    let mut command = std::process::Command::new(python);
    command.args(["-c", code]).env("DATA_DIR", collection);
    let (stdout, stderr) = as_owner(command, collection, &format!("python -c {code:?}"));
    format!("{stdout}{stderr}")
}

/// Runs `command` in `collection` as the collection's owner ([`HOOK_USER`]), to its end, which
/// must be a success (`what` names it if not); returns its stdout and stderr.
fn as_owner(mut command: std::process::Command, collection: &Path, what: &str) -> (String, String) {
    let user = hook_user();
    let output = command
        .current_dir(collection)
        .env("HOME", collection)
        .env(super::TAG_ENV, "archivebox-test")
        .uid(user.uid.as_raw())
        .gid(user.gid.as_raw())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    );
    assert!(
        output.status.success(),
        "{what}: {}\n{stdout}\n{stderr}",
        output.status
    );
    (stdout, stderr)
}

/// The JSON records a listing of ArchiveBox's prints, one a line.
pub fn records(listing: &str) -> Vec<serde_json::Value> {
    (listing.lines())
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// What an ArchiveBox user does once: a collection in the daemon's dir, owned by [`HOOK_USER`],
/// with a search backend that installs offline (sonic, the default, cannot be had from the
/// registries this machine reaches: said in the test's output).
pub fn new_collection(archivebox: &Path, daemon: &TestDaemon) -> PathBuf {
    let collection = collection_dir(daemon);
    run_archivebox(archivebox, &collection, &["init"]);
    for setting in [
        "SEARCH_BACKEND_ENGINE=ripgrep",
        "SEARCH_BACKEND_SONIC_ENABLED=False",
    ] {
        run_archivebox(archivebox, &collection, &["config", "--set", setting]);
        eprintln!("(this machine's registries lack sonic: ArchiveBox set {setting})");
    }
    collection
}

/// ArchiveBox's own listing of its results: (hook name, status), sorted.
pub fn listed_results(archivebox: &Path, collection: &Path) -> Vec<(String, String)> {
    let listed = records(&run_archivebox(
        archivebox,
        collection,
        &["archiveresult", "list"],
    ));
    let mut statuses: Vec<(String, String)> = (listed.iter())
        .filter(|r| r["type"] == "ArchiveResult")
        .map(|r| {
            (
                r["hook_name"].as_str().unwrap().into(),
                r["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    statuses.sort();
    statuses
}

/// `abxctl export --archivebox COLLECTION --wait CRAWL`, as a user follows an export to its end:
/// whether it succeeded, and what it printed (stdout, then stderr).
pub fn export_and_wait(
    daemon: &TestDaemon,
    collection: &Path,
    crawl: i64,
) -> (bool, String, String) {
    let target = collection.display().to_string();
    let output = daemon
        .ctl_command(&[
            "export",
            "--archivebox",
            &target,
            "--wait",
            &crawl.to_string(),
        ])
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

/// A row of ArchiveBox's index, as column → value (`None`: NULL or empty).
pub type Row = std::collections::BTreeMap<String, Option<String>>;

/// Each row of `sql` in ArchiveBox's index, as column → value (`None`: NULL or empty).
pub fn archivebox_rows(collection: &Path, sql: &str) -> Vec<Row> {
    let db = rusqlite::Connection::open_with_flags(
        collection.join("index.sqlite3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    db.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
    let mut statement = db.prepare(sql).unwrap();
    let names: Vec<String> = (statement.column_names().into_iter())
        .map(String::from)
        .collect();
    let rows = statement.query_map([], |row| {
        let mut values = std::collections::BTreeMap::new();
        for (n, name) in names.iter().enumerate() {
            let value = match row.get_ref(n)? {
                rusqlite::types::ValueRef::Null => None,
                rusqlite::types::ValueRef::Integer(i) => Some(i.to_string()),
                rusqlite::types::ValueRef::Real(r) => Some(r.to_string()),
                rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                    Some(String::from_utf8_lossy(t).to_string()).filter(|t| !t.is_empty())
                }
            };
            values.insert(name.clone(), value);
        }
        Ok(values)
    });
    rows.unwrap().map(Result::unwrap).collect()
}

/// The columns `own` fills that `ours` leaves empty.
pub fn left_empty(own: &Row, ours: &Row) -> Vec<String> {
    (own.iter())
        .filter(|(name, value)| value.is_some() && ours.get(*name).is_none_or(Option::is_none))
        .map(|(name, value)| format!("{name} (ArchiveBox's own: {})", value.as_deref().unwrap()))
        .collect()
}
