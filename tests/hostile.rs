//! Hostile input from every side — the socket, the config, plugins, the database — and who may
//! talk to the daemon. Each test is named for the attack it survives, checks the exact error a
//! user sees, and that the daemon still answers `abxctl status` afterwards.

mod common;

use abxd::identity;
use common::{fixtures, plugins_config, wait_until, TestDaemon, WAIT};
use nix::sys::signal::Signal;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::{Duration, Instant};

fn connect(daemon: &TestDaemon) -> UnixStream {
    let stream = UnixStream::connect(daemon.data_dir().join("abxd.sock")).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    stream
}

/// Sends raw bytes, returns the first answer line.
fn exchange(daemon: &TestDaemon, bytes: &[u8]) -> String {
    let mut stream = connect(daemon);
    stream.write_all(bytes).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    line
}

/// Runs abxd with `args`, expects it to refuse with exit status `code`, and returns what it said.
fn refused_start(daemon: &TestDaemon, args: &[&str], code: i32) -> String {
    let output = daemon
        .abxd_command(args)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    stderr
}

fn still_answers(daemon: &TestDaemon) {
    let status = daemon.ctl_ok(&["status"]);
    assert!(status.contains("is running"), "{status}");
}

fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// Runs abxctl as user `nobody` on this daemon's config.
fn abxctl_as_nobody(daemon: &TestDaemon, args: &[&str]) -> std::process::Output {
    // nobody must be able to read the config and reach the socket's directory.
    for dir in [daemon.dir.path(), &daemon.data_dir()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&daemon.config, std::fs::Permissions::from_mode(0o644)).unwrap();
    Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            common::abxctl_bin(),
        ])
        .arg("--config")
        .arg(&daemon.config)
        .args(args)
        .output()
        .expect("setpriv (util-linux) runs abxctl as nobody")
}

#[test]
fn a_stranger_cannot_connect_to_the_socket_at_all() {
    let daemon = TestDaemon::start();
    let socket = daemon.data_dir().join("abxd.sock");
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660);
    let output = abxctl_as_nobody(&daemon, &["status"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("may not talk to abxd on")
            && stderr.contains("only root and the socket's owner may (control.group"),
        "{stderr}"
    );
    still_answers(&daemon);
}

