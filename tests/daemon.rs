//! The daemon's life: start, record itself, answer, run children, stop — against real processes.

mod common;

use common::{fixtures, plugins_config, wait_until, TestDaemon, WAIT};
use nix::sys::signal::Signal;
use serde_json::Value;

fn processes(ps: &Value) -> &Vec<Value> {
    ps["processes"].as_array().unwrap()
}

#[test]
fn daemon_records_itself_answers_status_and_exits_0_on_sigterm() {
    let mut daemon = TestDaemon::start();
    assert!(daemon.database().exists());

    let status = daemon.ctl_ok(&["status"]);
    assert!(
        status.contains(&format!("pid {}", daemon.pid())),
        "{status}"
    );
    assert!(status.contains("orchestrator 1"), "{status}");

    let ps = daemon.ps_json(false);
    let rows = processes(&ps);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["kind"], "orchestrator");
    assert_eq!(rows[0]["pid"], daemon.pid());
    assert_eq!(rows[0]["status"], "running");
    assert_eq!(rows[0]["verified"], "alive");
    let orchestrator = rows[0]["id"].as_i64().unwrap();

    daemon.signal(Signal::SIGTERM);
    let exit = daemon.wait_exit();
    assert_eq!(exit.code(), Some(0), "{}", daemon.log());
    let row = daemon.row(orchestrator);
    assert_eq!(row["status"], "exited");
    assert_eq!(row["exit_code"], 0);
    assert!(row["ended_at"].is_i64());
    assert!(
        !daemon.data_dir().join("abxd.sock").exists(),
        "socket removed on exit"
    );

    let output = daemon.ctl(&["status"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stdout).contains("abxd is not running"));
}

#[test]
fn spawned_commands_are_children_of_the_orchestrator_with_truthful_exits() {
    let daemon = TestDaemon::start();
    let (exits_3, _) = daemon.spawn(&["sh", "-c", "exit 3"]);
    let (killed, _) = daemon.spawn(&["sh", "-c", "kill -KILL $$"]);
    let (running, running_pid) = daemon.spawn(&["sleep", "300"]);

    let final_row = |id| {
        wait_until("the row to be final", WAIT, || {
            let row = daemon.row(id);
            (row["status"] == "exited").then_some(row)
        })
    };
    let row = final_row(exits_3);
    assert_eq!(
        (row["exit_code"].clone(), row["exit_signal"].clone()),
        (3.into(), Value::Null)
    );
    assert_eq!(row["end_reason"], "exited");
    let row = final_row(killed);
    assert_eq!(
        (row["exit_code"].clone(), row["exit_signal"].clone()),
        (Value::Null, 9.into())
    );

    let ps = daemon.ps_json(false);
    let orchestrator = processes(&ps)
        .iter()
        .find(|p| p["kind"] == "orchestrator")
        .unwrap();
    let sleeper = processes(&ps).iter().find(|p| p["id"] == running).unwrap();
    assert_eq!(sleeper["parent_id"], orchestrator["id"]);
    assert_eq!(sleeper["pid"], running_pid);
    assert_eq!(sleeper["pgid"], running_pid, "own process group");
    assert_eq!(sleeper["status"], "running");
    assert_eq!(
        processes(&ps).len(),
        2,
        "ps shows live rows only by default"
    );

    // The hook's environment carries its row id and none of the supervisor's own variables.
    let env = std::fs::read(format!("/proc/{running_pid}/environ")).unwrap();
    let env: Vec<&[u8]> = env.split(|&b| b == 0).collect();
    assert!(env.contains(&format!("ABXD_PROCESS_ID={running}").as_bytes()));
    assert!(!env.iter().any(|v| v.starts_with(b"NOTIFY_SOCKET=")));
    let stdin = std::fs::read_link(format!("/proc/{running_pid}/fd/0")).unwrap();
    assert_eq!(stdin, std::path::Path::new("/dev/null"));
    let stdout = std::fs::read_link(format!("/proc/{running_pid}/fd/1")).unwrap();
    assert_eq!(
        Some(stdout.to_str().unwrap()),
        sleeper["stdout_path"].as_str()
    );
}

