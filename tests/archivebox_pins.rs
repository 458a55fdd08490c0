//! ArchiveBox's own hooks as an ArchiveBox user has them, under abxd and under abx-dl: ArchiveBox
//! 0.9.73's pins (abx-dl 1.13.127, abx-plugins 1.13.162, from ArchiveBox's own virtualenv) and the
//! newest (abx-dl 1.13.273, abx-plugins 1.13.572). For each, both archive the same local page
//! with the same plugins, after `abx-dl install` and with no `abxd install`: per hook the same
//! status and `output_str`, per plugin the same files — through the daemon, and at ArchiveBox's
//! pins also through `abxd run` in an empty directory. Then ArchiveBox imports abxd's crawl and
//! lists it, every result with abxd's status.
//!
//! What this machine's registries lack is handled as a user elsewhere would handle it, by an
//! override, and said in the test's output: the npm registry here serves `abxbus` up to 2.5.56,
//! so the chrome plugin's pin (2.5.74 at 1.13.162) is lowered in a copy of the plugins named in
//! `ABX_PLUGINS_DIR` — abx-dl's override, which abxd honours the same way.

mod common;

use common::abx::{crawl_as_abx_dl_did, launch, plugins_of, serve_test_site, Reference, Tools};
use common::archivebox::{
    archivebox, export_and_wait, listed_results, new_collection, records, run_archivebox,
};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The plugins compared at ArchiveBox's pins: the issue's list, every one of them offline.
const PLUGINS: &str =
    "chrome,title,wget,favicon,htmltotext,parse_html_urls,screenshot,pdf,dom,headers,hashes";

/// The newest abxbus this machine's npm registry serves.
const REGISTRY_ABXBUS: &str = "2.5.56";