#[test]
fn a_stranger_with_public_read_may_read_but_not_act_and_is_told_the_rule() {
    let daemon = TestDaemon::start_with("public_read = true\n");
    let output = abxctl_as_nobody(&daemon, &["status"]);
    assert!(output.status.success(), "{output:?}");
    let output = abxctl_as_nobody(&daemon, &["kill", "1"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("abxd refused (permission_denied): permission denied: only root, user root may use this abxd (control.group)"),
        "{stderr}"
    );
    assert!(daemon
        .log()
        .contains("refused a request from a read-only peer"));
    let output = abxctl_as_nobody(&daemon, &["add", "http://127.0.0.1:9/"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("permission denied"),
        "{output:?}"
    );
    assert!(
        daemon.store().crawls().all().unwrap().is_empty(),
        "nothing queued"
    );
    still_answers(&daemon);
}

#[test]
fn a_member_of_the_configured_group_may_act() {
    // nobody's primary group is nogroup.
    let daemon = TestDaemon::start_with("group = \"nogroup\"\n");
    let socket = daemon.data_dir().join("abxd.sock");
    let group = nix::unistd::Group::from_name("nogroup").unwrap().unwrap();
    assert_eq!(
        std::os::unix::fs::MetadataExt::gid(&std::fs::metadata(&socket).unwrap()),
        group.gid.as_raw()
    );
    let output = abxctl_as_nobody(&daemon, &["kill", "999"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no process row 999"),
        "past the access check: {stderr}"
    );
    // Adding work goes through the daemon: no write access to the database is needed.
    let output = abxctl_as_nobody(&daemon, &["add", "http://127.0.0.1:9/"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout.starts_with("crawl 1 queued"), "{stdout}");
    assert_eq!(daemon.store().crawls().all().unwrap().len(), 1);
    still_answers(&daemon);
}

#[test]
fn an_unknown_group_is_refused_at_start_naming_the_key() {
    let mut daemon = TestDaemon::prepare("group = \"no-such-group-here\"\n");
    let stderr = refused_start(&daemon, &["check-config"], abxd::exit::USAGE);
    assert!(
        stderr.contains("key `control.group`: no group named \"no-such-group-here\""),
        "{stderr}"
    );
    daemon.launch_expecting_failure();
}

#[test]
fn malformed_unknown_versioned_and_oversized_frames_get_error_answers() {
    let daemon = TestDaemon::start_with("max_frame_bytes = 4096\n");
    let cases: [(&[u8], &str); 4] = [
        (b"{this is not json\n", "\"code\":\"malformed\""),
        (
            b"{\"version\":1,\"request\":{\"type\":\"reboot\"}}\n",
            "\"code\":\"unknown_request\"",
        ),
        (
            b"{\"version\":7,\"request\":{\"type\":\"status\"}}\n",
            "\"code\":\"unsupported_version\"",
        ),
        (&[b'x'; 10_000], "\"code\":\"frame_too_large\""),
    ];
    for (bytes, expected) in cases {
        let answer = exchange(&daemon, bytes);
        assert!(answer.contains(expected), "{expected} in {answer}");
    }
    still_answers(&daemon);
}

#[test]
fn a_half_frame_that_stalls_makes_no_other_client_wait() {
    let daemon = TestDaemon::start();
    let mut stalled = connect(&daemon);
    stalled.write_all(b"{\"version\":1,\"requ").unwrap();
    // Never finished, never closed: others are served meanwhile.
    for _ in 0..5 {
        still_answers(&daemon);
    }
    drop(stalled);
    still_answers(&daemon);
}

#[test]
fn a_client_that_never_reads_its_answers_keeps_daemon_memory_bounded() {
    let daemon = TestDaemon::start();
    let before = rss_kib(daemon.pid());
    let mut greedy = connect(&daemon);
    greedy.set_nonblocking(true).unwrap();
    let request = b"{\"version\":1,\"request\":{\"type\":\"status\"}}\n".repeat(1000);
    let mut sent = 0usize;
    // Send 20 MB of requests without reading a byte of the answers, as far as the daemon takes.
    for _ in 0..500 {
        match greedy.write(&request) {
            Ok(n) => sent += n,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(err) => panic!("{err}"),
        }
    }
    assert!(sent > 0);
    still_answers(&daemon);
    let after = rss_kib(daemon.pid());
    assert!(
        after < before + 32 * 1024,
        "RSS grew from {before} KiB to {after} KiB"
    );
    drop(greedy);
    still_answers(&daemon);
}

#[test]
fn hundreds_of_simultaneous_connections_are_served_or_refused_and_the_daemon_carries_on() {
    let daemon = TestDaemon::start();
    let mut streams = Vec::new();
    for _ in 0..400 {
        match UnixStream::connect(daemon.data_dir().join("abxd.sock")) {
            Ok(stream) => streams.push(stream),
            Err(err) => panic!("connect: {err}"),
        }
    }
    let mut answered = 0;
    let mut refused = 0;
    for stream in &mut streams {
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let _ = stream.write_all(b"{\"version\":1,\"request\":{\"type\":\"status\"}}\n");
        let mut answer = String::new();
        let _ = BufReader::new(&*stream).read_line(&mut answer);
        if answer.contains("\"type\":\"status\"") {
            answered += 1;
        } else if answer.contains("too_many_connections") {
            refused += 1;
        }
    }
    assert_eq!(answered + refused, 400, "every connection got an answer");
    assert!(answered >= 200, "{answered} answered");
    drop(streams);
    still_answers(&daemon);
    assert!(daemon.log().contains("connections open, refusing one") || refused == 0);
}

#[test]
fn a_plugins_dir_that_does_not_exist_is_refused_at_start_and_on_reload() {
    let missing = "/nonexistent/abxd-plugins";
    let mut daemon = TestDaemon::prepare(&format!("[paths]\nplugins_dirs = [{missing:?}]\n"));
    let stderr = refused_start(&daemon, &[], abxd::exit::USAGE);
    assert!(
        stderr.contains(&format!(
            "key `paths.plugins_dirs`: {missing} is not a directory"
        )),
        "{stderr}"
    );
    // A good config; then a reload with the missing dir keeps it.
    std::fs::write(&daemon.config, TestDaemon::BASE_CONFIG).unwrap();
    std::fs::create_dir_all(daemon.path("plugins")).unwrap();
    daemon.launch();
    std::fs::write(
        &daemon.config,
        format!(
            "{}[paths]\nplugins_dirs = [{missing:?}]\n",
            TestDaemon::BASE_CONFIG
        ),
    )
    .unwrap();
    daemon.signal(Signal::SIGHUP);
    wait_until("the refused reload", WAIT, || {
        daemon.log().contains("reload refused").then_some(())
    });
    assert!(daemon.log().contains("paths.plugins_dirs"));
    still_answers(&daemon);
}

#[test]
fn an_unwritable_data_dir_is_refused_at_start_naming_key_and_value() {
    let daemon = TestDaemon::prepare("");
    let file = daemon.path("a-file");
    std::fs::write(&file, "").unwrap();
    std::fs::write(
        &daemon.config,
        format!(
            "[paths]\ndata_dir = {:?}\n",
            file.join("data").display().to_string()
        ),
    )
    .unwrap();
    let stderr = refused_start(&daemon, &[], abxd::exit::USAGE);
    assert!(stderr.contains("key `paths.data_dir`"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} is not a writable directory",
            file.join("data").display()
        )),
        "{stderr}"
    );
}

/// A plugins dir with hooks that cannot run: not executable, a broken name, a symlink out.
fn hostile_plugins(daemon: &TestDaemon) -> std::path::PathBuf {
    let dir = daemon.path("hostile-plugins");
    let plugin = dir.join("hostile");
    std::fs::create_dir_all(&plugin).unwrap();
    let hook = |name: &str, body: &str, mode: u32| {
        let path = plugin.join(name);
        std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    hook("on_Snapshot__10_not_executable.sh", "echo never", 0o644);
    hook("on_Snapshot_20_broken_name.sh", "echo never", 0o755);
    let outside = daemon.path("outside.sh");
    std::fs::write(&outside, "#!/bin/bash\necho escaped\n").unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(&outside, plugin.join("on_Snapshot__30_symlinked_out.sh")).unwrap();
    // And hooks that misbehave while running.
    hook(
        "on_Snapshot__40_no_newline_flood.sh",
        "head -c 20000000 /dev/zero | tr '\\\\0' x; echo",
        0o755,
    );
    hook(
        "on_Snapshot__50_stderr_flood.sh",
        "yes 'noise on stderr' | head -c 20000000 >&2",
        0o755,
    );
    hook(
        "on_Snapshot__60_bad_records.sh",
        "echo '{\"type\":'; echo '{\"type\":\"Nonsense\",\"x\":1}'; echo '[1,2]'; echo done",
        0o755,
    );
    hook(
        "on_Snapshot__70_closes_stdout.sh",
        "exec 1>&-; sleep 0.2; exit 0",
        0o755,
    );
    hook(
        "on_Snapshot__80_never_reads_stdin.sh",
        "read -t 1 line; echo \"stdin gave: [$line]\"",
        0o755,
    );
    dir
}

#[test]
fn hooks_that_cannot_run_or_misbehave_are_reported_and_the_snapshot_goes_on() {
    let mut daemon = TestDaemon::prepare("");
    let plugins = hostile_plugins(&daemon);
    std::fs::write(
        &daemon.config,
        format!(
            "{}{}[limits]\nmax_log_bytes = 1048576\n[timeouts]\ndescendant_scan = \"50ms\"\n",
            TestDaemon::BASE_CONFIG,
            plugins_config(&[&plugins])
        ),
    )
    .unwrap();
    daemon.launch();
    let crawl = daemon.add(&["http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, Duration::from_secs(120));
    let results: std::collections::BTreeMap<String, abxd::store::HookResult> = daemon
        .store()
        .results()
        .of_crawl(crawl)
        .unwrap()
        .into_iter()
        .map(|r| (r.hook.clone(), r))
        .collect();
    let said = |hook: &str| {
        let r = &results[hook];
        (r.status.to_string(), r.output.clone().unwrap_or_default())
    };
    assert_eq!(
        said("on_Snapshot__10_not_executable.sh"),
        (
            "skipped".into(),
            "not run: is not executable (chmod +x it)".into()
        )
    );
    let (status, output) = said("on_Snapshot_20_broken_name.sh");
    assert_eq!(status, "skipped");
    assert!(
        output.starts_with("not run: name breaks the hook naming rule"),
        "{output}"
    );
    let (status, output) = said("on_Snapshot__30_symlinked_out.sh");
    assert_eq!(status, "skipped");
    assert!(output.contains("outside the plugins dir"), "{output}");
    // Exit 0 without an ArchiveResult record: they ran and reported nothing (abx-dl's rule).
    assert_eq!(said("on_Snapshot__40_no_newline_flood.sh").0, "noresults");
    assert_eq!(said("on_Snapshot__50_stderr_flood.sh").0, "noresults");
    assert_eq!(
        said("on_Snapshot__60_bad_records.sh"),
        (
            "noresults".into(),
            "done [2 records ignored: not valid JSON, unknown type \"Nonsense\"]".into()
        )
    );
    assert_eq!(said("on_Snapshot__70_closes_stdout.sh").0, "noresults");
    // Its stdin is /dev/null: the read ends at once, nothing waits on it.
    assert_eq!(
        said("on_Snapshot__80_never_reads_stdin.sh"),
        ("noresults".into(), "stdin gave: []".into())
    );
    // Nothing escaped through the symlink, and the logs stayed bounded.
    let snapshot = daemon.store().crawls().snapshots(crawl).unwrap()[0].id;
    let logs = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/snapshots/{snapshot}/logs"));
    for entry in std::fs::read_dir(&logs).unwrap() {
        let entry = entry.unwrap();
        let size = entry.metadata().unwrap().len();
        assert!(
            size < 20_000_000,
            "{} is {size} bytes",
            entry.path().display()
        );
    }
    let mut stderr_log = String::new();
    std::fs::File::open(logs.join("on_Snapshot__50_stderr_flood.sh.stderr.log"))
        .unwrap()
        .read_to_string(&mut stderr_log)
        .unwrap();
    assert!(
        stderr_log.contains("[abxd: log truncated"),
        "the flood was capped"
    );
    still_answers(&daemon);
}

#[test]
fn a_corrupt_database_is_refused_at_start_and_never_overwritten() {
    let mut daemon = TestDaemon::prepare("");
    std::fs::create_dir_all(daemon.data_dir()).unwrap();
    let garbage: Vec<u8> = (0..65536u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(daemon.database(), &garbage).unwrap();
    let stderr = refused_start(&daemon, &[], abxd::exit::FAILURE);
    assert!(
        stderr.contains(&format!(
            "database {} is damaged: it is not an SQLite database",
            daemon.database().display()
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(daemon.database()).unwrap(),
        garbage,
        "never overwritten"
    );
    let ps = daemon.ctl(&["ps"]);
    assert!(String::from_utf8_lossy(&ps.stderr).contains("file is not a database"));
    daemon.launch_expecting_failure();
}

#[test]
fn twenty_concurrent_adds_while_eight_snapshot_workers_write_all_succeed() {
    let mut daemon = TestDaemon::prepare(&format!(
        "{}[limits]\nmax_snapshot_workers = 8\n",
        plugins_config(&[&fixtures().join("plugins")])
    ));
    daemon.launch();
    let urls: Vec<String> = (0..16).map(|i| format!("http://127.0.0.1:9/{i}")).collect();
    let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
    args.extend(["--plugins", "ok,sleepy,recorder"]);
    let first = daemon.add(&args);
    wait_until("snapshot workers to run", WAIT, || {
        let running = daemon
            .store()
            .processes()
            .list(&Default::default())
            .unwrap()
            .iter()
            .filter(|r| r.kind == abxd::domain::Kind::SnapshotWorker && r.status.is_live())
            .count();
        (running >= 4).then_some(())
    });
    let adders: Vec<_> = (0..20)
        .map(|i| {
            Command::new(common::abxctl_bin())
                .arg("--config")
                .arg(&daemon.config)
                .args([
                    "add",
                    &format!("http://127.0.0.1:9/extra/{i}"),
                    "--plugins",
                    "ok",
                ])
                .env(common::TAG_ENV, &daemon.tag)
                .output_async()
        })
        .collect();
    for adder in adders {
        let output = adder.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert!(!stderr.contains("locked"), "{stderr}");
    }
    assert_eq!(daemon.store().crawls().all().unwrap().len(), 21);
    daemon.wait_sealed(first, Duration::from_secs(120));
    for crawl in daemon.store().crawls().all().unwrap() {
        daemon.wait_sealed(crawl.id, Duration::from_secs(120));
    }
    let log = std::fs::read_dir(daemon.data_dir().join("logs"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect::<String>();
    let locked: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("database is locked"))
        .collect();
    assert!(
        locked.is_empty(),
        "a worker saw a locked database: {locked:#?}"
    );
    still_answers(&daemon);
}

/// Spawning without waiting, for the concurrency test.
trait SpawnAsync {
    fn output_async(&mut self) -> std::process::Child;
}

impl SpawnAsync for Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// The config of a daemon on a [`SmallDisk`]: the fixture plugins, and a floor of free space
/// its few MiB leave room for (the default, 1 GiB, would hold every start back: these tests
/// fill the disk to its last byte, past any floor), then `limits` lines.
fn small_disk_config(limits: &str) -> String {
    format!(
        "{}[limits]\nmin_free_space = \"1M\"\n{limits}",
        plugins_config(&[&fixtures().join("plugins")])
    )
}

/// A small tmpfs mounted on a test's data dir, unmounted when dropped.
struct SmallDisk {
    mount: std::path::PathBuf,
}

impl SmallDisk {
    /// Mounts it, or says why the test is skipped (only outside CI, which runs as root).
    fn mount(at: &std::path::Path, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(at).unwrap();
        let mounted = Command::new("mount")
            // (mode 0750: a data dir others can write is refused.)
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0750"),
                "tmpfs",
            ])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs as root and can mount a tmpfs"
            );
            eprintln!("SKIPPED: cannot mount a tmpfs here (not root)");
            return None;
        }
        Some(SmallDisk {
            mount: at.to_path_buf(),
        })
    }

    /// Fills the disk to the last byte; returns the filler file.
    fn fill(&self) -> std::path::PathBuf {
        let filler = self.mount.join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 64 * 1024];
        loop {
            match file.write(&block) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = file.write_all(&[0u8; 512]);
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
    }
}

#[test]
fn a_full_disk_is_reported_claims_nothing_and_work_carries_on_when_space_returns() {
    let mut daemon = TestDaemon::prepare(&small_disk_config(""));
    let Some(disk) = SmallDisk::mount(&daemon.data_dir(), "6m") else {
        return;
    };
    daemon.launch();
    let first = daemon.add(&["http://127.0.0.1:9/a", "--plugins", "ok"]);
    daemon.wait_sealed(first, WAIT);

    let filler = disk.fill();
    let output = daemon.ctl(&["add", "http://127.0.0.1:9/b", "--plugins", "ok"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the disk under the database is full") && stderr.contains("space is freed"),
        "{stderr}"
    );
    still_answers(&daemon);

    // Space returns: work is accepted and done again, and what was recorded is intact.
    std::fs::remove_file(&filler).unwrap();
    let second = daemon.add(&["http://127.0.0.1:9/c", "--plugins", "ok"]);
    daemon.wait_sealed(second, WAIT);
    let store = daemon.store();
    assert_eq!(store.crawls().get(first).unwrap().unwrap().status, "sealed");
    let stale: Vec<i64> = store
        .processes()
        .list(&Default::default())
        .unwrap()
        .into_iter()
        .filter(|r| r.status.is_live() && r.kind != abxd::domain::Kind::Orchestrator)
        .map(|r| r.id)
        .collect();
    assert!(
        stale.is_empty(),
        "rows left claiming live processes: {stale:?}"
    );
    still_answers(&daemon);
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0));
}

#[test]
fn a_daemon_started_on_a_full_disk_says_so_and_starts_later() {
    let mut daemon = TestDaemon::prepare(&small_disk_config(""));
    let Some(disk) = SmallDisk::mount(&daemon.data_dir(), "6m") else {
        return;
    };
    // Queued while the daemon was down; then the disk fills.
    daemon.create_database();
    let crawl = daemon.add(&["http://127.0.0.1:9/a", "--plugins", "ok"]);
    let filler = disk.fill();
    daemon.launch_expecting_failure();
    let log = daemon.log();
    assert!(
        log.contains("No space left on device") || log.contains("disk is full"),
        "{log}"
    );

    std::fs::remove_file(&filler).unwrap();
    daemon.launch();
    daemon.wait_sealed(crawl, WAIT);
    still_answers(&daemon);
}

#[test]
fn a_disk_that_fills_while_hooks_run_leaves_no_stale_row_and_the_crawl_finishes() {
    let mut daemon = TestDaemon::prepare(&small_disk_config(
        "max_snapshot_workers = 4\n[plugins.sleepy]\nenv = { SLEEPY_SECONDS = \"1\" }\n",
    ));
    let Some(disk) = SmallDisk::mount(&daemon.data_dir(), "8m") else {
        return;
    };
    daemon.launch();
    let urls: Vec<String> = (0..6).map(|i| format!("http://127.0.0.1:9/{i}")).collect();
    let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
    args.extend(["--plugins", "sleepy,ok"]);
    let crawl = daemon.add(&args);
    let running_hooks = || {
        let hooks = daemon.live_rows(abxd::domain::Kind::Hook);
        hooks
            .into_iter()
            .filter_map(|r| r.identity)
            .collect::<Vec<_>>()
    };
    let hooks = wait_until("sleepy hooks to run", WAIT, || {
        let hooks = running_hooks();
        (hooks.len() >= 2).then_some(hooks)
    });

    // The disk fills while they run; they end (and their workers try to say so) on a full disk.
    let filler = disk.fill();
    wait_until("the hooks to end", WAIT, || {
        hooks
            .iter()
            .all(|id| !abxd::identity::check(id).is_alive())
            .then_some(())
    });
    still_answers(&daemon);

    std::fs::remove_file(&filler).unwrap();
    daemon.wait_sealed(crawl, Duration::from_secs(120));
    let store = daemon.store();
    let results = store.results().of_crawl(crawl).unwrap();
    assert_eq!(results.len(), 12, "{results:#?}");
    // Every result ran to a truthful end: succeeded, or failed by its own hook's exit — a hook
    // that started while the disk was full could not write its output (abxd's database had room
    // in its write-ahead log, so nothing told it the disk was full) — never lost, never left
    // running, never given up on by abxd.
    for result in &results {
        let hook_failed = result.status == "failed"
            && result.process_id.is_some_and(|row| {
                store
                    .processes()
                    .get(row)
                    .unwrap()
                    .is_some_and(|row| row.exit_code.is_some_and(|code| code != 0))
            });
        assert!(result.status == "succeeded" || hook_failed, "{result:#?}");
    }
    let stale: Vec<String> = store
        .processes()
        .list(&Default::default())
        .unwrap()
        .into_iter()
        .filter(|r| r.status.is_live() && r.kind != abxd::domain::Kind::Orchestrator)
        .map(|r| format!("row {} {} {:?}", r.id, r.kind, r.argv))
        .collect();
    assert!(
        stale.is_empty(),
        "rows left claiming live processes: {stale:#?}"
    );
    still_answers(&daemon);
}

/// Whether `text` holds a control character a terminal would act on (newlines and tabs aside).
fn drives_a_terminal(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
}

#[test]
fn terminal_bytes_in_argv_and_hook_output_are_printed_escaped() {
    let daemon = TestDaemon::start_with(&plugins_config(&[&fixtures().join("hostile")]));
    let add = daemon
        .ctl_command(&[
            "add",
            "http://127.0.0.1:9/",
            "--plugins",
            "terminal_bytes",
            "--wait",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // While the hook runs, its child's argv[0] holds ESC and BEL.
    let ps = wait_until("the child in ps", WAIT, || {
        let ps = daemon.ctl_ok(&["ps"]);
        ps.contains("red").then_some(ps)
    });
    assert!(ps.contains("\\x1b[31mred\\x07"), "{ps}");
    assert!(!drives_a_terminal(&ps), "{ps:?}");
    let json = daemon.ctl_ok(&["ps", "--json"]);
    assert!(
        json.contains("\\u001b[31mred\\u0007"),
        "JSON keeps the data: {json}"
    );

    let added = add.wait_with_output().unwrap();
    let progress = String::from_utf8(added.stdout).unwrap();
    assert!(progress.contains("clear\\x1b[2Jbell\\x07"), "{progress}");
    assert!(!drives_a_terminal(&progress), "{progress:?}");
    let show = daemon.ctl_ok(&["show", "1"]);
    assert!(show.contains("clear\\x1b[2Jbell\\x07"), "{show}");
    assert!(!drives_a_terminal(&show), "{show:?}");
}

#[test]
fn the_bundled_title_plugin_stores_a_title_as_text() {
    let site = tempfile::tempdir().unwrap();
    std::fs::write(
        site.path().join("index.html"),
        "<html><head><title>Evil\x1b[2J\x07 Title</title></head><body></body></html>",
    )
    .unwrap();
    let addr = abxd::serve::serve_dir(site.path()).unwrap();
    let bundled = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins");
    let daemon = TestDaemon::start_with(&plugins_config(&[&bundled]));
    let crawl = daemon.add(&[&format!("http://{addr}/"), "--plugins", "title"]);
    daemon.wait_sealed(crawl, Duration::from_secs(60));
    let result = &daemon.store().results().of_crawl(crawl).unwrap()[0];
    assert_eq!(
        result.output.as_deref(),
        Some("Evil [2J Title"),
        "{result:?}"
    );
    let title = daemon.path(&format!("data/crawls/{crawl}/snapshots/1/title/title.txt"));
    let title = std::fs::read_to_string(title).unwrap();
    assert!(!drives_a_terminal(&title), "{title:?}");
}

#[test]
fn a_database_deleted_under_the_daemon_stops_new_work_and_what_it_recorded_is_saved() {
    let mut daemon = TestDaemon::start_with(&format!(
        "{}[plugins.sleepy]\nenv = {{ SLEEPY_SECONDS = \"2\" }}\n",
        plugins_config(&[&fixtures().join("plugins")])
    ));
    let crawl = daemon.add(&["--plugins", "sleepy", "http://127.0.0.1:9/"]);
    let database = daemon.database();
    wait_until("the hook to run", WAIT, || {
        let rows = daemon
            .store()
            .processes()
            .list(&Default::default())
            .unwrap();
        rows.iter()
            .any(|r| r.kind == abxd::domain::Kind::Hook && r.status.is_live())
            .then_some(())
    });
    for suffix in ["", "-wal", "-shm"] {
        let mut path = database.clone().into_os_string();
        path.push(suffix);
        let _ = std::fs::remove_file(path);
    }

    let refused = daemon.ctl(&["add", "http://127.0.0.1:9/again"]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(
        said.contains("was deleted while abxd had it open"),
        "{said}"
    );
    assert!(said.contains("abxd.sqlite3.saved"), "{said}");
    let status = daemon.ctl_ok(&["status"]);
    assert!(status.contains("DATABASE LOST"), "{status}");

    // The running crawl goes on on the open file; nothing makes a new one at the path.
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert!(!database.exists(), "a new database was created at the path");
    let saved = abxd::store::Store::open_read_only(&database.with_file_name("abxd.sqlite3.saved"))
        .expect("what was recorded is saved");
    assert!(saved.crawls().get(crawl).unwrap().is_some());
    let rows = saved.processes().list(&Default::default()).unwrap();
    assert!(
        rows.iter().any(|r| r.kind == abxd::domain::Kind::Hook),
        "the hook's row is kept"
    );
    assert!(
        rows.iter()
            .filter(|r| r.kind == abxd::domain::Kind::Orchestrator)
            .all(|r| !r.status.is_live()),
        "the clean stop is recorded in the saved copy"
    );
}

/// `daemon` (prepared, not started) started with the hostile fixture plugin `plugin`, its
/// environment variable `key` set to `value`.
fn with_hostile_plugin(
    daemon: TestDaemon,
    plugin: &str,
    (key, value): (&str, &std::path::Path),
) -> TestDaemon {
    std::fs::write(
        &daemon.config,
        format!(
            "{}{}[plugins.{plugin}]\nenv = {{ {key} = {:?} }}\n",
            TestDaemon::BASE_CONFIG,
            plugins_config(&[&fixtures().join("hostile")]),
            value.display().to_string()
        ),
    )
    .unwrap();
    let mut daemon = daemon;
    daemon.launch();
    daemon
}

/// A file outside the data dir that abxd must never write: its content, to compare later.
fn victim(daemon: &TestDaemon, name: &str) -> (std::path::PathBuf, &'static str) {
    let path = daemon.path(name);
    std::fs::write(&path, "precious\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    (path, "precious\n")
}

#[test]
fn a_symlink_planted_at_the_lock_or_the_database_is_refused_and_its_target_untouched() {
    let mut daemon = TestDaemon::prepare("");
    std::fs::create_dir_all(daemon.data_dir()).unwrap();
    for file in [
        "abxd.lock",
        "abxd.sqlite3",
        "abxd.sqlite3-wal",
        "abxd.sqlite3-shm",
    ] {
        let (target, content) = victim(&daemon, &format!("victim-of-{file}"));
        let planted = daemon.data_dir().join(file);
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        daemon.launch_expecting_failure();
        assert!(daemon.log().contains("symbolic link"), "{}", daemon.log());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), content);
        std::fs::remove_file(&planted).unwrap();
    }
}

#[test]
fn a_hook_cannot_make_abxd_write_through_a_symlink_it_planted_where_a_log_goes() {
    let daemon = TestDaemon::prepare("");
    let (target, content) = victim(&daemon, "victim-of-a-log");
    let daemon = with_hostile_plugin(daemon, "plants_symlink", ("OUTSIDE", &target));
    // A link where the next hook's log goes: the log is created anew in its place (exclusively),
    // and the link's target is never written.
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "plants_symlink"]);
    daemon.wait_sealed(crawl, Duration::from_secs(60));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), content);
    let results = daemon.store().results().of_crawl(crawl).unwrap();
    let victim_hook = results
        .iter()
        .find(|r| r.hook.contains("victim"))
        .expect("the second hook's result");
    assert_eq!(
        victim_hook.status.to_string(),
        "succeeded",
        "{victim_hook:?}"
    );
    let log = daemon.ctl_ok(&["logs", &victim_hook.process_id.unwrap().to_string()]);
    assert!(log.contains("must not reach"), "its own log: {log}");
}

#[test]
fn a_hook_cannot_make_abxd_create_files_through_a_directory_it_swapped_for_a_symlink() {
    let daemon = TestDaemon::prepare("");
    let outside = daemon.path("outside-dir");
    std::fs::create_dir_all(&outside).unwrap();
    let daemon = with_hostile_plugin(daemon, "swaps_logs_dir", ("OUTSIDE_DIR", &outside));
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "swaps_logs_dir"]);
    daemon.wait_sealed(crawl, Duration::from_secs(60));
    let created: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert!(created.is_empty(), "written outside: {created:?}");
    let results = daemon.store().results().of_crawl(crawl).unwrap();
    let victim_hook = results
        .iter()
        .find(|r| r.hook.contains("victim"))
        .expect("the second hook's result");
    assert_eq!(victim_hook.status.to_string(), "failed", "{victim_hook:?}");
    let said = victim_hook.output.as_deref().unwrap_or_default();
    assert!(said.contains("cannot open log file"), "{said}");
}

