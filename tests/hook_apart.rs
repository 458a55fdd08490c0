//! Hooks apart from the daemon: a daemon that is not root, given the capabilities the packaged
//! unit gives abxd (CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_KILL), runs its hooks as
//! `hooks.user` — a user that cannot open its database, use its socket, signal its workers or
//! write into a crawl that sealed — and still reads what they wrote. The same hook as the
//! daemon's own user does all of that (so the test can fail). The same hook
//! (`tests/fixtures/escape`), cgroups and BPF included, is tried under the real unit by
//! `packaging/check-service.sh`.

mod common;

use common::{daemon_user, fixtures, plugins_config, TestDaemon, HOOK_USER, WAIT};
use std::os::unix::fs::PermissionsExt;

/// What the escape hook of crawl `crawl` found.
fn report(daemon: &TestDaemon, crawl: i64) -> serde_json::Value {
    let pattern = daemon.data_dir().join(format!("crawls/{crawl}/snapshots"));
    let snapshot = std::fs::read_dir(&pattern)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let text = std::fs::read_to_string(snapshot.path().join("escape/escape.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn crawl(daemon: &TestDaemon) -> i64 {
    let crawl = daemon.add(&["--plugins", "escape", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, WAIT);
    let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
    assert!(
        shown.contains("succeeded"),
        "abxd did not read its hook's result: {shown}"
    );
    crawl
}

#[test]
fn a_daemon_with_the_units_capabilities_runs_hooks_as_a_user_that_cannot_reach_it() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED: making users and starting a daemon as one needs root");
        return;
    }
    let owner = daemon_user();
    let hooks = nix::unistd::User::from_name(HOOK_USER).unwrap().unwrap();
    let mut daemon = TestDaemon::prepare("");
    // (The hook that tries each way out, copied where the hook user reaches it.)
    let hook = "escape/on_Snapshot__10_escape.py";
    std::fs::create_dir_all(daemon.path("plugins/escape")).unwrap();
    std::fs::copy(
        fixtures().join("escape").join(hook),
        daemon.path("plugins").join(hook),
    )
    .unwrap();
    let plugins = plugins_config(&[&daemon.path("plugins")]);
    let config =
        |user: &str| format!("{plugins}[hooks]\n{user}[crawl]\negress = \"unrestricted\"\n");
    daemon.write_config(&config(&format!("user = \"{HOOK_USER}\"\n")));
    daemon.run_as_with_capabilities(&owner, "+setuid,+setgid,+chown,+kill");
    std::fs::set_permissions(daemon.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    daemon.launch();
    let status = daemon.ctl_ok(&["status"]);
    assert!(
        status.contains(&format!("run as user {HOOK_USER}")),
        "{status}"
    );

    let first = crawl(&daemon);
    let second = crawl(&daemon);
    let found = report(&daemon, second);
    assert_eq!(found["uid"], hooks.uid.as_raw(), "{found}");
    for (what, refused) in [
        ("database_write", "EACCES"),
        ("control_socket", "EACCES"),
        ("signal_crawl_worker", "EPERM"),
        ("other_crawl_write", "EACCES"),
    ] {
        assert_eq!(found[what], refused, "{what}: {found}");
    }
    // A sealed crawl's directory is the daemon's again, closed to hooks.
    let meta = std::fs::metadata(daemon.data_dir().join(format!("crawls/{first}"))).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o750);

    // The same hook as the daemon's own user gets out.
    daemon.write_config(&config(""));
    daemon.signal(nix::sys::signal::Signal::SIGHUP);
    common::wait_until("the reload to run hooks as abxd's own user", WAIT, || {
        let status = daemon.ctl_ok(&["status"]);
        status.contains("run as abxd's own user").then_some(())
    });
    let status = daemon.ctl_ok(&["status"]);
    assert!(status.contains("WARNING"), "{status}");
    let found = report(&daemon, crawl(&daemon));
    assert_eq!(found["uid"], owner.uid.as_raw(), "{found}");
    for what in [
        "database_write",
        "control_socket",
        "signal_crawl_worker",
        "other_crawl_write",
    ] {
        assert_eq!(found[what], "done", "{what}: {found}");
    }
}
