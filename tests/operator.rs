//! The operator's day, against the real binaries: exit statuses a script can trust (`abxd::exit`),
//! a closed pipe on every listing, cancelling with the daemon down, and `abxd run` minding only
//! its own crawl.

mod common;

use abxd::domain::{ResultStatus, WorkStatus};
use abxd::exit;
use common::{fixtures, plugins_config, wait_until, TestDaemon, WAIT};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::process::{Child, Output, Stdio};
use std::time::Duration;

const CRAWL_WAIT: Duration = Duration::from_secs(90);

fn fixture_config(extra: &str) -> String {
    format!(
        "{}[timeouts]\nkill_grace = \"500ms\"\nmin_grace = \"200ms\"\n{extra}",
        plugins_config(&[&fixtures().join("plugins")])
    )
}

/// A long-sleeping hook, so a crawl is still running when the test acts on it.
const SLEEPY_LONG: &str = "[plugins.sleepy]\nenv = { SLEEPY_SECONDS = \"300\" }\n";

fn code(output: &Output) -> Option<i32> {
    output.status.code()
}

fn text(output: &Output) -> String {
    format!(
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Waits until crawl `id` has a result `started` (its hook runs).
fn wait_started(daemon: &TestDaemon, id: i64) {
    wait_until("a hook to start", WAIT, || {
        let results = daemon.store().results().of_crawl(id).ok()?;
        results
            .iter()
            .any(|r| r.status == ResultStatus::Started)
            .then_some(())
    });
}

/// A child process killed with its test, also when the test fails.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn add_wait_exits_0_when_every_hook_succeeded_and_4_when_one_failed() {
    let daemon = TestDaemon::start_with(&fixture_config(""));
    let ok = daemon.ctl(&["add", "--wait", "--plugins", "ok", "http://127.0.0.1:9/"]);
    assert_eq!(code(&ok), Some(exit::OK), "{}", text(&ok));
    let failed = daemon.ctl(&[
        "add",
        "--wait",
        "--plugins",
        "ok,failer",
        "http://127.0.0.1:9/",
    ]);
    assert_eq!(code(&failed), Some(exit::HOOKS_FAILED), "{}", text(&failed));
    assert!(text(&failed).contains("failed"), "{}", text(&failed));
}

#[test]
fn add_wait_exits_5_when_the_crawl_is_cancelled_and_130_at_ctrl_c() {
    let daemon = TestDaemon::start_with(&fixture_config(SLEEPY_LONG));
    let follow = |id_hint: &str| {
        Reaped(
            daemon
                .ctl_command(&["add", "--wait", "--plugins", "sleepy", id_hint])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        )
    };
    // Cancelled from another abxctl while followed: 5.
    let mut follower = follow("http://127.0.0.1:9/a");
    let crawl = wait_until("the crawl to be queued", WAIT, || {
        daemon.store().crawls().all().ok()?.last().map(|c| c.id)
    });
    wait_started(&daemon, crawl);
    let cancel = daemon.ctl(&["cancel", &crawl.to_string()]);
    assert_eq!(code(&cancel), Some(exit::OK), "{}", text(&cancel));
    let status = wait_until("add --wait to end", WAIT, || follower.0.try_wait().unwrap());
    assert_eq!(status.code(), Some(exit::CANCELLED));
    let results = daemon.store().results().of_crawl(crawl).unwrap();
    assert!(
        results.iter().all(|r| r.status == ResultStatus::Cancelled),
        "open results become cancelled: {results:?}"
    );

    // Ctrl-C stops the following, not the crawl: 130, and the crawl goes on.
    let mut follower = follow("http://127.0.0.1:9/b");
    let crawl = wait_until("the second crawl", WAIT, || {
        daemon
            .store()
            .crawls()
            .all()
            .ok()?
            .into_iter()
            .find(|c| c.id != crawl)
            .map(|c| c.id)
    });
    wait_started(&daemon, crawl);
    kill(Pid::from_raw(follower.0.id() as i32), Signal::SIGINT).unwrap();
    let status = wait_until("add --wait to end", WAIT, || follower.0.try_wait().unwrap());
    assert_eq!(status.code(), Some(exit::INTERRUPTED));
    let mut stderr = String::new();
    use std::io::Read;
    follower
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(stderr.contains("which goes on"), "{stderr}");
    let still = daemon.store().crawls().get(crawl).unwrap().unwrap();
    assert_ne!(still.status, WorkStatus::Sealed, "the crawl goes on");
}

#[test]
fn usage_errors_exit_2_and_a_daemon_that_is_not_running_3() {
    let daemon = TestDaemon::start_with(&fixture_config(""));
    for args in [
        &["add", "not a url"][..],
        &["add", "--plugins", "wgett", "http://127.0.0.1:9/"],
        &["kill", "99999"],
        &["cancel", "99999"],
        &["show", "--no-such-flag"],
        &["ps", "--kind", "daemon"],
    ] {
        let output = daemon.ctl(args);
        assert_eq!(
            code(&output),
            Some(exit::USAGE),
            "{args:?}: {}",
            text(&output)
        );
    }
    let broken = daemon.path("broken.toml");
    std::fs::write(&broken, "[paths\n").unwrap();
    let output = std::process::Command::new(common::abxctl_bin())
        .arg("--config")
        .arg(&broken)
        .arg("ps")
        .output()
        .unwrap();
    assert_eq!(code(&output), Some(exit::USAGE), "{}", text(&output));
    let output = std::process::Command::new(common::abxd_bin())
        .arg("--config")
        .arg(&broken)
        .arg("check-config")
        .output()
        .unwrap();
    assert_eq!(code(&output), Some(exit::USAGE));

    let mut daemon = daemon;
    daemon.signal(Signal::SIGTERM);
    daemon.wait_exit();
    for args in [&["status"][..], &["kill", "1"], &["spawn", "--", "true"]] {
        let output = daemon.ctl(args);
        assert_eq!(
            code(&output),
            Some(exit::NOT_RUNNING),
            "{args:?}: {}",
            text(&output)
        );
        assert!(
            text(&output).contains("abxd is not running"),
            "{}",
            text(&output)
        );
    }
}

#[test]
fn every_listing_survives_a_closed_pipe() {
    use std::io::Read;
    let daemon = TestDaemon::start_with(&fixture_config(""));
    let crawl = daemon.add(&["--plugins", "ok,failer", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    for _ in 0..50 {
        daemon.spawn(&["true"]);
    }
    let id = crawl.to_string();
    for verb in [
        &["ps", "--all"][..],
        &["ps", "--all", "--json"],
        &["crawls"],
        &["show", &id],
        &["plugins"],
        &["plugins", "--json"],
        &["status"],
        &["status", "--json"],
        &["--help"],
    ] {
        let mut child = daemon
            .ctl_command(verb)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 1];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The read end is closed now (dropped above).
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{verb:?}: {stderr}");
        assert_ne!(output.status.code(), Some(101), "{verb:?}");
    }
    // abxd's printing commands too (the daemon itself never dies of its output).
    for verb in [&["check-config"][..], &["recover", "--dry-run"]] {
        let mut child = daemon
            .abxd_command(verb)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{verb:?}: {stderr}");
        assert_ne!(output.status.code(), Some(101), "{verb:?}");
    }
}

#[test]
fn cancel_with_the_daemon_down_seals_the_crawl_and_the_next_start_tears_its_leftovers_down() {
    let mut daemon = TestDaemon::start_with(&fixture_config(SLEEPY_LONG));
    let crawl = daemon.add(&["--plugins", "sleepy", "http://127.0.0.1:9/"]);
    wait_started(&daemon, crawl);
    // A crash leaves the crawl's workers and hook running, and its result open.
    daemon.crash();
    let output = daemon.ctl(&["cancel", &crawl.to_string()]);
    assert_eq!(code(&output), Some(exit::OK), "{}", text(&output));
    assert!(
        text(&output).contains("abxd is not running"),
        "{}",
        text(&output)
    );
    let store = daemon.store();
    let sealed = store.crawls().get(crawl).unwrap().unwrap();
    assert_eq!(sealed.status, WorkStatus::Sealed);
    assert_eq!(
        sealed.outcome.map(|o| o.to_string()).as_deref(),
        Some("cancelled")
    );
    let results = store.results().of_crawl(crawl).unwrap();
    assert!(!results.is_empty());
    assert!(
        results.iter().all(|r| r.status == ResultStatus::Cancelled),
        "{results:?}"
    );
    // Cancelling again is refused, naming the state.
    let again = daemon.ctl(&["cancel", &crawl.to_string()]);
    assert_eq!(code(&again), Some(exit::USAGE));
    assert!(
        text(&again).contains("sealed already (cancelled)"),
        "{}",
        text(&again)
    );
    // The next start tears down what the crash left, and runs nothing of the crawl again.
    daemon.launch();
    wait_until("the crawl's leftovers to be torn down", WAIT, || {
        let rows = daemon.store().processes().list(&Default::default()).ok()?;
        rows.iter()
            .all(|r| r.crawl_id != Some(crawl) || !r.status.is_live())
            .then_some(())
    });
    let results = daemon.store().results().of_crawl(crawl).unwrap();
    assert!(
        results.iter().all(|r| r.status == ResultStatus::Cancelled),
        "a late end does not overwrite cancelled: {results:?}"
    );
}

#[test]
fn abxd_run_exits_4_when_a_hook_failed_and_leaves_other_queued_crawls_alone() {
    let daemon = TestDaemon::prepare(&fixture_config(""));
    daemon.create_database();
    let other = daemon.add(&["--plugins", "ok", "http://127.0.0.1:9/other"]);
    let output = daemon
        .abxd_command(&["run", "--plugins", "ok,failer", "http://127.0.0.1:9/mine"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(code(&output), Some(exit::HOOKS_FAILED), "{}", daemon.log());
    let store = daemon.store();
    let other = store.crawls().get(other).unwrap().unwrap();
    assert_eq!(
        other.status,
        WorkStatus::Queued,
        "abxd run claims only its own crawl"
    );
    assert!(store.results().of_crawl(other.id).unwrap().is_empty());
}

/// `abxd run` of one page with a long-sleeping hook, once its crawl is queued and the hook runs.
fn abxd_run_with_a_hook_running(daemon: &TestDaemon) -> (Reaped, i64) {
    let run = Reaped(
        daemon
            .abxd_command(&["run", "--plugins", "sleepy", "http://127.0.0.1:9/"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let crawl = wait_until("abxd run to queue its crawl", WAIT, || {
        abxd::store::Store::open_read_only(&daemon.database())
            .ok()?
            .crawls()
            .all()
            .ok()?
            .first()
            .map(|c| c.id)
    });
    wait_started(daemon, crawl);
    (run, crawl)
}

#[test]
fn abxd_run_at_ctrl_c_cancels_its_crawl_and_exits_130() {
    let daemon = TestDaemon::prepare(&fixture_config(SLEEPY_LONG));
    let (mut run, crawl) = abxd_run_with_a_hook_running(&daemon);
    kill(Pid::from_raw(run.0.id() as i32), Signal::SIGINT).unwrap();
    let status = wait_until("abxd run to end", WAIT, || run.0.try_wait().unwrap());
    assert_eq!(status.code(), Some(exit::INTERRUPTED), "{}", daemon.log());
    let mut stdout = String::new();
    use std::io::Read;
    run.0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(
        stdout.contains(&format!("interrupted: crawl {crawl} cancelled")),
        "{stdout}"
    );
    let store = daemon.store();
    let sealed = store.crawls().get(crawl).unwrap().unwrap();
    assert_eq!(sealed.status, WorkStatus::Sealed);
    let results = store.results().of_crawl(crawl).unwrap();
    assert!(
        results.iter().all(|r| r.status == ResultStatus::Cancelled),
        "{results:?}"
    );
    let rows = store.processes().list(&Default::default()).unwrap();
    assert!(rows.iter().all(|r| !r.status.is_live()), "{rows:?}");
    assert!(common::tagged_pids(&daemon.tag).is_empty());
}

/// A plugin dir beside the fixtures with one hook, `flaky`: while `<dir>/fixed` does not exist it
/// fails (FLAKY_MODE=fail) or sleeps for ever (FLAKY_MODE=hang); once it exists, it succeeds.
fn flaky_daemon(mode: &str, extra: &str) -> TestDaemon {
    let mut daemon = TestDaemon::prepare("");
    let plugins = daemon.path("flaky-plugins");
    let hook_dir = plugins.join("flaky");
    std::fs::create_dir_all(&hook_dir).unwrap();
    let hook = hook_dir.join("on_Snapshot__40_flaky.sh");
    let fixed = daemon.path("fixed");
    std::fs::write(
        &hook,
        format!(
            "#!/usr/bin/env bash\n\
             if [ -e {fixed:?} ]; then\n\
               echo '{{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"fixed\"}}'\n\
               exit 0\n\
             fi\n\
             if [ \"$FLAKY_MODE\" = hang ]; then exec sleep 300; fi\n\
             echo 'not yet' >&2; exit 1\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        &daemon.config,
        format!(
            "{}{}[timeouts]\nkill_grace = \"500ms\"\nmin_grace = \"200ms\"\n\
             [plugins.flaky]\nenv = {{ FLAKY_MODE = \"{mode}\" }}\n{extra}",
            TestDaemon::BASE_CONFIG,
            plugins_config(&[&plugins])
        ),
    )
    .unwrap();
    daemon.launch();
    daemon
}

fn only_result(daemon: &TestDaemon, crawl: i64) -> abxd::store::HookResult {
    let results = daemon.store().results().of_crawl(crawl).unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    results.into_iter().next().unwrap()
}

#[test]
fn retry_runs_a_failed_result_again_and_it_can_succeed() {
    let daemon = flaky_daemon("fail", "");
    let crawl = daemon.add(&["--plugins", "flaky", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    assert_eq!(only_result(&daemon, crawl).status, ResultStatus::Failed);
    // Nothing else to retry than what failed; a running or unknown crawl is refused.
    let none = daemon.ctl(&[
        "retry",
        &crawl.to_string(),
        "--hook",
        "on_Snapshot__10_other.sh",
    ]);
    assert_eq!(code(&none), Some(exit::USAGE), "{}", text(&none));
    assert!(text(&none).contains("nothing to retry"), "{}", text(&none));
    let unknown = daemon.ctl(&["retry", "999"]);
    assert_eq!(code(&unknown), Some(exit::USAGE), "{}", text(&unknown));

    std::fs::write(daemon.path("fixed"), "").unwrap();
    let output = daemon.ctl(&["retry", &crawl.to_string()]);
    assert_eq!(code(&output), Some(exit::OK), "{}", text(&output));
    assert!(
        text(&output).contains("1 results to run"),
        "{}",
        text(&output)
    );
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    let result = only_result(&daemon, crawl);
    assert_eq!(result.status, ResultStatus::Succeeded, "{result:?}");
    assert_eq!(result.output.as_deref(), Some("fixed"));
    let sealed = daemon.store().crawls().get(crawl).unwrap().unwrap();
    assert_eq!(
        sealed.outcome.map(|o| o.to_string()).as_deref(),
        Some("finished")
    );
    // A success is never run again.
    let again = daemon.ctl(&["retry", &crawl.to_string(), "--all"]);
    assert_eq!(code(&again), Some(exit::USAGE), "{}", text(&again));
}

#[test]
fn retry_runs_a_result_interrupted_three_times_again_also_with_the_daemon_down() {
    // Interrupted three times (limits.max_result_attempts = 3, the default), a result ends
    // failed: "interrupted 3 times; not run again".
    let mut daemon = flaky_daemon("hang", "");
    let crawl = daemon.add(&["--plugins", "flaky", "http://127.0.0.1:9/"]);
    for attempt in 1..=3 {
        wait_until(&format!("attempt {attempt} to start"), WAIT, || {
            let result = daemon
                .store()
                .results()
                .of_crawl(crawl)
                .ok()?
                .into_iter()
                .next()?;
            (result.status == ResultStatus::Started && result.attempts == attempt).then_some(())
        });
        daemon.crash();
        daemon.launch();
    }
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    let result = only_result(&daemon, crawl);
    assert_eq!(result.status, ResultStatus::Failed);
    assert!(
        result
            .output
            .as_deref()
            .unwrap_or("")
            .contains("interrupted 3 times"),
        "{result:?}"
    );
    // Retried while abxd is down: written to the database, run at the next start.
    daemon.signal(Signal::SIGTERM);
    daemon.wait_exit();
    std::fs::write(daemon.path("fixed"), "").unwrap();
    let output = daemon.ctl(&["retry", &crawl.to_string()]);
    assert_eq!(code(&output), Some(exit::OK), "{}", text(&output));
    assert!(
        text(&output).contains("abxd is not running"),
        "{}",
        text(&output)
    );
    let queued = only_result(&daemon, crawl);
    assert_eq!(queued.status, ResultStatus::Queued);
    assert_eq!(queued.attempts, 0, "the interruption count is reset");
    daemon.launch();
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    assert_eq!(only_result(&daemon, crawl).status, ResultStatus::Succeeded);
}

#[test]
fn pause_starts_no_new_hook_and_resume_lets_the_crawl_finish() {
    // Two snapshots, one at a time; each runs `sleepy` (1 s) then `ok`.
    let daemon = TestDaemon::start_with(&fixture_config(
        "[limits]\nmax_snapshot_workers = 1\n[plugins.sleepy]\nenv = { SLEEPY_SECONDS = \"1\" }\n",
    ));
    let crawl = daemon.add(&[
        "--plugins",
        "sleepy,ok",
        "http://127.0.0.1:9/a",
        "http://127.0.0.1:9/b",
    ]);
    wait_started(&daemon, crawl);
    let paused = daemon.ctl(&["pause", &crawl.to_string()]);
    assert_eq!(code(&paused), Some(exit::OK), "{}", text(&paused));
    let again = daemon.ctl(&["pause", &crawl.to_string()]);
    assert_eq!(code(&again), Some(exit::USAGE));
    assert!(text(&again).contains("paused already"), "{}", text(&again));
    assert!(daemon.ctl_ok(&["crawls"]).contains("(paused)"));
    // The running hook finishes; nothing else starts while paused.
    wait_until("the running hook to finish", WAIT, || {
        let results = daemon.store().results().of_crawl(crawl).ok()?;
        (!results.iter().any(|r| r.status == ResultStatus::Started)).then_some(())
    });
    let started_then: Vec<_> = daemon
        .store()
        .results()
        .of_crawl(crawl)
        .unwrap()
        .into_iter()
        .filter(|r| r.status != ResultStatus::Queued)
        .map(|r| r.id)
        .collect();
    let hooks_then = daemon.live_rows(abxd::domain::Kind::Hook).len();
    assert_eq!(hooks_then, 0);
    // (Workers of a paused crawl look again every second: three looks without a start.)
    let quiet_until = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < quiet_until {
        let results = daemon.store().results().of_crawl(crawl).unwrap();
        let started_now = results
            .iter()
            .filter(|r| r.status != ResultStatus::Queued)
            .count();
        assert_eq!(
            started_now,
            started_then.len(),
            "a hook started while paused: {results:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let resumed = daemon.ctl(&["resume", &crawl.to_string()]);
    assert_eq!(code(&resumed), Some(exit::OK), "{}", text(&resumed));
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    let results = daemon.store().results().of_crawl(crawl).unwrap();
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(
        results.iter().all(|r| r.status == ResultStatus::Succeeded),
        "{results:?}"
    );
    let not_paused = daemon.ctl(&["resume", &crawl.to_string()]);
    assert_eq!(code(&not_paused), Some(exit::USAGE));
    assert!(
        text(&not_paused).contains("is sealed"),
        "{}",
        text(&not_paused)
    );
}

/// What Rust's `{:?}` prints and a person should never read: `Some(…)`, `Code(75)`, `Foo { a: … }`.
fn debug_text(line: &str) -> Option<&'static str> {
    let patterns: [(&str, &'static str); 7] = [
        ("Some(", "Some(…)"),
        ("None)", "None"),
        ("Code(", "Code(…)"),
        ("Ok(", "Ok(…)"),
        ("Err(", "Err(…)"),
        ("Kind(", "…Kind(…)"),
        (" { ", "Struct { … }"),
    ];
    patterns
        .iter()
        .find(|(needle, _)| line.contains(needle))
        .map(|(_, what)| *what)
}

#[test]
fn no_rust_debug_text_reaches_the_log_or_the_terminal() {
    let daemon = TestDaemon::start_with(&fixture_config("[plugins.slow]\ntimeout = \"1s\"\n"));
    let crawl = daemon.add(&["--plugins", "ok,failer,skipper,slow", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    let (row, _) = daemon.spawn(&["sleep", "300"]);
    daemon.ctl_ok(&["kill", &row.to_string()]);
    let mut printed = String::new();
    for args in [
        &["show", &crawl.to_string()][..],
        &["crawls"],
        &["ps", "--all"],
        &["status"],
        &["plugins"],
        &["kill", "99999"],
        &["cancel", &crawl.to_string()],
        &["retry", "99999"],
    ] {
        printed.push_str(&text(&daemon.ctl(args)));
    }
    // The daemon's log, and each worker's (data/logs).
    let mut logs = daemon.log();
    for entry in std::fs::read_dir(daemon.data_dir().join("logs")).unwrap() {
        logs.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    assert!(
        logs.contains("sealed"),
        "the workers' logs are read: {logs}"
    );
    for line in logs.lines().chain(printed.lines()) {
        // Hooks' own words (their stderr, quoted) are theirs: only abxd's lines are judged.
        if line.contains("something broke") || line.contains("ArchiveResult") {
            continue;
        }
        assert!(
            debug_text(line).is_none(),
            "{:?} in: {line}",
            debug_text(line)
        );
    }
}

#[test]
fn show_names_a_failed_hooks_exit_stderr_and_logs_and_logs_takes_it_from_there() {
    let daemon = TestDaemon::start_with(&fixture_config(""));
    let crawl = daemon.add(&["--plugins", "ok,failer", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    let show = daemon.ctl_ok(&["show", &crawl.to_string()]);
    let failed = daemon
        .store()
        .results()
        .of_crawl(crawl)
        .unwrap()
        .into_iter()
        .find(|r| r.status == ResultStatus::Failed)
        .unwrap();
    let run = daemon
        .store()
        .processes()
        .get(failed.process_id.unwrap())
        .unwrap()
        .unwrap();
    assert!(
        show.contains(&format!(
            "on_Snapshot__30_failer.sh failed (result {}, row {}, exit 3)",
            failed.id, run.id
        )),
        "{show}"
    );
    assert!(show.contains("| something broke"), "{show}");
    assert!(show.contains(run.stderr_path.as_deref().unwrap()), "{show}");

    // From the result to its whole stderr, or the last lines of each stream.
    let result = failed.id.to_string();
    let stderr = daemon.ctl_ok(&["logs", "--result", &result, "--stderr"]);
    assert!(stderr.contains("something broke"), "{stderr}");
    assert!(!stderr.contains("==> stdout"), "{stderr}");
    // The last lines of one stream.
    let (row, _) = daemon.spawn(&["sh", "-c", "printf 'one\\ntwo\\nthree\\n'"]);
    wait_until("the spawned process to end", WAIT, || {
        let row = daemon.store().processes().get(row).ok()??;
        (!row.status.is_live()).then_some(())
    });
    let tail = daemon.ctl_ok(&["logs", &row.to_string(), "--stdout", "-n", "2"]);
    let lines: Vec<&str> = tail.lines().skip(1).collect();
    assert_eq!(lines, ["two", "three"], "{tail}");
    // Followed, both streams: each line says which it is.
    let followed = daemon.ctl_ok(&["logs", "--result", &result, "-f"]);
    assert!(followed.contains("stderr | something broke"), "{followed}");
    // The orchestrator's log is the daemon's stderr: said so.
    let orchestrator = daemon.ctl(&["logs", "1"]);
    assert_eq!(code(&orchestrator), Some(exit::USAGE));
    assert!(
        text(&orchestrator).contains("journalctl -u abxd"),
        "{}",
        text(&orchestrator)
    );
}

/// The shape of a JSON document, as docs/json.md documents it: keys and types, an array by its
/// first element; states (`status`, `outcome`, `end_reason`) and `version` by their values.
/// (What a cgroup measured is a number where the machine's controllers allow, else null.)
fn shape(key: &str, value: &serde_json::Value) -> serde_json::Value {
    use serde_json::{json, Value};
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(k, v))).collect())
        }
        Value::Array(items) => json!(items
            .first()
            .map(|first| vec![shape(key, first)])
            .unwrap_or_default()),
        Value::Number(_) if key == "version" => value.clone(),
        // What the cgroup measured: only where the controllers are (not on every machine).
        Value::Number(_) | Value::Null if ["cpu_usec", "memory_peak"].contains(&key) => {
            json!("<number or null>")
        }
        Value::Number(_) => json!("<number>"),
        Value::String(_) if ["status", "outcome", "end_reason"].contains(&key) => value.clone(),
        Value::String(_) => json!("<string>"),
        Value::Bool(_) | Value::Null => value.clone(),
    }
}

fn json_of(output: Output) -> serde_json::Value {
    assert!(output.status.success(), "{}", text(&output));
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&output)))
}

#[test]
fn every_listing_and_action_has_a_versioned_json_shape() {
    let mut daemon = TestDaemon::start_with(&fixture_config(""));
    let added = json_of(daemon.ctl(&[
        "add",
        "--json",
        "--plugins",
        "ok,failer",
        "http://127.0.0.1:9/",
    ]));
    let crawl = added["crawl_id"].as_i64().unwrap();
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    let id = crawl.to_string();
    // (Before anything else runs: its live rows are the orchestrator's alone.)
    let status = json_of(daemon.ctl(&["status", "--json"]));
    let found = json_of(daemon.ctl(&["find", "--json", "http://127.0.0.1:9/"]));
    let (row, _) = daemon.spawn(&["sleep", "300"]);
    let mut shapes = vec![
        ("add", added),
        ("status", status),
        ("find", found),
        ("crawls", json_of(daemon.ctl(&["crawls", "--json"]))),
        ("show", json_of(daemon.ctl(&["show", "--json", &id]))),
        (
            "kill",
            json_of(daemon.ctl(&["kill", "--json", &row.to_string()])),
        ),
        ("retry", json_of(daemon.ctl(&["retry", "--json", &id]))),
        (
            "plugins-env",
            json_of(daemon.ctl(&["plugins", "--env", "ok", "--json"])),
        ),
    ];
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    daemon.signal(Signal::SIGTERM);
    daemon.wait_exit();
    // Queued while abxd is down: the actions on the database answer in the same shapes.
    let second = json_of(daemon.ctl(&["add", "--json", "--plugins", "ok", "http://127.0.0.1:9/b"]));
    let second = second["crawl_id"].as_i64().unwrap().to_string();
    shapes.extend([
        ("pause", json_of(daemon.ctl(&["pause", "--json", &second]))),
        (
            "resume",
            json_of(daemon.ctl(&["resume", "--json", &second])),
        ),
        (
            "cancel",
            json_of(daemon.ctl(&["cancel", "--json", &second])),
        ),
        ("plugins", json_of(daemon.ctl(&["plugins", "--json"]))),
        ("binaries", json_of(daemon.ctl(&["binaries", "--json"]))),
        ("hosts", json_of(daemon.ctl(&["hosts", "--json"]))),
        (
            "check-config",
            json_of(
                daemon
                    .abxd_command(&["check-config", "--json"])
                    .stdout(Stdio::piped())
                    .output()
                    .unwrap(),
            ),
        ),
    ]);
    // A crash leaves a process for recovery to tear down: a plan of one step at least.
    daemon.launch();
    daemon.spawn(&["sleep", "300"]);
    daemon.crash();
    let plan = daemon
        .abxd_command(&["recover", "--dry-run", "--json"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    shapes.push(("recover", json_of(plan)));
    for (name, document) in shapes {
        assert!(document["version"].is_number(), "{name}: {document}");
        insta::assert_snapshot!(
            format!("json_{name}"),
            serde_json::to_string_pretty(&shape("", &document)).unwrap()
        );
    }
}

#[test]
fn prune_dry_run_counts_and_prune_deletes_old_rows_and_shrinks_the_file_leaving_live_ones() {
    let daemon = TestDaemon::start_with(&fixture_config(""));
    // Rows enough that their pages are worth giving back.
    for _ in 0..300 {
        daemon.spawn(&[
            "sh",
            "-c",
            "echo a fairly long line of output to the log file",
        ]);
    }
    let (live, pid) = daemon.spawn(&["sleep", "300"]);
    wait_until("the short-lived rows to end", WAIT, || {
        let rows = daemon.store().processes().list(&Default::default()).ok()?;
        (rows.iter().filter(|r| r.status.is_live()).count() == 2).then_some(())
    });
    let count = |daemon: &TestDaemon| {
        daemon
            .store()
            .processes()
            .list(&Default::default())
            .unwrap()
            .len()
    };
    let before = count(&daemon);
    let dry = json_of(daemon.ctl(&["prune", "--json", "--older-than", "0s", "--dry-run"]));
    assert_eq!(dry["rows"], 300, "{dry}");
    assert_eq!(count(&daemon), before, "a dry run deletes nothing");
    let done = json_of(daemon.ctl(&["prune", "--json", "--older-than", "0s"]));
    assert_eq!(done["rows"], 300, "{done}");
    assert!(
        done["bytes_after"].as_u64() < done["bytes_before"].as_u64(),
        "the file gives the space back: {done}"
    );
    let on_disk = std::fs::metadata(daemon.database()).unwrap().len();
    assert!(
        on_disk <= done["bytes_after"].as_u64().unwrap(),
        "{on_disk} bytes on disk: {done}"
    );
    assert_eq!(count(&daemon), before - 300);
    let row = daemon.store().processes().get(live).unwrap().unwrap();
    assert!(row.status.is_live());
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "nothing live touched"
    );
    // With abxd down too.
    let mut daemon = daemon;
    daemon.signal(Signal::SIGTERM);
    daemon.wait_exit();
    let down = json_of(daemon.ctl(&["prune", "--json", "--older-than", "0s"]));
    assert_eq!(down["daemon_running"], false, "{down}");
    assert!(
        down["rows"].as_u64().unwrap() >= 1,
        "the live row ended with abxd: {down}"
    );
}

/// `[retention]` in the daemon: a long history's rows go a share a loop turn (a first prune of
/// them all at once would hold the loop), and the daemon answers while they do, until none is
/// left.
#[test]
fn retention_prunes_a_long_history_in_shares_and_the_daemon_answers_meanwhile() {
    let mut daemon = TestDaemon::start_with(&fixture_config("[retention]\nkeep_days = 30\n"));
    daemon.signal(Signal::SIGTERM);
    daemon.wait_exit();
    // Five thousand hook rows of work that ended a year ago, no crawl's.
    let conn = rusqlite::Connection::open(daemon.database()).unwrap();
    let year_ago = abxd::store::now_ms() - 365 * 86_400_000;
    conn.execute(
        "INSERT INTO processes (kind, argv, cwd, status, created_at, started_at, ended_at, \
         end_reason, exit_code) \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) \
         SELECT 'hook', '[\"old.sh\"]', '/', 'exited', ?1, ?1, ?1 + 5, 'exited', 0 FROM n",
        [year_ago],
    )
    .unwrap();
    drop(conn);
    let old = |daemon: &TestDaemon| {
        let rows = daemon
            .store()
            .processes()
            .list(&Default::default())
            .unwrap();
        rows.iter().filter(|r| r.argv == ["old.sh"]).count()
    };
    assert_eq!(old(&daemon), 5000);
    daemon.launch();
    wait_until("retention to prune every old row", WAIT, || {
        // (Each wait asks the daemon too: it answers between its shares.)
        daemon.ctl_ok(&["status"]);
        (old(&daemon) == 0).then_some(())
    });
    let log = daemon.log();
    let shares = log.matches("more at the next turn").count();
    assert!(shares >= 2, "in shares of 2 000, not at once: {log}");
}

#[test]
fn ps_narrows_to_a_crawl_or_a_time_and_shows_when_each_process_started() {
    let daemon = TestDaemon::start_with(&fixture_config(""));
    let crawl = daemon.add(&["--plugins", "ok", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, CRAWL_WAIT);
    let (early, _) = daemon.spawn(&["sleep", "300"]);
    let started = |row: i64| {
        daemon
            .store()
            .processes()
            .get(row)
            .unwrap()
            .unwrap()
            .started_at
            .unwrap()
    };
    let early_at = started(early);
    // A second later (a condition on the clock, bounded like any other wait):
    wait_until("a second to pass", WAIT, || {
        (abxd::store::now_ms() > early_at + 1000).then_some(())
    });
    let (late, _) = daemon.spawn(&["sleep", "301"]);
    let ids = |args: &[&str]| -> Vec<i64> {
        let mut all = vec!["ps", "--json"];
        all.extend_from_slice(args);
        json_of(daemon.ctl(&all))["processes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_i64().unwrap())
            .collect()
    };
    let of_crawl = ids(&["--all", "--crawl", &crawl.to_string()]);
    let rows = daemon
        .store()
        .processes()
        .list(&Default::default())
        .unwrap();
    let expected: Vec<i64> = rows
        .iter()
        .filter(|r| r.crawl_id == Some(crawl))
        .map(|r| r.id)
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(of_crawl, expected);
    // Since halfway between the two starts: the late one, not the early one.
    let half = (started(late) - early_at) / 2;
    let age = abxd::store::now_ms() - early_at - half;
    let recent = ids(&["--since", &format!("{age}ms")]);
    assert!(recent.contains(&late), "{recent:?}");
    assert!(!recent.contains(&early), "{recent:?}");
    // STARTED: the time of day each started.
    let table = daemon.ctl_ok(&["ps"]);
    let header = table.lines().next().unwrap();
    assert!(header.contains("STARTED"), "{table}");
    let line = table
        .lines()
        .find(|l| l.contains("sleep 301"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        line.split_whitespace()
            .any(|w| w.len() == 8 && w.matches(':').count() == 2),
        "{line}"
    );
}

#[test]
fn ps_watch_redraws_on_a_terminal_when_the_table_changes() {
    use std::io::Read;
    let daemon = TestDaemon::start_with(&fixture_config(""));
    // Under a pseudo-terminal (script(1)), as a person runs it.
    let command = format!(
        "{} --config {} ps --watch",
        common::abxctl_bin(),
        daemon.config.display()
    );
    let mut watch = Reaped(
        std::process::Command::new("script")
            .args(["-qfec", &command, "/dev/null"])
            .env(common::TAG_ENV, &daemon.tag)
            .env("COLUMNS", "200")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stdout = watch.0.stdout.take().unwrap();
    let (sender, screens) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buffer) {
            if n == 0 || sender.send(buffer[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut wait_for = |what: &str| {
        wait_until(&format!("the watch to show {what}"), WAIT, || {
            while let Ok(chunk) = screens.try_recv() {
                seen.extend(chunk);
            }
            let text = String::from_utf8_lossy(&seen);
            text.contains(what).then_some(())
        });
    };
    wait_for("\x1b[2J");
    wait_for("orchestrator");
    let (row, _) = daemon.spawn(&["sleep", "4242"]);
    wait_for("sleep 4242");
    let _ = daemon.ctl(&["kill", &row.to_string()]);
    drop(watch);
}

#[test]
fn under_systemd_log_lines_carry_their_priority_and_leave_the_timestamp_to_the_journal() {
    use std::os::unix::fs::MetadataExt;
    let mut daemon = TestDaemon::prepare(&fixture_config(""));
    // The log file stands for the journal's stream: JOURNAL_STREAM names its device and inode.
    std::fs::File::create(daemon.log_path()).unwrap();
    let meta = std::fs::metadata(daemon.log_path()).unwrap();
    let stream = format!("{}:{}", meta.dev(), meta.ino());
    daemon.launch_with_env(&[("JOURNAL_STREAM", &stream)]);
    daemon.signal(Signal::SIGTERM);
    daemon.wait_exit();
    let log = daemon.log();
    // Each line begins with its priority (sd-daemon(3)), which the journal takes off and keeps.
    let lines: Vec<&str> = log.lines().filter(|l| l.starts_with('<')).collect();
    assert!(!lines.is_empty(), "{log}");
    for line in &lines {
        let (priority, rest) = line.split_once('>').unwrap();
        let level = rest.trim_start_matches('[').split(' ').next().unwrap();
        let expected = match level {
            "ERROR" => "<3",
            "WARN" => "<4",
            "INFO" => "<6",
            _ => "<7",
        };
        assert_eq!(priority, expected, "{line}");
        assert!(!rest.starts_with("[20"), "a timestamp of its own: {line}");
    }
    for level in ["<6>[INFO", "<7>[DEBUG"] {
        assert!(lines.iter().any(|l| l.starts_with(level)), "{level}: {log}");
    }
    // Elsewhere (the journal's variable inherited, stderr another file) lines keep theirs.
    let mut plain = TestDaemon::prepare(&fixture_config(""));
    plain.launch_with_env(&[("JOURNAL_STREAM", "1:1")]);
    plain.signal(Signal::SIGTERM);
    plain.wait_exit();
    assert!(
        plain.log().lines().any(|l| l.starts_with("[20")),
        "{}",
        plain.log()
    );
}

/// Runs `command` under a pseudo-terminal (script(1)) with `env`, to its end; returns all it
/// printed.
fn in_terminal(daemon: &TestDaemon, command: &str, env: &[(&str, &str)]) -> String {
    let output = std::process::Command::new("script")
        .args(["-qfec", command, "/dev/null"])
        .env(common::TAG_ENV, &daemon.tag)
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn add_wait_shows_a_live_status_line_and_red_failures_on_a_terminal_and_plain_lines_in_a_pipe() {
    let daemon = TestDaemon::start_with(&fixture_config(
        "[plugins.sleepy]\nenv = { SLEEPY_SECONDS = \"1\" }\n",
    ));
    let add = |plugins: &str| {
        format!(
            "{} --config {} add --wait --plugins {plugins} http://127.0.0.1:9/{plugins}",
            common::abxctl_bin(),
            daemon.config.display()
        )
    };
    let screen = in_terminal(&daemon, &add("sleepy,failer"), &[]);
    assert!(screen.contains("hooks done"), "the status line: {screen}");
    assert!(
        screen.contains("running: on_Snapshot__10_sleepy.sh"),
        "it names what runs: {screen}"
    );
    assert!(screen.contains("\x1b[31mfailed"), "failed in red: {screen}");
    assert!(
        screen.contains("sealed (finished)"),
        "then the summary: {screen}"
    );
    // NO_COLOR: the same, without colour.
    let plain_screen = in_terminal(&daemon, &add("failer"), &[("NO_COLOR", "1")]);
    assert!(plain_screen.contains("failed"), "{plain_screen}");
    assert!(!plain_screen.contains("\x1b[31m"), "{plain_screen}");
    // A pipe: the lines alone.
    let piped = daemon.ctl(&[
        "add",
        "--wait",
        "--plugins",
        "failer",
        "http://127.0.0.1:9/p",
    ]);
    let piped = String::from_utf8_lossy(&piped.stdout);
    assert!(piped.contains("failed"), "{piped}");
    assert!(
        !piped.contains("hooks done") && !piped.contains('\x1b'),
        "{piped}"
    );
}

#[test]
fn abxd_run_stopped_by_sigterm_leaves_its_crawl_for_the_daemon_and_exits_143() {
    let daemon = TestDaemon::prepare(&fixture_config(SLEEPY_LONG));
    let (mut run, crawl) = abxd_run_with_a_hook_running(&daemon);
    kill(Pid::from_raw(run.0.id() as i32), Signal::SIGTERM).unwrap();
    let status = wait_until("abxd run to end", WAIT, || run.0.try_wait().unwrap());
    assert_eq!(status.code(), Some(exit::TERMINATED), "{}", daemon.log());
    let crawl = daemon.store().crawls().get(crawl).unwrap().unwrap();
    assert_ne!(
        crawl.status,
        WorkStatus::Sealed,
        "left for the daemon to resume"
    );
    assert!(common::tagged_pids(&daemon.tag).is_empty());
}

/// `abxctl plugins` lists the plugins the running daemon's crawls take, found in the daemon's
/// environment — a service's is systemd's, not the operator's shell's (here the daemon alone has
/// `ABX_PLUGINS_DIR`) —, and with the daemon stopped, those of its own.
#[test]
fn abxctl_plugins_lists_what_the_daemon_found_in_its_environment_not_in_abxctls() {
    let mut daemon = TestDaemon::prepare("");
    let dir = fixtures().join("plugins");
    daemon.launch_with_env(&[("ABX_PLUGINS_DIR", dir.to_str().unwrap())]);
    let plugins = |daemon: &TestDaemon| {
        let output = (daemon.ctl_command(&["plugins"]))
            .env_remove("ABX_PLUGINS_DIR")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).to_string()
    };
    let listed = plugins(&daemon);
    assert!(
        listed.contains(&dir.join("ok").display().to_string()),
        "{listed}"
    );
    daemon.signal(Signal::SIGTERM);
    assert!(daemon.wait_exit().success());
    let listed = plugins(&daemon);
    assert!(!listed.contains(&dir.display().to_string()), "{listed}");
}

/// The commands an operator reaches for: `follow` a crawl already running to its seal (as JSON
/// lines too), `crawls --status`/`--limit`, `find URL` across crawls, and `status` counting the
/// work.
#[test]
fn an_operator_follows_lists_finds_and_counts_the_work() {
    let daemon = TestDaemon::start_with(&fixture_config(
        "[plugins.sleepy]\nenv = { SLEEPY_SECONDS = \"2\" }\n",
    ));
    let out = daemon.ctl(&["follow"]);
    assert_eq!(code(&out), Some(exit::USAGE), "{}", text(&out));
    assert!(text(&out).contains("no crawl runs"), "{}", text(&out));

    let page = "http://127.0.0.1:9/page";
    let first = daemon.add(&["-p", "sleepy,failer", page]);
    wait_started(&daemon, first);
    // Followed while it runs: a JSON document a line, each result, then its seal.
    let out = daemon.ctl(&["follow", "--json"]);
    assert_eq!(code(&out), Some(exit::HOOKS_FAILED), "{}", text(&out));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ended = |hook: &str, status: &str| {
        lines.iter().any(|l| {
            l["event"] == "result"
                && l["hook"].as_str().unwrap().contains(hook)
                && l["status"] == status
                && l["url"] == page
        })
    };
    assert!(
        ended("sleepy", "succeeded") && ended("failer", "failed"),
        "{lines:#?}"
    );
    let last = lines.last().unwrap();
    assert_eq!(last["event"], "sealed", "{lines:#?}");
    assert_eq!(
        (last["crawl_id"].as_i64(), &last["outcome"]),
        (Some(first), &"finished".into())
    );
    assert_eq!(last["results"]["failed"], 1, "{last}");

    let second = daemon.add(&["-p", "sleepy", page, "http://127.0.0.1:9/other"]);
    wait_started(&daemon, second);
    daemon.ctl_ok(&["cancel", &second.to_string()]);
    daemon.wait_sealed(second, CRAWL_WAIT);
    let third = daemon.add(&["-p", "ok", "http://127.0.0.1:9/third"]);
    daemon.wait_sealed(third, CRAWL_WAIT);
    let listed = |args: &[&str]| -> Vec<i64> {
        let mut all = vec!["crawls", "--json"];
        all.extend_from_slice(args);
        let json: serde_json::Value = serde_json::from_str(&daemon.ctl_ok(&all)).unwrap();
        (json["crawls"].as_array().unwrap().iter())
            .map(|c| c["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(listed(&[]), [first, second, third]);
    assert_eq!(listed(&["--status", "cancelled"]), [second]);
    assert_eq!(listed(&["--status", "finished"]), [first, third]);
    assert_eq!(
        listed(&["--status", "sealed", "--limit", "2"]),
        [second, third]
    );
    assert!(listed(&["--status", "queued"]).is_empty());
    let out = daemon.ctl(&["crawls", "--status", "done"]);
    assert_eq!(code(&out), Some(exit::USAGE));
    assert!(text(&out).contains("finished"), "{}", text(&out));

    // Every snapshot of the page, in both crawls that had it, with where its files are.
    let found: serde_json::Value =
        serde_json::from_str(&daemon.ctl_ok(&["find", &format!("{page}#top"), "--json"])).unwrap();
    let snapshots = found["snapshots"].as_array().unwrap();
    let crawls: Vec<i64> = snapshots
        .iter()
        .map(|s| s["crawl_id"].as_i64().unwrap())
        .collect();
    assert_eq!(crawls, [first, second], "{found}");
    assert!(std::path::Path::new(snapshots[0]["dir"].as_str().unwrap()).is_dir());
    let table = daemon.ctl_ok(&["find", page]);
    assert!(
        table.starts_with("CRAWL") && table.lines().count() == 3,
        "{table}"
    );
    let none = daemon.ctl_ok(&["find", "http://127.0.0.1:9/never"]);
    assert!(none.starts_with("no snapshot of"), "{none}");

    // What ran today, counted.
    let status = daemon.ctl_ok(&["status"]);
    assert!(
        status.contains("work:     crawls 0 queued, 0 running, 0 paused"),
        "{status}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&daemon.ctl_ok(&["status", "--json"])).unwrap();
    assert_eq!(json["running"], true);
    assert_eq!(json["work"]["last_day"]["crawls_sealed"], 3, "{json}");
    assert_eq!(json["work"]["last_day"]["results_failed"], 1, "{json}");
    assert!(
        json["pid"].as_u64().is_some() && json["abxd_version"].is_string(),
        "{json}"
    );
}