/// A copy of the plugins `root` below `dir` whose chrome plugin wants the abxbus this registry
/// has (the override an ArchiveBox user here would write), for `ABX_PLUGINS_DIR`.
fn with_registry_abxbus(root: &Path, dir: &Path) -> PathBuf {
    let copy = dir.join("plugins");
    let status = Command::new("cp")
        .args(["-r", "--no-preserve=ownership"])
        .arg(root)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success(), "cp -r {}", root.display());
    let config = copy.join("chrome/config.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let binaries = manifest["required_binaries"].as_array_mut().unwrap();
    let abxbus = (binaries.iter_mut())
        .find(|b| b["name"] == "abxbus")
        .expect("the chrome plugin requires abxbus");
    let pinned = abxbus["min_version"].as_str().unwrap().to_string();
    abxbus["min_version"] = REGISTRY_ABXBUS.into();
    abxbus["overrides"]["pnpm"]["install_args"] =
        serde_json::json!([format!("abxbus@{REGISTRY_ABXBUS}")]);
    abxbus["overrides"]["pnpm"]["version"] = REGISTRY_ABXBUS.into();
    std::fs::write(&config, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    eprintln!(
        "(this machine's npm registry lacks abxbus {pinned}: its chrome plugin is overridden to \
         abxbus {REGISTRY_ABXBUS} in a copy of the plugins, ABX_PLUGINS_DIR={})",
        copy.display()
    );
    copy
}

/// `abx-dl install PLUGIN…`, what an ArchiveBox user runs once; panics unless it succeeds.
fn abx_dl_install(tools: &Tools, plugins: &str, env: &[(&str, &str)]) {
    let output = Command::new(tools.venv.join("bin/abx-dl"))
        .arg("install")
        .args(plugins.split(','))
        .env("PATH", tools.path())
        .env("CHROME_BINARY", &tools.chromium)
        .envs(env.iter().copied())
        .env(common::TAG_ENV, common::unique_tag())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "abx-dl install failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The hook names of abxd's results for the snapshots of `crawl`, with their statuses, sorted
/// (a hook's name is its file name without the extension, as ArchiveBox lists it).
fn abxd_snapshot_results(store: &abxd::store::Store, crawl: i64) -> Vec<(String, String)> {
    let mut results: Vec<(String, String)> = (store.crawls().snapshots(crawl).unwrap().iter())
        .flat_map(|s| store.results().snapshot_results(s.id).unwrap())
        .map(|r| {
            let stem = Path::new(&r.hook).file_stem().unwrap().to_string_lossy();
            (stem.to_string(), r.status.as_str().to_string())
        })
        .collect();
    results.sort();
    results
}

/// Every installer run of the daemon found or installed its binary: none failed.
fn assert_every_binary_was_found(daemon: &common::TestDaemon) {
    let rows = daemon
        .store()
        .processes()
        .list(&Default::default())
        .unwrap();
    let failed: Vec<String> = (rows.iter())
        .filter(|r| r.argv.first().is_some_and(|a| a == "abxpkg"))
        .filter(|r| r.exit_code != Some(0))
        .map(|r| format!("{:?}: {:?}", r.argv, r.exit_code))
        .collect();
    assert!(failed.is_empty(), "installer runs failed: {failed:?}");
}

#[test]
fn abxd_reads_every_hook_and_plugin_of_both_pins_as_their_abx_dl_does() {
    let newest = std::env::var_os("ABXD_ABX_NEWEST_VENV").map(PathBuf::from);
    let archivebox_venv = archivebox().map(|a| a.parent().unwrap().parent().unwrap().to_path_buf());
    for (pin, venv) in [("1.13.127", archivebox_venv), ("1.13.273", newest)] {
        let Some(venv) = venv.filter(|v| v.join("bin/python").exists()) else {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must provide abx-dl {pin} (.ci/run does)"
            );
            eprintln!("skipped: no abx-dl {pin}");
            continue;
        };
        let plugins: Vec<&str> = PLUGINS.split(',').collect();
        let abx_dl = common::abx::ask_abx_dl(&venv, &plugins);
        common::abx::assert_hook_names_parse_alike(&abx_dl);
        common::abx::assert_selection_and_order_alike(&abx_dl, &plugins);
        eprintln!(
            "abx-dl {pin}: {} hook files read alike",
            abx_dl["parsed"].as_object().unwrap().len()
        );
    }
}

#[test]
fn a_root_abxd_resolves_binaries_as_the_hooks_user_and_records_where_they_are() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let venv_bin = archivebox.parent().unwrap().display().to_string();
    let user = common::hook_user();
    let config = format!(
        "{}[hooks]\nuser = \"{}\"\n",
        common::plugins_config(&[&common::fixtures().join("binaries")]),
        common::HOOK_USER
    );
    let mut daemon = common::TestDaemon::prepare(&config);
    let path = format!("{venv_bin}:/usr/bin:/bin");
    daemon.launch_with_env(&[("PATH", &path)]);
    let crawl = daemon.add(&["http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, common::WAIT);
    let store = daemon.store();
    let results = store.results().of_crawl(crawl).unwrap();
    assert_eq!(results[0].status, "succeeded", "{results:?}");
    // The installer ran as the hooks' user (it runs what is installed), under the orchestrator.
    let rows = store.processes().list(&Default::default()).unwrap();
    let installer = (rows.iter())
        .find(|r| r.argv.first().is_some_and(|a| a == "abxpkg"))
        .unwrap_or_else(|| panic!("no installer row: {rows:#?}"));
    assert_eq!(installer.uid, Some(user.uid.as_raw()), "{installer:?}");
    assert_eq!(installer.exit_code, Some(0), "{installer:?}");
    let listed: Value = serde_json::from_str(&daemon.ctl_ok(&["binaries", "--json"])).unwrap();
    let bash = &listed["binaries"][0];
    assert_eq!(bash["name"], "bash", "{listed}");
    assert_eq!(bash["found"], true, "{listed}");
    assert_eq!(bash["provider"], "env", "{listed}");
    assert!(
        bash["abspath"]
            .as_str()
            .is_some_and(|p| p.ends_with("/bash")),
        "{listed}"
    );
    assert!(
        bash["version"].as_str().is_some_and(|v| v.starts_with('5')),
        "{listed}"
    );
}

#[test]
fn archivebox_0_9_73s_hooks_under_abxd_agree_with_its_abx_dl_and_archivebox_imports_the_crawl() {
    let Some(archivebox) = archivebox() else {
        return;
    };
    let venv = archivebox.parent().unwrap().parent().unwrap().to_path_buf();
    let Some(tools) = Tools::with_venv(Some(venv.clone())) else {
        return;
    };
    let site = serve_test_site();
    let url = format!("http://{site}/");
    let work = tempfile::tempdir().unwrap();
    let overrides = with_registry_abxbus(&plugins_of(&venv), work.path());
    let lib = work.path().join("lib");
    let (overrides, lib) = (overrides.display().to_string(), lib.display().to_string());
    let env = [
        ("ABX_PLUGINS_DIR", overrides.as_str()),
        ("ABXPKG_LIB_DIR", lib.as_str()),
    ];

    // What an ArchiveBox user has: abx-dl's install, then abx-dl itself, the reference.
    abx_dl_install(&tools, PLUGINS, &env);
    let reference = Reference::of(&tools, PLUGINS, &url, &env);
    assert!(
        reference.results().len() >= 12,
        "abx-dl reported too little: {:?}",
        reference.records
    );

    // abxd, with no plugins dir configured and no `abxd install`: it finds ArchiveBox's plugins
    // through the PATH, the override through ABX_PLUGINS_DIR, the binaries where abx-dl put them.
    let config = format!("[archivebox]\ncommand = \"{}\"\n", archivebox.display());
    let mut daemon = common::TestDaemon::prepare(&config);
    // (Its dir is 0700: the collection's owner must reach the collection inside it.)
    std::fs::set_permissions(daemon.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let daemon_env = tools.env(&env);
    launch(&mut daemon, &daemon_env);
    // (abxctl reads the config as the daemon does, in its own environment: the same here.)
    let output = daemon
        .ctl_command(&["plugins"])
        .envs(daemon_env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    let plugins = String::from_utf8_lossy(&output.stdout);
    assert!(
        plugins.contains(&format!("{overrides}/chrome")),
        "the override's chrome plugin is not the one abxd runs:\n{plugins}"
    );
    let crawl = crawl_as_abx_dl_did(&daemon, &reference, PLUGINS, &url, "1.13.127");
    let store = daemon.store();
    let snapshots = store.crawls().snapshots(crawl).unwrap();
    assert_every_binary_was_found(&daemon);

    // ArchiveBox 0.9.73 imports the crawl: its CLI lists both snapshots sealed, with abxd's ids,
    // and every result with abxd's status.
    let collection = new_collection(&archivebox, &daemon);
    let (ok, said, stderr) = export_and_wait(&daemon, &collection, crawl);
    assert!(ok && said.contains("imported"), "{said}{stderr}");
    let listed = records(&run_archivebox(
        &archivebox,
        &collection,
        &["snapshot", "list"],
    ));
    let mut theirs: Vec<(String, String)> = (listed.iter())
        .filter(|s| s["type"] == "Snapshot")
        .map(|s| {
            (
                s["id"].as_str().unwrap().into(),
                s["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    theirs.sort();
    let mut ours: Vec<(String, String)> = (snapshots.iter())
        .map(|s| (s.uuid.clone().unwrap(), "sealed".to_string()))
        .collect();
    ours.sort();
    assert_eq!(theirs, ours, "ArchiveBox's snapshots are abxd's, sealed");
    assert_eq!(
        listed_results(&archivebox, &collection),
        abxd_snapshot_results(&store, crawl),
        "ArchiveBox's results are abxd's"
    );
    daemon.assert_nothing_survives();

    // What a user tries first: `abxd run URL` in an empty directory, no config, no install.
    let empty = tempfile::tempdir().unwrap();
    let output = Command::new(common::abxd_bin())
        .args(["run", "--hooks-user", "root", "--plugins", PLUGINS, &url])
        .current_dir(empty.path())
        .env_remove("ABXD_CONFIG")
        .envs(daemon_env.iter().map(|(k, v)| (k, v)))
        // (Torn down with the daemon's processes if this test fails.)
        .env(common::TAG_ENV, &daemon.tag)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "abxd run: {}\n{said}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let store = abxd::store::Store::open(&empty.path().join("data/abxd.sqlite3")).unwrap();
    let crawl = store.crawls().all().unwrap()[0].id;
    let snapshot = store.crawls().snapshots(crawl).unwrap()[0].id;
    let snap_dir = empty
        .path()
        .join(format!("data/crawls/{crawl}/snapshots/{snapshot}"));
    let differences = reference.differences(&store, snapshot, &snap_dir);
    assert!(
        differences.is_empty(),
        "abxd run and abx-dl 1.13.127 differ:\n{}\n{said}",
        differences.join("\n")
    );
}

/// The newest plugins whose binaries this machine's registries serve: the Chrome plugin's pins
/// (node 24.22.1 exactly, abxbus 2.5.79, puppeteer 25.16.0's dependencies) are not all here.
const NEWEST_OFFLINE: &str = "wget,favicon,htmltotext,parse_html_urls,hashes";

#[test]
fn the_newest_hooks_under_abxd_agree_with_abx_dl_1_13_273_and_what_cannot_be_had_says_why() {
    let venv = std::env::var_os("ABXD_ABX_NEWEST_VENV").map(PathBuf::from);
    let Some(tools) = Tools::with_venv(venv) else {
        return;
    };
    let site = serve_test_site();
    let url = format!("http://{site}/");
    let work = tempfile::tempdir().unwrap();
    let lib = work.path().join("lib").display().to_string();
    let env = [("ABXPKG_LIB_DIR", lib.as_str())];
    abx_dl_install(&tools, NEWEST_OFFLINE, &env);
    let reference = Reference::of(&tools, NEWEST_OFFLINE, &url, &env);
    assert_eq!(
        reference.results().len(),
        5,
        "abx-dl reported otherwise: {:?}",
        reference.records
    );

    let mut daemon = common::TestDaemon::prepare("");
    launch(&mut daemon, &tools.env(&env));
    crawl_as_abx_dl_did(&daemon, &reference, NEWEST_OFFLINE, &url, "1.13.273");
    let store = daemon.store();
    assert_every_binary_was_found(&daemon);

    // The Chrome plugin's pins cannot be had here: its hooks are skipped, each naming the binary,
    // why, and the variable an ArchiveBox user sets; a plugin that requires it says so.
    let crawl = daemon.add(&["--plugins", "chrome,title", &url]);
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(300));
    let results = store.results().of_crawl(crawl).unwrap();
    for result in &results {
        let said = result.output.as_deref().unwrap_or_default();
        assert_eq!(result.status, "skipped", "{}: {said}", result.hook);
        if result.plugin == "title" {
            assert_eq!(said, "not run: it requires chrome, which does not run");
        } else {
            assert!(
                said.contains("node could not be found or installed (")
                    && said.contains("24.22.1")
                    && said.contains("set NODE_BINARY to one that is")
                    && said.contains("`abxd install --plugins chrome` tries again"),
                "{}: {said}",
                result.hook
            );
        }
    }
    assert!(results.iter().any(|r| r.plugin == "title"), "{results:?}");
    // What was resolved is recorded and listed: found, where and by what; or not, and why.
    let listed: Value = serde_json::from_str(&daemon.ctl_ok(&["binaries", "--json"])).unwrap();
    let binary = |name: &str| {
        (listed["binaries"].as_array().unwrap().iter())
            .find(|b| b["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {listed}"))
            .clone()
    };
    let wget = binary("wget");
    assert_eq!(wget["found"], true, "{wget}");
    assert!(
        wget["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("1.")),
        "{wget}"
    );
    assert!(
        wget["abspath"]
            .as_str()
            .is_some_and(|p| p.ends_with("/wget")),
        "{wget}"
    );
    assert!(wget["provider"].is_string(), "{wget}");
    let node = binary("node");
    assert_eq!(node["found"], false, "{node}");
    assert_eq!(node["override_key"], "NODE_BINARY", "{node}");
    let table = daemon.ctl_ok(&["binaries"]);
    assert!(table.starts_with("NAME "), "{table}");
    assert!(table.contains("set NODE_BINARY to one that is"), "{table}");
}