#[test]
fn a_database_someone_else_owns_or_can_write_is_refused_and_left_as_it_is() {
    let mut daemon = TestDaemon::prepare("");
    daemon.create_database();
    let database = daemon.database();
    let before = std::fs::read(&database).unwrap();
    std::os::unix::fs::chown(&database, Some(65534), None).unwrap();
    daemon.launch_expecting_failure();
    assert!(
        daemon.log().contains("owned by uid 65534"),
        "{}",
        daemon.log()
    );
    std::os::unix::fs::chown(&database, Some(0), None).unwrap();
    std::fs::set_permissions(&database, std::fs::Permissions::from_mode(0o666)).unwrap();
    daemon.launch_expecting_failure();
    assert!(
        daemon.log().contains("writable by group or others"),
        "{}",
        daemon.log()
    );
    assert_eq!(
        std::fs::read(&database).unwrap(),
        before,
        "the file was not changed"
    );
}

#[test]
fn a_data_dir_that_group_or_others_can_write_is_refused_naming_the_fix() {
    let mut daemon = TestDaemon::prepare("");
    std::fs::create_dir_all(daemon.data_dir()).unwrap();
    std::fs::set_permissions(daemon.data_dir(), std::fs::Permissions::from_mode(0o775)).unwrap();
    daemon.launch_expecting_failure();
    let log = daemon.log();
    assert!(
        log.contains("writable by group or others (mode 0775)"),
        "{log}"
    );
    assert!(log.contains("chmod go-w"), "{log}");
}

