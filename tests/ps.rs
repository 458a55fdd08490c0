//! `abxctl ps`: the tree, the JSON shape, and a table that outlives its daemon.

mod common;

use common::{wait_until, TestDaemon, WAIT};
use serde_json::Value;

/// Replaces what changes from run to run (pids, durations, temp paths) with placeholders and
/// folds column padding, so the snapshot checks content and shape only.
fn redact_tree(text: &str, daemon: &TestDaemon, pids: &[i64]) -> String {
    let text = text
        .replace(common::abxd_bin(), "[ABXD]")
        .replace(daemon.dir.path().to_str().unwrap(), "[DIR]");
    let pids: Vec<String> = pids.iter().map(i64::to_string).collect();
    text.lines()
        .map(|line| {
            line.split_whitespace()
                .map(|word| match word {
                    _ if pids.iter().any(|p| p == word) => "[PID]",
                    _ if is_duration(word) => "[DUR]",
                    _ if is_clock_time(word) => "[TIME]",
                    _ => word,
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `word` is a time of day as STARTED prints it (`14:03:27`) or a day (`Nov21`).
fn is_clock_time(word: &str) -> bool {
    let parts: Vec<&str> = word.split(':').collect();
    let clock = parts.len() == 3
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_digit()));
    let day = word.len() == 5
        && word[..3].chars().all(|c| c.is_ascii_alphabetic())
        && word[3..].chars().all(|c| c.is_ascii_digit());
    clock || day
}

/// Whether `word` is a compact duration as ps prints it (`850ms`, `3s`, `2m05s`, `-4s`, …).
fn is_duration(word: &str) -> bool {
    let word = word.strip_prefix('-').unwrap_or(word);
    let digits_then = |w: &str, unit: &str| {
        w.strip_suffix(unit)
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    digits_then(word, "ms")
        || digits_then(word, "s")
        || ["m", "h", "d"].iter().any(|sep| {
            word.split_once(sep).is_some_and(|(a, b)| {
                !a.is_empty()
                    && a.chars().all(|c| c.is_ascii_digit())
                    && b.len() >= 3
                    && b[..2].chars().all(|c| c.is_ascii_digit())
            })
        })
}

fn redact_json(mut ps: Value) -> Value {
    ps["now_ms"] = "[TIME]".into();
    for row in ps["processes"].as_array_mut().unwrap() {
        for key in [
            "pid",
            "pgid",
            "created_at",
            "started_at",
            "ended_at",
            "deadline_at",
            "time_left_ms",
            "sigterm_at",
            "sigkill_at",
            "deadline_clock",
        ] {
            if !row[key].is_null() {
                row[key] = format!("[{}]", key.to_uppercase()).into();
            }
        }
        for key in ["cwd", "stdout_path", "stderr_path"] {
            if let Some(path) = row[key].as_str() {
                row[key] = path.rsplit('/').next().unwrap().into();
            }
        }
        // Every row has a UUIDv7 of its own.
        let uuid = row["uuid"].as_str().unwrap_or_default();
        assert!(uuid.len() == 32 && &uuid[12..13] == "7", "{row}");
        row["uuid"] = "[UUID7]".into();
        // Every row is this machine's, whose id is the machine's own.
        assert_eq!(row["machine_id"], abxd::identity::machine_id(), "{row}");
        row["machine_id"] = "[MACHINE]".into();
        // What containment records depends on the machine (cgroup v2 where it is writable).
        for key in ["cgroup", "cpu_usec", "memory_peak"] {
            row[key] = "[CONTAINMENT]".into();
        }
        if row["kind"] == "orchestrator" {
            row["argv"] = "[ABXD ARGV]".into();
            row["cwd"] = "[TEST CWD]".into();
        }
    }
    ps
}

fn started_tree(backend: &str) -> (TestDaemon, Vec<i64>) {
    let daemon = TestDaemon::start_on(backend, "");
    let (exited, _) = daemon.spawn(&["sh", "-c", "exit 3"]);
    wait_until("the first child to exit", WAIT, || {
        (daemon.row(exited)["status"] == "exited").then_some(())
    });
    daemon.ctl_ok(&["spawn", "--timeout", "1h", "--", "sleep", "300"]);
    let pids = daemon.ps_json(true)["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["pid"].as_i64())
        .collect();
    (daemon, pids)
}

#[test]
fn ps_tree_shows_live_rows_under_their_parents() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let (daemon, pids) = started_tree(backend);
        let live = daemon.ctl_ok(&["ps"]);
        insta::assert_snapshot!("ps_live", redact_tree(&live, &daemon, &pids));
        let all = daemon.ctl_ok(&["ps", "--all"]);
        insta::assert_snapshot!("ps_all", redact_tree(&all, &daemon, &pids));
        let hooks = daemon.ctl_ok(&["ps", "--all", "--kind", "hook"]);
        assert_eq!(hooks.lines().count(), 3, "{hooks}");
    }
}

#[test]
fn ps_json_has_the_documented_shape() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let (daemon, _) = started_tree(backend);
        insta::assert_json_snapshot!("ps_json_all", redact_json(daemon.ps_json(true)));
    }
}

#[test]
fn ps_after_the_daemon_is_killed_shows_stale_rows_as_unverified() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let (mut daemon, pids) = started_tree(backend);
        let sleeper_pid = *pids.last().unwrap() as i32;
        daemon.crash();
        // The orchestrator is gone; its child lives on (re-parented, not ours to kill here).
        let ps = daemon.ps_json(false);
        let rows = ps["processes"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "stale rows are shown, not hidden: {ps}");
        let orchestrator = rows.iter().find(|p| p["kind"] == "orchestrator").unwrap();
        assert_eq!(orchestrator["status"], "running");
        assert_eq!(orchestrator["verified"], "gone");
        let sleeper = rows.iter().find(|p| p["pid"] == sleeper_pid).unwrap();
        assert_eq!(sleeper["verified"], "alive");

        let tree = daemon.ctl_ok(&["ps"]);
        insta::assert_snapshot!("ps_after_crash", redact_tree(&tree, &daemon, &pids));

        // On a terminal the unverified row is yellow, unless NO_COLOR says otherwise.
        let command = format!(
            "{} --config {} ps",
            common::abxctl_bin(),
            daemon.config.display()
        );
        let on_terminal = |no_color: Option<&str>| {
            let mut script = std::process::Command::new("script");
            script
                .args(["-qfec", &command, "/dev/null"])
                .env_remove("NO_COLOR")
                .stdin(std::process::Stdio::null());
            if let Some(value) = no_color {
                script.env("NO_COLOR", value);
            }
            String::from_utf8_lossy(&script.output().unwrap().stdout).into_owned()
        };
        assert!(
            on_terminal(None).contains("\x1b[33mrunning?"),
            "{}",
            on_terminal(None)
        );
        assert!(!on_terminal(Some("1")).contains('\x1b'));
    }
}

