//! Config files as the binaries see them: the documented default loads, bad ones are refused
//! with the file, the key and the problem, and nothing starts.

mod common;

use std::process::{Command, Output};

fn abxd(config: &std::path::Path, args: &[&str]) -> Output {
    Command::new(common::abxd_bin())
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("ABXD_CONFIG")
        .output()
        .unwrap()
}

/// Runs `abxd check-config` and `abxd` on `path`, expects both to refuse it as a usage error
/// (2), and returns what each said.
fn refused_by_check_config_and_daemon(path: &std::path::Path) -> Vec<String> {
    [&["check-config"][..], &[][..]]
        .into_iter()
        .map(|args| {
            let output = abxd(path, args);
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            assert_eq!(
                output.status.code(),
                Some(abxd::exit::USAGE),
                "{args:?}: {stderr}"
            );
            stderr
        })
        .collect()
}

#[test]
fn the_documented_default_config_checks_clean() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("supervisor.toml");
    let output = abxd(&path, &["check-config"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains(": ok"));
}

#[test]
fn bad_configs_are_refused_naming_file_key_and_problem_and_nothing_starts() {
    let cases = [
        (
            "[limits]\nmax_crawl_workers = 0\n",
            "limits.max_crawl_workers",
            "at least 1",
        ),
        (
            "[limits]\nmax_snapshot_workers = -1\n",
            "limits.max_snapshot_workers",
            "-1",
        ),
        (
            "[timeouts]\nhook_timeout = \"forever\"\n",
            "timeouts.hook_timeout",
            "\"forever\"",
        ),
        (
            "[timeouts]\nkill_grace = \"0s\"\n",
            "timeouts.kill_grace",
            "longer than 0s",
        ),
        (
            "[paths]\ndata_dirr = \"x\"\n",
            "paths.data_dirr",
            "unknown field",
        ),
        ("[nonsense]\n", "nonsense", "unknown field"),
        ("[log]\nlevel = \"chatty\"\n", "log.level", "\"chatty\""),
        (
            "[control]\nmax_frame_bytes = 12\n",
            "control.max_frame_bytes",
            "got 12",
        ),
        ("[limits\n", "supervisor.toml", "line 1"),
    ];
    for (text, key, problem) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("supervisor.toml");
        std::fs::write(&path, text).unwrap();
        for stderr in refused_by_check_config_and_daemon(&path) {
            assert!(
                stderr.contains(path.to_str().unwrap()),
                "{text:?}: {stderr}"
            );
            assert!(stderr.contains(key), "{text:?} should name {key}: {stderr}");
            assert!(
                stderr.contains(problem),
                "{text:?} should say {problem}: {stderr}"
            );
        }
        assert!(
            !dir.path().join("data").exists(),
            "{text:?}: nothing was created"
        );
    }
}

#[test]
fn a_missing_config_file_is_named() {
    let output = abxd(std::path::Path::new("/nonexistent/supervisor.toml"), &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(abxd::exit::USAGE));
    assert!(stderr.contains("/nonexistent/supervisor.toml"), "{stderr}");
}

#[test]
fn the_installed_config_checks_clean_and_points_at_the_system_paths() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/supervisor.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    // Members of the abxd group (which the package creates) may use abxctl.
    assert!(text.contains("group = \"abxd\""), "{text}");
    // Each crawl's hooks run as a member of abxd-crawl of its own, abxd-hook installing (users
    // the package creates, apart from the daemon's abxd), never as root nor as the daemon.
    assert!(
        text.contains("\n[hooks]\n")
            && text.contains("\nuser = \"abxd-hook\"\n")
            && text.contains("\ncrawl_users = \"abxd-crawl\"\n"),
        "{text}"
    );
    // (This machine may have no abxd group or user: the rest is checked without those lines.)
    let text = text
        .replace("group = \"abxd\"\n", "")
        .replace("user = \"abxd-hook\"\n", "")
        .replace("crawl_users = \"abxd-crawl\"\n", "");
    let config = abxd::config::Config::parse(&path, &text).unwrap();
    assert_eq!(config.data_dir, std::path::Path::new("/var/lib/abxd"));
    assert_eq!(
        config.control.socket,
        std::path::Path::new("/run/abxd/abxd.sock")
    );
    // The plugins are found as abx-dl finds them (ArchiveBox's, where pip put them), else the
    // bundled ones (`config::discover`); the line that pins them is there, valid.
    assert!(!text.contains("\nplugins_dirs"), "{text}");
    let pinned = text.replace("# plugins_dirs = ", "plugins_dirs = ");
    assert_eq!(
        abxd::config::Config::parse(&path, &pinned)
            .unwrap()
            .plugins_dirs,
        vec![std::path::PathBuf::from("/usr/share/abxd/plugins")]
    );
    // The web view is off until the operator turns it on; the line that would is there, valid.
    assert_eq!(config.web, None);
    let on = text.replace("# listen = ", "listen = ");
    let on = abxd::config::Config::parse(&path, &on).unwrap();
    assert_eq!(
        on.web.map(|w| w.to_string()).as_deref(),
        Some("127.0.0.1:8631")
    );
}

