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
    let user = hook_user();
    let output = std::process::Command::new(archivebox)
        .args(args)
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
        "archivebox {args:?}: {}\n{stdout}\n{stderr}",
        output.status
    );
    stdout
}

/// Runs `code` with ArchiveBox's Python (`python`) in `collection`, as its owner — what
/// ArchiveBox's web UI does in its own process (a cancel, a pause) without a browser.
pub fn run_python(python: &Path, collection: &Path, code: &str) -> String {
    let user = hook_user();
    let output = std::process::Command::new(python)
        .args(["-c", code])
        .current_dir(collection)
        .env("HOME", collection)
        .env("DATA_DIR", collection)
        .env(super::TAG_ENV, "archivebox-test")
        .uid(user.uid.as_raw())
        .gid(user.gid.as_raw())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "python -c {code:?}: {said}");
    said
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