#[test]
fn output_goes_to_the_rows_log_files() {
    let daemon = TestDaemon::start();
    let (id, _) = daemon.spawn(&["sh", "-c", "echo to-out; echo to-err >&2"]);
    let row = wait_until("the row to be final", WAIT, || {
        let row = daemon.row(id);
        (row["status"] == "exited").then_some(row)
    });
    let read = |key: &str| std::fs::read_to_string(row[key].as_str().unwrap()).unwrap();
    assert_eq!(read("stdout_path"), "to-out\n");
    assert_eq!(read("stderr_path"), "to-err\n");
}

#[test]
fn a_command_that_cannot_start_is_refused_and_recorded() {
    let daemon = TestDaemon::start();
    let output = daemon.ctl(&["spawn", "--", "/nonexistent/program"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent/program"), "{stderr}");
    let ps = daemon.ps_json(true);
    let row = processes(&ps)
        .iter()
        .find(|p| p["argv"][0] == "/nonexistent/program")
        .unwrap();
    assert_eq!(row["status"], "exited");
    assert_eq!(row["end_reason"], "spawn_failed");
    assert_eq!(row["exit_code"], Value::Null, "an unknown exit is never 0");
}

#[test]
fn sigterm_tears_down_running_children_before_exiting() {
    let mut daemon = TestDaemon::start();
    let (polite, polite_pid) = daemon.spawn(&["sleep", "300"]);
    let (stubborn, stubborn_pid) = daemon.spawn(&[
        "sh",
        "-c",
        "trap '' TERM; echo ready; while :; do sleep 1; done",
    ]);
    wait_until("the stubborn child to trap TERM", WAIT, || {
        let row = daemon.row(stubborn);
        let out = std::fs::read_to_string(row["stdout_path"].as_str()?).ok()?;
        out.contains("ready").then_some(())
    });
    std::fs::write(
        &daemon.config,
        format!(
            "{}[timeouts]\nkill_grace = \"300ms\"\n",
            TestDaemon::BASE_CONFIG
        ),
    )
    .unwrap();
    daemon.signal(Signal::SIGHUP);
    wait_until("the reload", WAIT, || {
        daemon
            .log()
            .contains("timeouts.kill_grace: 5s -> 300ms")
            .then_some(())
    });

    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let row = daemon.row(polite);
    assert_eq!(
        (row["status"].as_str(), row["exit_signal"].as_i64()),
        (Some("exited"), Some(15))
    );
    assert_eq!(row["end_reason"], "killed");
    assert!(row["sigterm_at"].is_i64() && row["sigkill_at"].is_null());
    let row = daemon.row(stubborn);
    assert_eq!(row["exit_signal"], 9, "SIGKILL after kill_grace");
    assert!(row["sigterm_at"].is_i64() && row["sigkill_at"].is_i64());
    for pid in [polite_pid, stubborn_pid] {
        assert!(abxd::identity::of_pid(pid).is_none(), "pid {pid} survived");
    }
}

#[test]
fn a_second_daemon_on_the_same_data_dir_is_refused_naming_the_holder() {
    let daemon = TestDaemon::start();
    let output = daemon
        .abxd_command(&[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("in use by another abxd"), "{stderr}");
    assert!(
        stderr.contains(&format!("pid {}", daemon.pid())),
        "{stderr}"
    );
    // The first one still serves.
    daemon.ctl_ok(&["status"]);
}

#[test]
fn reload_with_a_bad_config_keeps_the_running_one() {
    let daemon = TestDaemon::start();
    std::fs::write(&daemon.config, "[limits]\nmax_crawl_workers = 0\n").unwrap();
    daemon.signal(Signal::SIGHUP);
    wait_until("the refused reload", WAIT, || {
        daemon.log().contains("reload refused").then_some(())
    });
    assert!(daemon.log().contains("limits.max_crawl_workers"));
    // Had the bad file (which lacks allow_debug_spawn) been applied, spawning would be refused.
    // abxctl reads the file too, so give it back a valid one first — without reloading.
    std::fs::write(&daemon.config, TestDaemon::BASE_CONFIG).unwrap();
    daemon.spawn(&["true"]);
}

#[test]
fn idle_daemon_sleeps_in_poll_without_a_timeout() {
    let daemon = TestDaemon::start();
    common::assert_sleeps_without_timer(daemon.pid());
}

#[test]
fn a_daemon_that_may_start_no_crawl_sleeps_without_a_timer_though_one_is_due() {
    // A root daemon told no one to run hooks as: the queued crawl is due, but nothing may claim
    // it until the config changes, so there is no reason to wake (it used to spin on it).
    let plugins = plugins_config(&[&fixtures().join("plugins")]);
    let mut daemon = TestDaemon::prepare(&format!("[hooks]\n{plugins}"));
    std::fs::create_dir_all(daemon.data_dir()).unwrap();
    let crawl = abxd::store::Store::open_at(&daemon.location())
        .unwrap()
        .crawls()
        .add(
            &abxd::domain::CrawlSpec {
                plugins: Some(vec!["ok".into()]),
                ..abxd::domain::CrawlSpec::of_urls(vec!["http://127.0.0.1:9/".into()], 0)
            },
            None,
        )
        .unwrap();
    daemon.launch();
    wait_until("the daemon to say no crawl starts", WAIT, || {
        daemon.log().contains("no crawl starts").then_some(())
    });
    common::assert_sleeps_without_timer(daemon.pid());
    // Told who, on a reload, it claims the crawl at once.
    daemon.write_config(&format!("[hooks]\nuser = \"root\"\n{plugins}"));
    daemon.signal(Signal::SIGHUP);
    daemon.wait_sealed(crawl, WAIT);
}

/// KiB resident of `pid`'s mappings of the abxd executable that hold the file's pages only
/// (read-only, nothing copied on write: what the daemon may give back).
fn resident_code_kib(pid: i32) -> u64 {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    let maps = procfs::process::Process::new(pid).unwrap().smaps().unwrap();
    maps.into_iter()
        .filter(|map| map.pathname == procfs::process::MMapPath::Path(exe.clone()))
        .filter(|map| !map.perms.contains(procfs::process::MMPermissions::WRITE))
        .filter(|map| map.extension.map["Anonymous"] == 0)
        .map(|map| map.extension.map["Rss"] / 1024)
        .sum()
}

#[test]
fn a_daemon_gives_back_the_code_a_crawl_ran_once_it_is_idle_again_and_stays_asleep() {
    let daemon = TestDaemon::start_with(&format!(
        "{}[plugins.sleepy]\nenv = {{ SLEEPY_SECONDS = \"1\" }}\n",
        plugins_config(&[&fixtures().join("plugins")])
    ));
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "sleepy,ok"]);
    // While the crawl runs, the daemon supervises its worker: the code it ran stays mapped. (On a
    // host with memory to spare nothing else unmaps it: without the release it never shrinks.)
    let busy = wait_until("the crawl's hook to run", WAIT, || {
        let hooks = daemon.live_rows(abxd::domain::Kind::Hook);
        (!hooks.is_empty()).then(|| resident_code_kib(daemon.pid()))
    });
    daemon.wait_sealed(crawl, WAIT);
    let idle = wait_until("the idle daemon to give its code back", WAIT, || {
        let idle = resident_code_kib(daemon.pid());
        (idle < busy * 3 / 4).then_some(idle)
    });
    eprintln!("resident code: {busy} KiB while the crawl ran, {idle} KiB idle");
    common::assert_sleeps_without_timer(daemon.pid());
}

#[test]
fn a_reload_that_moves_the_database_keeps_new_workers_on_the_running_one() {
    let plugins = common::fixtures().join("plugins");
    let plugins_line = common::plugins_config(&[&plugins]);
    let daemon = TestDaemon::start_with(&plugins_line);
    let elsewhere = daemon.path("elsewhere.sqlite3");
    let moved = format!(
        "{}{}database = {:?}\n",
        TestDaemon::BASE_CONFIG,
        plugins_line,
        elsewhere.display().to_string()
    );
    std::fs::write(&daemon.config, moved).unwrap();
    daemon.signal(Signal::SIGHUP);
    wait_until("the reload", WAIT, || {
        daemon
            .log()
            .contains("paths.database changes only on restart")
            .then_some(())
    });
    // The socket did not move: abxctl (reading the new file) reaches the running daemon.
    let crawl = daemon.add(&["--plugins", "ok", "http://127.0.0.1:9/page"]);
    daemon.wait_sealed(crawl, WAIT);
    let results = daemon.store().results().of_crawl(crawl).unwrap();
    assert!(
        results
            .iter()
            .any(|r| r.plugin == "ok" && r.status == "succeeded"),
        "{results:#?}"
    );
    assert!(
        !elsewhere.exists(),
        "a worker opened the database of the reloaded file"
    );
}

#[test]
fn a_reload_applies_the_control_group_and_public_read_to_the_socket() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let daemon = TestDaemon::start();
    let socket = daemon.data_dir().join("abxd.sock");
    let mode_and_group = || {
        let meta = std::fs::metadata(&socket).unwrap();
        (meta.permissions().mode() & 0o777, meta.gid())
    };
    let own_group = nix::unistd::getegid().as_raw();
    assert_eq!(mode_and_group(), (0o660, own_group));
    let nogroup = nix::unistd::Group::from_name("nogroup")
        .unwrap()
        .expect("Debian has a group nogroup");
    let opened = format!(
        "{}group = \"nogroup\"\npublic_read = true\n",
        TestDaemon::BASE_CONFIG
    );
    std::fs::write(&daemon.config, opened).unwrap();
    daemon.signal(Signal::SIGHUP);
    wait_until("the socket opened to nogroup and everyone", WAIT, || {
        (mode_and_group() == (0o666, nogroup.gid.as_raw())).then_some(())
    });
    std::fs::write(&daemon.config, TestDaemon::BASE_CONFIG).unwrap();
    daemon.signal(Signal::SIGHUP);
    wait_until("the socket closed again", WAIT, || {
        (mode_and_group() == (0o660, own_group)).then_some(())
    });
    daemon.ctl_ok(&["status"]);
}