#[test]
fn files_are_0640_and_dirs_0750_whatever_the_umask() {
    // (This test's own process: the daemon inherits the permissive umask.)
    rustix::process::umask(rustix::fs::Mode::empty());
    let daemon = TestDaemon::start_with(&plugins_config(&[&fixtures().join("plugins")]));
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "ok"]);
    daemon.wait_sealed(crawl, Duration::from_secs(60));
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&daemon.database()), 0o640);
    let snapshot = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/snapshots/1"));
    assert_eq!(mode(&snapshot), 0o750);
    let logs = snapshot.join("logs");
    assert_eq!(mode(&logs), 0o750);
    for log in std::fs::read_dir(&logs).unwrap().flatten() {
        assert_eq!(mode(&log.path()), 0o640, "{}", log.path().display());
    }
}

/// libfaketime, to step the wall clock of a daemon (and its workers and hooks) alone.
const FAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

#[test]
fn wall_clock_steps_of_an_hour_stall_no_claim_and_cut_no_grace() {
    if !std::path::Path::new(FAKETIME).exists() {
        assert!(std::env::var_os("CI").is_none(), "CI installs libfaketime");
        eprintln!("SKIPPED: libfaketime is not installed here (CI installs it)");
        return;
    }
    let daemon = TestDaemon::prepare("");
    let (clock, go) = (daemon.path("clock"), daemon.path("go"));
    std::fs::write(
        &daemon.config,
        format!(
            "{}{}[limits]\nmax_crawl_workers = 1\n[timeouts]\nmin_grace = \"300ms\"\n\
             [plugins.sleepy]\nenv = {{ SLEEPY_SECONDS = \"1\" }}\n\
             [plugins.slow_exit]\ntimeout = \"20s\"\nenv = {{ GO = {:?} }}\n",
            TestDaemon::BASE_CONFIG,
            plugins_config(&[&fixtures().join("plugins"), &fixtures().join("clock")]),
            go.display().to_string()
        ),
    )
    .unwrap();
    let mut daemon = daemon;
    std::fs::write(&clock, "+0\n").unwrap();
    let clock_file = clock.display().to_string();
    daemon.launch_with_env(&[
        ("LD_PRELOAD", FAKETIME),
        ("FAKETIME_TIMESTAMP_FILE", &clock_file),
        ("FAKETIME_NO_CACHE", "1"),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
    ]);
    let live_hook = |name: &str| {
        daemon
            .store()
            .processes()
            .list(&Default::default())
            .unwrap()
            .into_iter()
            .find(|r| r.status.is_live() && r.argv.iter().any(|a| a.contains(name)))
    };

    // −1 h while a crawl waits for the one crawl worker's slot: it is claimed when the slot
    // frees, not an hour later.
    let busy = daemon.add(&["--plugins", "sleepy", "http://127.0.0.1:9/busy"]);
    let waiting = daemon.add(&["--plugins", "ok", "http://127.0.0.1:9/waiting"]);
    wait_until("the first crawl's hook", WAIT, || live_hook("sleepy"));
    std::fs::write(&clock, "-1h\n").unwrap();
    daemon.wait_sealed(busy, WAIT);
    daemon.wait_sealed(waiting, WAIT);

    // +1 h (back from −1 h) while a background hook runs: at its snapshot's end it still gets
    // its own time to exit (its timeout), not the bare minimum grace.
    let crawl = daemon.add(&["--plugins", "slow_exit", "http://127.0.0.1:9/slow"]);
    let hook = wait_until("the background hook", WAIT, || live_hook("slow_exit.bg"));
    std::fs::write(&clock, "+0\n").unwrap();
    std::fs::write(&go, "").unwrap();
    daemon.wait_sealed(crawl, WAIT);
    let hook = daemon.store().processes().get(hook.id).unwrap().unwrap();
    assert!(
        hook.sigkill_at.is_none(),
        "SIGKILLed before its time: {hook:?}"
    );
    assert_eq!(hook.exit_code, Some(0), "{hook:?}");
}