#[test]
fn check_config_refuses_what_the_daemon_refuses_and_prints_the_resolved_settings() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let cases = [
        (
            "[paths]\nplugins_dirs = [\"missing\"]\n",
            "paths.plugins_dirs",
        ),
        (
            &format!("[paths]\ndata_dir = {:?}\n", file.display().to_string()) as &str,
            "paths.data_dir",
        ),
    ];
    for (text, key) in cases {
        let path = dir.path().join("supervisor.toml");
        std::fs::write(&path, text).unwrap();
        for stderr in refused_by_check_config_and_daemon(&path) {
            assert!(stderr.contains(key), "{text:?}: {stderr}");
        }
    }
    // A good file: the settings abxd runs with, as TOML that reads back to the same config.
    let path = dir.path().join("supervisor.toml");
    std::fs::write(&path, "[limits]\nmax_crawl_workers = 7\n").unwrap();
    let output = abxd(&path, &["check-config"]);
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("Config {"), "no Rust debug text: {stdout}");
    let printed = abxd::config::Config::parse(&path, &stdout).unwrap();
    assert_eq!(printed, abxd::config::Config::load(&path).unwrap());
    assert_eq!(printed.limits.max_crawl_workers, 7);
    assert!(
        !dir.path().join("data").exists(),
        "check-config creates nothing"
    );
}

#[test]
fn with_no_config_file_abxd_runs_on_the_built_in_defaults_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    let tag = common::unique_tag();
    let daemon = Command::new(common::abxd_bin())
        .current_dir(dir.path())
        .env_remove("ABXD_CONFIG")
        .env(common::TAG_ENV, &tag)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    struct Stop<'a>(&'a str);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            common::kill_tagged(self.0);
        }
    }
    let _stop = Stop(&tag);
    let ctl = |args: &[&str]| {
        Command::new(common::abxctl_bin())
            .current_dir(dir.path())
            .env_remove("ABXD_CONFIG")
            .args(args)
            .output()
            .unwrap()
    };
    common::wait_until("abxd on defaults to answer", common::WAIT, || {
        ctl(&["status"]).status.success().then_some(())
    });
    assert!(dir.path().join("data/abxd.sqlite3").exists());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let output = daemon.wait_with_output().unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("running on the built-in defaults"),
        "{stderr}"
    );
    // A config the operator names must exist.
    let output = abxd(&dir.path().join("typo.toml"), &["check-config"]);
    assert_eq!(output.status.code(), Some(abxd::exit::USAGE));
}

#[test]
fn abxctl_still_reaches_the_daemon_when_the_file_has_a_typo_and_notices_another_data_dir() {
    let socket_dir = tempfile::tempdir().unwrap();
    let socket = socket_dir.path().join("abxd.sock");
    // (The test config starts with its [control] table: the socket goes into it.)
    let mut daemon =
        common::TestDaemon::start_with(&format!("socket = {:?}\n", socket.display().to_string()));
    let text = std::fs::read_to_string(&daemon.config).unwrap();
    assert!(daemon.ctl(&["status"]).status.success(), "{text}");
    let config = daemon.config.clone();
    std::fs::write(&config, format!("{text}[limits]\nmax_crawl_workerz = 3\n")).unwrap();
    for args in [&["status"][..], &["ps"]] {
        let output = daemon.ctl(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{args:?}: {stderr}");
        assert!(stderr.contains("warning"), "{stderr}");
        assert!(stderr.contains("limits.max_crawl_workerz"), "{stderr}");
    }
    // The same socket, another data dir: status says the daemon runs with another config.
    std::fs::write(
        &config,
        format!("{text}[paths]\ndata_dir = \"elsewhere\"\n"),
    )
    .unwrap();
    let output = daemon.ctl(&["status"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("runs with another config"), "{stdout}");
    std::fs::write(&config, &text).unwrap();
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    daemon.wait_exit();
}

#[test]
fn check_config_run_by_root_checks_the_data_dir_for_the_user_who_owns_it() {
    // As `sudo abxd check-config` on a packaged install: the data dir is the service user's.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::os::unix::fs::chown(
        &data,
        Some(common::UNPRIVILEGED),
        Some(common::UNPRIVILEGED),
    )
    .unwrap();
    let path = dir.path().join("supervisor.toml");
    std::fs::write(&path, "").unwrap();
    let output = abxd(&path, &["check-config"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Writable by others, it is refused whoever asks.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    let output = abxd(&path, &["check-config"]);
    assert_eq!(output.status.code(), Some(abxd::exit::USAGE));
    assert!(String::from_utf8_lossy(&output.stderr).contains("writable by group or others"));
}
