//! The catalog and the selection, on plugin folders made for each test.

use super::env::{enabled_with, resolve, resolve_with_sources, timeout, Source};
use super::*;
use std::collections::HashMap;
use std::time::Duration;

/// A plugins dir with the given plugins: (name, config.json or "", hook file names).
fn plugins_dir(plugins: &[(&str, &str, &[&str])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, manifest, hooks) in plugins {
        let plugin = dir.path().join(name);
        std::fs::create_dir_all(&plugin).unwrap();
        if !manifest.is_empty() {
            std::fs::write(plugin.join("config.json"), manifest).unwrap();
        }
        for hook in *hooks {
            let path = plugin.join(hook);
            std::fs::write(&path, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    dir
}

fn config(text: &str) -> Config {
    Config::parse(Path::new("/etc/abxd/supervisor.toml"), text).unwrap()
}

fn no_environ(_: &str) -> Option<String> {
    None
}

#[test]
fn hooks_run_by_phase_in_nn_then_stem_order_across_plugins() {
    let dir = plugins_dir(&[
        (
            "chrome",
            "",
            &[
                "on_CrawlSetup__90_chrome_launch.daemon.bg.js",
                "on_Snapshot__30_chrome_navigate.js",
                "on_Install__10_chrome.py",
            ],
        ),
        ("wget", "", &["on_Snapshot__35_wget.finite.bg.py"]),
        ("title", "", &["on_Snapshot__30_a_title.js"]),
        ("old", "", &["on_Crawl__10_launch.bg.sh"]),
        ("__pycache__", "", &["on_Snapshot__01_x.py"]),
    ]);
    let catalog = Catalog::load(&[dir.path().to_path_buf()]);
    assert_eq!(catalog.names(), vec!["chrome", "old", "title", "wget"]);
    let all = catalog.select(&config(""), None).unwrap();
    let stems = |phase| -> Vec<String> {
        catalog
            .hooks(&all, phase)
            .into_iter()
            .map(|h| h.stem)
            .collect()
    };
    assert_eq!(
        stems(Phase::Crawl),
        vec![
            "on_Crawl__10_launch.bg",
            "on_CrawlSetup__90_chrome_launch.daemon.bg"
        ]
    );
    assert_eq!(
        stems(Phase::Snapshot),
        vec![
            "on_Snapshot__30_a_title",
            "on_Snapshot__30_chrome_navigate",
            "on_Snapshot__35_wget.finite.bg"
        ]
    );
}

#[test]
fn required_plugins_come_along_and_a_disabled_requirement_blocks() {
    let dir = plugins_dir(&[
        ("chrome", "", &["on_Snapshot__30_nav.js"]),
        (
            "title",
            r#"{"required_plugins":["chrome"]}"#,
            &["on_Snapshot__54_title.js"],
        ),
        ("wget", "", &["on_Snapshot__35_wget.py"]),
    ]);
    let catalog = Catalog::load(&[dir.path().to_path_buf()]);
    let only_title = ["title".to_string()];
    let selected = catalog.select(&config(""), Some(&only_title)).unwrap();
    assert_eq!(selected, BTreeSet::from(["chrome".into(), "title".into()]));
    let chrome_off = config("[plugins.chrome]\nenabled = false\n");
    assert!(catalog
        .select(&chrome_off, Some(&only_title))
        .unwrap()
        .is_empty());
}

#[test]
fn a_plugin_that_does_not_auto_run_runs_only_when_named_or_required() {
    let dir = plugins_dir(&[
        (
            "claudecode",
            r#"{"x-auto-run":false}"#,
            &["on_Snapshot__80_claude.py"],
        ),
        (
            "extract",
            r#"{"x-auto-run":false,"required_plugins":["claudecode"]}"#,
            &["on_Snapshot__81_extract.py"],
        ),
        ("title", "", &["on_Snapshot__54_title.js"]),
    ]);
    let catalog = Catalog::load(&[dir.path().to_path_buf()]);
    let by_default = catalog.select(&config(""), None).unwrap();
    assert_eq!(by_default, BTreeSet::from(["title".into()]));
    let named = catalog
        .select(&config(""), Some(&["extract".to_string()]))
        .unwrap();
    assert_eq!(
        named,
        BTreeSet::from(["claudecode".into(), "extract".into()])
    );
}

#[test]
fn an_unknown_plugin_is_named_with_what_exists() {
    let dir = plugins_dir(&[("title", "", &["on_Snapshot__54_title.js"])]);
    let catalog = Catalog::load(&[dir.path().to_path_buf()]);
    let err = catalog
        .select(&config(""), Some(&["wgett".to_string()]))
        .unwrap_err();
    assert_eq!(err.to_string(), "no plugin named wgett; plugins: title");
}

#[test]
fn a_hook_that_cannot_run_is_rejected_with_its_phase() {
    let dir = plugins_dir(&[("wget", "", &[])]);
    let hook = dir.path().join("wget/on_Snapshot__35_wget.py");
    std::fs::write(&hook, "#!/bin/sh\n").unwrap();
    let catalog = Catalog::load(&[dir.path().to_path_buf()]);
    let selected = catalog.select(&config(""), None).unwrap();
    let rejected = catalog.rejected(&selected, Phase::Snapshot);
    assert_eq!(rejected.len(), 1);
    assert!(rejected[0].reason.contains("not executable"));
}

const TITLE: &str = r#"{"properties":{
    "TITLE_ENABLED":{"type":"boolean","default":true,"x-aliases":["SAVE_TITLE"]},
    "TITLE_TIMEOUT":{"type":"integer","default":30,"x-fallback":"TIMEOUT"},
    "TITLE_LIST":{"type":"array","default":["a"]},
    "PATH":{"type":"string","default":""}}}"#;

fn title_catalog() -> (tempfile::TempDir, Catalog) {
    let dir = plugins_dir(&[("title", TITLE, &["on_Snapshot__54_title.js"])]);
    let catalog = Catalog::load(&[dir.path().to_path_buf()]);
    (dir, catalog)
}

#[test]
fn config_resolves_environment_over_toml_over_fallback_over_default() {
    let (_dir, catalog) = title_catalog();
    let title = &catalog.plugins["title"];
    let plain = config("");
    let resolved = resolve(title, &catalog, &plain, &no_environ);
    assert_eq!(resolved["TITLE_TIMEOUT"], "30");
    assert_eq!(resolved["TITLE_ENABLED"], "True");
    assert_eq!(resolved["TITLE_LIST"], "[\"a\"]");
    assert!(
        !resolved.contains_key("PATH"),
        "an empty default never overrides PATH"
    );
    assert_eq!(
        timeout(title, &resolved, &plain, &no_environ),
        Duration::from_secs(30)
    );
    // An explicit TIMEOUT flows through x-fallback.
    let global = config("[timeouts]\nhook_timeout = \"45s\"\n");
    let resolved = resolve(title, &catalog, &global, &no_environ);
    assert_eq!(resolved["TITLE_TIMEOUT"], "45");
    // supervisor.toml's plugin settings beat the fallback; the environment beats them.
    let toml = config("[plugins.title]\ntimeout = \"1500ms\"\n");
    let resolved = resolve(title, &catalog, &toml, &no_environ);
    assert_eq!(resolved["TITLE_TIMEOUT"], "2");
    assert_eq!(
        timeout(title, &resolved, &toml, &no_environ),
        Duration::from_millis(1500)
    );
    let environ = HashMap::from([("TITLE_TIMEOUT", "7")]);
    let lookup = |k: &str| environ.get(k).map(|v| v.to_string());
    let resolved = resolve(title, &catalog, &toml, &lookup);
    assert_eq!(resolved["TITLE_TIMEOUT"], "7");
    assert_eq!(
        timeout(title, &resolved, &toml, &lookup),
        Duration::from_secs(7)
    );
}

#[test]
fn a_plugin_is_disabled_by_its_key_an_alias_or_the_toml() {
    let (_dir, catalog) = title_catalog();
    let title = &catalog.plugins["title"];
    assert!(enabled_with(title, &catalog, &config(""), &no_environ));
    let off = HashMap::from([("SAVE_TITLE", "False")]);
    let lookup = |k: &str| off.get(k).map(|v| v.to_string());
    assert!(!enabled_with(title, &catalog, &config(""), &lookup));
    let toml = config("[plugins.title.env]\nTITLE_ENABLED = \"false\"\n");
    assert!(!enabled_with(title, &catalog, &toml, &no_environ));
    let toml = config("[plugins.title]\nenabled = false\n");
    assert!(!enabled_with(title, &catalog, &toml, &no_environ));
}

/// The collection's `ArchiveBox.conf` comes below abxd's own settings and above the fallback
/// and the defaults, as ArchiveBox puts its environment above that file; only schema keys reach
/// a hook, each shown with where it came from.
#[test]
fn archiveboxs_conf_stands_below_abxds_settings_and_above_the_defaults() {
    let (_dir, catalog) = title_catalog();
    let title = &catalog.plugins["title"];
    let collection = tempfile::tempdir().unwrap();
    std::fs::write(
        collection.path().join("ArchiveBox.conf"),
        "[SERVER_CONFIG]\nSECRET_KEY = s3cret\n[ARCHIVING_CONFIG]\nTIMEOUT = 90\nSAVE_TITLE = False\n",
    )
    .unwrap();
    let at = format!("[archivebox]\ndata_dir = {:?}\n", collection.path());
    let with_collection = config(&at);
    let resolved = resolve_with_sources(title, &catalog, &with_collection, &no_environ);
    assert_eq!(resolved["TITLE_TIMEOUT"].value, "90");
    assert_eq!(
        resolved["TITLE_TIMEOUT"].source,
        Source::Collection("TIMEOUT".into())
    );
    assert_eq!(
        resolved["TITLE_TIMEOUT"].fallback.as_deref(),
        Some("TIMEOUT")
    );
    assert_eq!(resolved["TITLE_ENABLED"].value, "False");
    assert!(!enabled_with(
        title,
        &catalog,
        &with_collection,
        &no_environ
    ));
    assert!(
        !resolved.contains_key("SECRET_KEY"),
        "ArchiveBox's own keys reach no hook"
    );
    assert_eq!(resolved["TITLE_LIST"].source, Source::Default);
    // abxd's settings stand over it, and its environment over those.
    let toml = config(&format!("{at}[plugins.title]\ntimeout = \"5s\"\n"));
    let resolved = resolve_with_sources(title, &catalog, &toml, &no_environ);
    assert_eq!(resolved["TITLE_TIMEOUT"].value, "5");
    assert_eq!(
        resolved["TITLE_TIMEOUT"].source,
        Source::Config("[plugins.title] timeout".into())
    );
    let environ = HashMap::from([("SAVE_TITLE", "True")]);
    let lookup = |k: &str| environ.get(k).map(|v| v.to_string());
    assert!(enabled_with(title, &catalog, &toml, &lookup));
}