/// The time now in ms since the epoch (what the `deadline` fixture notes).
fn epoch_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn a_foreign_write_lock_held_for_a_minute_delays_no_deadline_and_the_records_catch_up() {
    const HOLD: Duration = Duration::from_secs(60);
    const TIMEOUT_MS: i64 = 3000;
    let daemon = TestDaemon::prepare("");
    let notes = daemon.path("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(
        &daemon.config,
        format!(
            "{}{}[timeouts]\nkill_grace = \"1s\"\n\
             [plugins.deadline]\ntimeout = \"{TIMEOUT_MS}ms\"\nenv = {{ NOTES = {:?} }}\n",
            TestDaemon::BASE_CONFIG,
            plugins_config(&[&fixtures().join("plugins"), &fixtures().join("locked")]),
            notes.display().to_string()
        ),
    )
    .unwrap();
    let mut daemon = daemon;
    daemon.launch();
    let crawl = daemon.add(&["--plugins", "deadline,ok", "http://127.0.0.1:9/locked"]);
    let started: i64 = wait_until("the hook to start", WAIT, || {
        std::fs::read_to_string(notes.join("started")).ok()
    })
    .trim()
    .parse()
    .unwrap();
    let hook = wait_until("the hook's row", WAIT, || {
        daemon
            .store()
            .processes()
            .list(&Default::default())
            .unwrap()
            .into_iter()
            .find(|r| r.status.is_live() && r.argv.iter().any(|a| a.contains("deadline")))
    });
    let hook_identity = hook
        .identity
        .clone()
        .expect("a running hook has its identity");

    // An operator's `sqlite3` shell left in BEGIN IMMEDIATE, before the hook's deadline.
    let foreign = rusqlite::Connection::open(daemon.database()).unwrap();
    foreign.execute_batch("BEGIN IMMEDIATE").unwrap();
    let locked_at = Instant::now();
    assert!(
        !notes.join("sigterm").exists(),
        "the lock must be taken before the hook's deadline (the machine is too slow?)"
    );

    // Its deadline's SIGTERM, and SIGKILL (it ignores SIGTERM), go out while the lock is held.
    wait_until("the hook to be killed", WAIT, || {
        (!identity::check(&hook_identity).is_alive()).then_some(())
    });
    assert!(locked_at.elapsed() < HOLD);
    let sigterm: i64 = std::fs::read_to_string(notes.join("sigterm"))
        .expect("SIGTERM reached the hook")
        .trim()
        .parse()
        .unwrap();
    // (A figure, not a threshold: the bash trap runs between two 20 ms sleeps.)
    println!(
        "SIGTERM noted {} ms after the deadline; the lock was taken {} ms before it",
        sigterm - (started + TIMEOUT_MS),
        started + TIMEOUT_MS - (epoch_ms() - locked_at.elapsed().as_millis() as i64)
    );

    // `status` answers, saying the database is busy; `add` is refused saying so, nothing queued.
    let status = daemon.ctl_ok(&["status"]);
    assert!(status.contains("DATABASE BUSY"), "{status}");
    let added = daemon.ctl(&["add", "http://127.0.0.1:9/later"]);
    let said = String::from_utf8_lossy(&added.stderr);
    assert!(
        !added.status.success(),
        "an add under a foreign lock: {said}"
    );
    assert!(said.contains("database is busy"), "{said}");
    assert!(
        locked_at.elapsed() < HOLD,
        "status and add answered under the lock"
    );

    // Held for the whole minute, then released: every record catches up.
    std::thread::sleep(HOLD.saturating_sub(locked_at.elapsed()));
    foreign.execute_batch("ROLLBACK").unwrap();
    daemon.wait_sealed(crawl, WAIT);
    let store = daemon.store();
    let row = store.processes().get(hook.id).unwrap().unwrap();
    assert_eq!(
        row.end_reason.map(|r| r.to_string()).as_deref(),
        Some("timeout"),
        "{row:?}"
    );
    assert!(row.sigterm_at.is_some_and(|at| at <= sigterm), "{row:?}");
    assert!(row.sigkill_at.is_some(), "{row:?}");
    let results = store.results().of_crawl(crawl).unwrap();
    let deadline = results.iter().find(|r| r.plugin == "deadline").unwrap();
    assert_eq!(deadline.status, "failed", "{deadline:?}");
    let ok = results.iter().find(|r| r.plugin == "ok").unwrap();
    assert_eq!(ok.status, "succeeded", "{ok:?}");
    assert_eq!(
        store.crawls().all().unwrap().len(),
        1,
        "the refused add queued nothing"
    );
    still_answers(&daemon);
}