#[test]
fn a_daemon_whose_executable_was_replaced_on_disk_still_starts_workers_of_its_own_version() {
    let mut daemon = TestDaemon::prepare(&format!(
        "{}[plugins.sleepy]\nenv = {{ SLEEPY_SECONDS = \"2\" }}\n",
        plugins_config(&[&fixtures().join("plugins")])
    ));
    let exe = daemon.run_a_copy_of_abxd();
    daemon.launch();
    // As a package upgrade does: the file goes, another takes its path.
    std::fs::remove_file(&exe).unwrap();
    std::fs::write(&exe, "#!/bin/sh\nexit 99\n").unwrap();
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "sleepy,ok"]);
    // Named as the file it was asked to run, not `exe` (the kernel's name for /proc/self/exe).
    let worker = wait_until("a snapshot worker", WAIT, || {
        let workers = daemon.live_rows(abxd::domain::Kind::SnapshotWorker);
        workers.first().and_then(|r| r.pid)
    });
    // (The worker names itself first thing after exec: its row may be seen a moment earlier.)
    wait_until("the worker to be named abxd", WAIT, || {
        let comm = std::fs::read_to_string(format!("/proc/{worker}/comm")).unwrap_or_default();
        (comm.trim() == "abxd").then_some(())
    });
    daemon.wait_sealed(crawl, WAIT);
    let results = daemon.store().results().of_crawl(crawl).unwrap();
    assert!(
        !results.is_empty() && results.iter().all(|r| r.status == "succeeded"),
        "{results:#?}\n{}",
        daemon.log()
    );
    let ps = daemon.ctl_ok(&["ps", "--all"]);
    assert!(ps.contains(&exe.display().to_string()), "{ps}");
}
