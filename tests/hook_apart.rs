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

/// A daemon not launched yet, whose `plugins` dir holds the hook that tries each way out (where
/// the hook users reach it).
fn with_escape_hook() -> TestDaemon {
    let daemon = TestDaemon::prepare("");
    let hook = "escape/on_Snapshot__10_escape.py";
    std::fs::create_dir_all(daemon.path("plugins/escape")).unwrap();
    std::fs::copy(
        fixtures().join("escape").join(hook),
        daemon.path("plugins").join(hook),
    )
    .unwrap();
    daemon
}

/// Launches `daemon` as `owner` with the capabilities the packaged unit grants.
fn launch_as(daemon: &mut TestDaemon, owner: &nix::unistd::User) {
    daemon.run_as_with_capabilities(owner, "+setuid,+setgid,+chown,+kill");
    std::fs::set_permissions(daemon.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    daemon.launch();
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
    let mut daemon = with_escape_hook();
    let plugins = plugins_config(&[&daemon.path("plugins")]);
    let config =
        |user: &str| format!("{plugins}[hooks]\n{user}[crawl]\negress = \"unrestricted\"\n");
    daemon.write_config(&config(&format!("user = \"{HOOK_USER}\"\n")));
    launch_as(&mut daemon, &owner);
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

/// With `hooks.crawl_users`, two crawls that run at once run their hooks as two users of the
/// group: a hook of one cannot write into the other's running crawl nor signal its hook. With
/// one `hooks.user` for both, it can (so the test can fail).
#[test]
fn crawls_that_run_at_once_run_their_hooks_as_users_of_their_own() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED: making users and starting a daemon as one needs root");
        return;
    }
    let members: Vec<u32> = common::crawl_users()
        .iter()
        .map(|u| u.uid.as_raw())
        .collect();
    let owner = daemon_user();
    let mut daemon = with_escape_hook();
    // (Holds its crawl running until the test writes the release file; says its uid and pid.)
    common::plugin(
        &daemon.path("plugins"),
        "held",
        "on_Snapshot__10_held.sh",
        "id -u > uid; echo $$ > pid; id -G > groups; echo \"$ABXPKG_LIB_DIR\" > library\n\
         while [ ! -e \"$RELEASE\" ]; do sleep 0.05; done\n\
         echo '{\"type\": \"ArchiveResult\", \"status\": \"succeeded\"}'\n",
    );
    let release = daemon.path("release");
    let victim = daemon.path("victim");
    let plugins = plugins_config(&[&daemon.path("plugins")]);
    let config = |hooks: &str| {
        format!(
            "{}[hooks]\nuser = \"{HOOK_USER}\"\n{hooks}[crawl]\negress = \"unrestricted\"\n\
             [plugins.held]\nenv = {{ RELEASE = {:?} }}\n\
             [plugins.escape]\nenv = {{ ESCAPE_VICTIM = {:?} }}\n",
            plugins,
            release.display().to_string(),
            victim.display().to_string()
        )
    };
    daemon.write_config(&config(&format!(
        "crawl_users = \"{}\"\n",
        common::CRAWL_USERS
    )));
    launch_as(&mut daemon, &owner);
    // (Without the library they share, no crawl starts, and status says how to make it.)
    let status = daemon.ctl_ok(&["status"]);
    let make = format!(
        "install -d -o {HOOK_USER} -g {} -m 2775",
        common::CRAWL_USERS
    );
    assert!(
        status.contains("NO CRAWL STARTS") && status.contains(&make),
        "{status}"
    );
    let library = daemon.data_dir().join("lib");
    let made = std::process::Command::new("install")
        .args([
            "-d",
            "-o",
            HOOK_USER,
            "-g",
            common::CRAWL_USERS,
            "-m",
            "2775",
        ])
        .arg(&library)
        .status()
        .unwrap();
    assert!(made.success());
    daemon.signal(nix::sys::signal::Signal::SIGHUP);
    let per_crawl = format!(
        "run as a user of their own per crawl, from group {}",
        common::CRAWL_USERS
    );
    common::wait_until("the reload to run hooks per crawl", WAIT, || {
        daemon
            .ctl_ok(&["status"])
            .contains(&per_crawl)
            .then_some(())
    });

    // A crawl held running, then one whose hook tries to reach it.
    let both_at_once = |daemon: &TestDaemon| {
        let _ = std::fs::remove_file(&release);
        let held = daemon.add(&["--plugins", "held", "http://127.0.0.1:9/"]);
        let held_dir = daemon.data_dir().join(format!("crawls/{held}/snapshots"));
        let (uid, pid) = common::wait_until("the held hook to start", WAIT, || {
            let snapshot = std::fs::read_dir(&held_dir).ok()?.next()?.ok()?.path();
            let read = |name: &str| std::fs::read_to_string(snapshot.join("held").join(name));
            let (uid, pid) = (read("uid").ok()?, read("pid").ok()?);
            // (Each file whole: the shell makes it empty, then writes it.)
            let pid = pid.trim().parse::<u32>().ok()?;
            Some((uid.trim().parse::<u32>().ok()?, pid.to_string()))
        });
        std::fs::write(&victim, pid).unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
        let escaping = crawl(daemon);
        let found = report(daemon, escaping);
        std::fs::write(&release, "").unwrap();
        daemon.wait_sealed(held, WAIT);
        (uid, found)
    };
    let (held_uid, found) = both_at_once(&daemon);
    // (Its hooks hold the group of the library the crawl users share, and are pointed at it.)
    let group = nix::unistd::Group::from_name(common::CRAWL_USERS)
        .unwrap()
        .unwrap();
    let held_said = |name: &str| {
        let snapshots = daemon.data_dir().join("crawls/1/snapshots");
        let snapshot = std::fs::read_dir(snapshots)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        std::fs::read_to_string(snapshot.path().join("held").join(name)).unwrap()
    };
    assert_eq!(held_said("library").trim(), library.display().to_string());
    let groups = held_said("groups");
    assert!(
        groups
            .split_whitespace()
            .any(|g| g == group.gid.to_string()),
        "{groups}"
    );
    let escaping_uid = found["uid"].as_u64().unwrap() as u32;
    assert!(members.contains(&held_uid), "{held_uid} of {members:?}");
    assert!(members.contains(&escaping_uid), "{found}");
    assert_ne!(held_uid, escaping_uid, "{found}");
    for (what, refused) in [
        ("other_crawl_write", "EACCES"),
        ("signal_other_crawl", "EPERM"),
        ("database_write", "EACCES"),
        ("signal_crawl_worker", "EPERM"),
    ] {
        assert_eq!(found[what], refused, "{what}: {found}");
    }

    // One user for every crawl: the same hook reaches the other crawl.
    daemon.write_config(&config(""));
    daemon.signal(nix::sys::signal::Signal::SIGHUP);
    common::wait_until("the reload to run hooks as one user", WAIT, || {
        let status = daemon.ctl_ok(&["status"]);
        status
            .contains(&format!("run as user {HOOK_USER}"))
            .then_some(())
    });
    let (_, found) = both_at_once(&daemon);
    for what in ["other_crawl_write", "signal_other_crawl"] {
        assert_eq!(found[what], "done", "{what}: {found}");
    }
}