#[test]
fn a_write_ahead_log_grown_under_a_long_reader_is_truncated_once_the_daemon_is_idle() {
    let daemon = TestDaemon::start_with(&plugins_config(&[&fixtures().join("plugins")]));
    let wal = || {
        let mut path = daemon.database().into_os_string();
        path.push("-wal");
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    };
    // A long reader (a backup, an operator's query) keeps SQLite from restarting the log while
    // 12 MiB are written and deleted again.
    let reader = rusqlite::Connection::open(daemon.database()).unwrap();
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM processes;")
        .unwrap();
    let writer = rusqlite::Connection::open(daemon.database()).unwrap();
    writer
        .execute_batch(
            "INSERT INTO meta (key, value) VALUES ('test ballast', zeroblob(12 * 1024 * 1024));
             DELETE FROM meta WHERE key = 'test ballast';",
        )
        .unwrap();
    let grown = wal();
    assert!(
        grown > abxd::store::WAL_KEEP_BYTES,
        "the log grew: {grown} bytes"
    );
    reader.execute_batch("COMMIT").unwrap();
    drop((reader, writer));

    // The next crawl ends; the idle daemon truncates the log.
    let crawl = daemon.add(&["--plugins", "ok", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, WAIT);
    wait_until("the log to be truncated", WAIT, || {
        (wal() <= abxd::store::WAL_KEEP_BYTES).then_some(())
    });
    still_answers(&daemon);
}

#[test]
fn abxd_never_reads_a_file_a_hook_swapped_its_log_for() {
    let daemon = TestDaemon::prepare("");
    let secret = daemon.path("secret");
    std::fs::write(
        &secret,
        "{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"SECRET-TOKEN\"}\n",
    )
    .unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let daemon = with_hostile_plugin(daemon, "swaps_own_log", ("SECRET", &secret));
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "swaps_own_log"]);
    daemon.wait_sealed(crawl, Duration::from_secs(60));
    let result = &daemon.store().results().of_crawl(crawl).unwrap()[0];
    let output = result.output.clone().unwrap_or_default();
    assert!(
        !output.contains("SECRET"),
        "read through the link: {result:?}"
    );
    assert_eq!(result.status.to_string(), "noresults", "{result:?}");
    let logs = daemon.ctl(&["logs", &result.process_id.unwrap().to_string()]);
    let printed = String::from_utf8_lossy(&logs.stdout);
    assert!(
        !printed.contains("SECRET"),
        "abxctl logs read through the link: {printed}"
    );
}