#[test]
fn ps_explains_a_missing_database() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let daemon = TestDaemon::prepare_on(backend, "");
        let output = daemon.ctl(&["ps"]);
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("no database at"), "{stderr}");
        let named = if backend == "sqlite" {
            "abxd.sqlite3"
        } else {
            "postgres://abxd@/abxd"
        };
        assert!(stderr.contains(named), "{stderr}");
    }
}

#[test]
fn ps_rejects_an_unknown_kind() {
    let daemon = TestDaemon::start();
    let output = daemon.ctl(&["ps", "--kind", "zombie"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid value 'zombie'"), "{stderr}");
    assert!(
        stderr.contains("orchestrator, crawl_worker, snapshot_worker, hook, child"),
        "the kinds that exist are named: {stderr}"
    );
}

#[test]
fn ps_cuts_long_command_lines_to_a_terminal_but_not_when_piped_or_wide() {
    let daemon = TestDaemon::start();
    let long = format!("sleep 300 # {}", "x".repeat(300));
    daemon.spawn(&["/bin/sh", "-c", &long]);
    // A terminal 100 columns wide (util-linux `script` gives abxctl a pty).
    let in_terminal = |args: &str| {
        let command = format!(
            "stty cols 100; {} --config {} ps {args}",
            common::abxctl_bin(),
            daemon.config.display()
        );
        let output = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .output()
            .expect("script (util-linux) runs");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).replace("\r\n", "\n")
    };
    let cut = in_terminal("");
    assert!(
        cut.lines().all(|l| l.chars().count() <= 100),
        "every line fits: {cut}"
    );
    assert!(
        cut.contains("/bin/sh -c sleep 300") && cut.contains('…'),
        "{cut}"
    );
    assert!(in_terminal("--wide").contains(&long));
    assert!(daemon.ctl_ok(&["ps"]).contains(&long), "piped: whole lines");
}

/// Rows of another machine sharing the database: `ps` names each row's machine, never checks
/// another's processes against this one's procfs, and shows them as unknown once that machine is
/// silent for longer than the lease; a daemon starting here neither finds them lost nor signals
/// them — even where the process would be found alive and orphaned here.
#[test]
fn another_machines_rows_are_named_never_checked_here_and_unknown_once_it_is_silent() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let mut daemon = TestDaemon::prepare_on(backend, "[timeouts]\nlease = \"2s\"\n");
        daemon.launch_with_env(&[(abxd::identity::MACHINE_ID_ENV, "elsewhere")]);
        let (row, pid) = daemon.spawn(&["sleep", "300"]);
        daemon.crash();
        // This host's daemon starts on the same database.
        daemon.launch();
        let this = abxd::identity::machine_id();
        wait_until("this machine's daemon to register", WAIT, || {
            let machines = daemon.store().machines().all().unwrap();
            machines.iter().any(|m| m.id == this).then_some(())
        });
        let rows = daemon.ps_json(true);
        let remote = rows["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == row)
            .unwrap()
            .clone();
        assert_eq!(remote["machine_id"], "elsewhere");
        assert_eq!(remote["status"], "running", "{remote}");
        assert_eq!(remote["verified"], Value::Null, "{remote}");
        assert!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok(),
            "the other machine's process was signalled here"
        );

        // Nor does `abxctl kill` signal it from here.
        let kill = daemon.ctl(&["kill", &row.to_string()]);
        assert!(!kill.status.success());
        let stderr = String::from_utf8_lossy(&kill.stderr);
        assert!(
            stderr.contains(&format!("row {row} runs on machine elsewhere")),
            "{stderr}"
        );
        assert!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok());

        // Its heartbeat (none: it died) is older than the lease: unknown, named by id (both
        // machines are this host).
        let table = wait_until("the other machine to count as silent", WAIT, || {
            let table = daemon.ctl_ok(&["ps", "--wide"]);
            table
                .contains("unknown (machine silent since")
                .then_some(table)
        });
        let header = table.lines().next().unwrap();
        assert!(header.contains("MACHINE"), "{table}");
        let line = table.lines().find(|l| l.contains("sleep 300")).unwrap();
        assert!(line.contains("elsewhere"), "{table}");
        assert!(!line.contains("running"), "{table}");

        // On a shared store this machine's daemon says it is alive every lease/3 (on SQLite it
        // keeps no timer at all: `idle_daemon_sleeps_in_poll_without_a_timeout`).
        if backend == "postgres" {
            wait_until("this machine's heartbeat", WAIT, || {
                let machines = daemon.store().machines().all().unwrap();
                let me = machines.iter().find(|m| m.id == this)?;
                (me.heartbeat_at > me.started_at).then_some(())
            });
        }

        // --machine narrows to one machine's rows; an unknown name is refused.
        let only = daemon.ctl_ok(&["ps", "--machine", "elsewhere"]);
        assert!(only.contains("sleep 300"), "{only}");
        assert!(!only.contains(this), "{only}");
        let mine = daemon.ctl_ok(&["ps", "--machine", this]);
        assert!(!mine.contains("sleep 300"), "{mine}");
        let unknown = daemon.ctl(&["ps", "--machine", "nowhere"]);
        assert_eq!(unknown.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&unknown.stderr);
        assert!(
            stderr.contains("no machine named nowhere; machines:"),
            "{stderr}"
        );
    }
}

/// `[store] machine_id` names this host's machine for the daemon, its workers and abxctl alike.
#[test]
fn the_configured_machine_id_names_the_daemons_machine_and_its_rows() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        let daemon = TestDaemon::start_on(backend, "[store]\nmachine_id = \"archiver-1\"\n");
        // (A process that lives on: a row of one that exited but is not reaped yet still says
        // running, and is not alive.)
        daemon.spawn(&["sleep", "30"]);
        let machines = daemon.store().machines().all().unwrap();
        assert!(
            machines.iter().any(|m| m.id == "archiver-1"),
            "{machines:?}"
        );
        let ps = daemon.ps_json(true);
        for row in ps["processes"].as_array().unwrap() {
            assert_eq!(row["machine_id"], "archiver-1", "{row}");
            // (abxctl knows the id too: its own rows are checked here, not taken for another's.)
            if row["status"] == "running" {
                assert_eq!(row["verified"], "alive", "{row}");
            }
        }
        let mine = daemon.ctl_ok(&["ps", "--machine", "archiver-1"]);
        assert!(mine.contains("orchestrator"), "{mine}");
        assert!(!mine.contains("MACHINE"), "{mine}");
    }
}
