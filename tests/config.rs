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
        for args in [&["check-config"][..], &[][..]] {
            let output = abxd(&path, args);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(abxd::exit::USAGE),
                "{text:?}: {stderr}"
            );
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
    let config = abxd::config::Config::load(&path).unwrap();
    assert_eq!(config.data_dir, std::path::Path::new("/var/lib/abxd"));
    assert_eq!(
        config.control.socket,
        std::path::Path::new("/run/abxd/abxd.sock")
    );
    assert_eq!(
        config.plugins_dirs,
        vec![std::path::PathBuf::from("/usr/share/abxd/plugins")]
    );
}