#[test]
fn a_pages_links_to_files_other_schemes_the_metadata_address_and_the_hosts_own_services_never_become_snapshots(
) {
    let daemon = TestDaemon::start_with(&plugins_config(&[&fixtures().join("hostile")]));
    // The same hostile page under a crawl of a public site and under one of a local site.
    let public = daemon.add(&[
        "http://93.184.216.34:9/",
        "--plugins",
        "hostile_links",
        "--depth",
        "1",
    ]);
    let local = daemon.add(&[
        "http://127.0.0.1:9/",
        "--plugins",
        "hostile_links",
        "--depth",
        "1",
    ]);
    daemon.wait_sealed(public, WAIT);
    daemon.wait_sealed(local, WAIT);
    let urls = |crawl: i64| -> Vec<String> {
        let mut urls: Vec<String> = (daemon.store().crawls().snapshots(crawl).unwrap())
            .into_iter()
            .map(|s| s.url)
            .collect();
        urls.sort();
        urls
    };
    // Normalized (scheme case, fragment) and so once; nothing local for the public site.
    assert_eq!(
        urls(public),
        ["http://93.184.216.34:9/", "http://93.184.216.34:9/Next"]
    );
    assert_eq!(
        urls(local),
        [
            "http://10.0.0.1/admin",
            "http://127.0.0.1:9/",
            "http://93.184.216.34:9/Next",
            "http://localhost:9/"
        ]
    );
    // Every refusal counted on its crawl, by reason, with the first ones.
    let refused = |crawl: i64| -> serde_json::Value {
        let shown: serde_json::Value =
            serde_json::from_str(&daemon.ctl_ok(&["show", "--json", &crawl.to_string()])).unwrap();
        shown["crawl"]["refused"].clone()
    };
    let public_refused = refused(public);
    assert_eq!(public_refused["scheme"]["count"], 5, "{public_refused}");
    assert_eq!(
        public_refused["scheme"]["first"][0], "file:///etc/shadow",
        "{public_refused}"
    );
    assert_eq!(public_refused["metadata_address"]["count"], 2);
    assert_eq!(public_refused["private_address"]["count"], 2);
    assert_eq!(
        public_refused["private_address"]["first"],
        serde_json::json!(["http://10.0.0.1/admin", "http://localhost:9/"])
    );
    let local_refused = refused(local);
    assert_eq!(local_refused["scheme"]["count"], 5, "{local_refused}");
    assert_eq!(local_refused["metadata_address"]["count"], 2);
    assert!(
        local_refused.get("private_address").is_none(),
        "{local_refused}"
    );
    // And said by `abxctl show`, escaped (the URLs come from a page).
    let show = daemon.ctl_ok(&["show", &public.to_string()]);
    assert!(
        show.contains("refused: 5 scheme: file:///etc/shadow"),
        "{show}"
    );
    assert!(show.contains("ftp://example.com/\\x1b[2Jx"), "{show}");
    assert!(
        show.contains("refused: 2 metadata_address: http://169.254.169.254/"),
        "{show}"
    );
    assert!(show.contains("refused: 2 private_address"), "{show}");
    assert!(!drives_a_terminal(&show), "{show:?}");
    // Nothing a refused link named was archived: no snapshot directory for it.
    let crawl_dir = daemon.data_dir().join("crawls").join(public.to_string());
    let archived = walk(&crawl_dir);
    assert!(
        !archived
            .iter()
            .any(|f| f.contains("shadow") || f.contains("id_rsa")),
        "{archived:?}"
    );
}

/// Every file below `dir`, as paths relative to it.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(dir) {
                out.push(relative.display().to_string());
            }
        }
    }
    out
}
