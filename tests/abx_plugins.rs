//! ArchiveBox's real hooks: abx-plugins 1.12.171 as abx-dl 1.12.183 sees them, compared with what
//! abxd sees — every hook name parsed alike, and the same hooks in the same order for a crawl of
//! `chrome,title,wget,favicon,htmltotext,parse_html_urls`. abx-dl itself answers (its Python runs
//! in the virtualenv `.ci/run` makes; `ABXD_ABX_VENV` names it).

mod common;

use common::abx::{crawl_as_abx_dl_did, serve_test_site, Reference, Tools};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The plugins whose selection and hook order the reading checks.
const SELECTED: &[&str] = &[
    "chrome",
    "title",
    "wget",
    "favicon",
    "htmltotext",
    "parse_html_urls",
];

/// abx-dl 1.12.183's answer, or `None` (outside CI only) when its virtualenv is not there.
fn ask_abx_dl() -> Option<Value> {
    let venv = std::env::var_os("ABXD_ABX_VENV").map(PathBuf::from);
    let Some(venv) = venv.filter(|v| v.join("bin/python").exists()) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "ABXD_ABX_VENV must name a virtualenv with abx-dl 1.12.183 in CI (.ci/run makes it)"
        );
        eprintln!("skipped: no abx-dl virtualenv (set ABXD_ABX_VENV; .ci/run makes one)");
        return None;
    };
    Some(common::abx::ask_abx_dl(&venv, SELECTED))
}

#[test]
fn every_hook_name_of_abx_plugins_parses_as_abx_dl_parses_it() {
    if let Some(abx_dl) = ask_abx_dl() {
        common::abx::assert_hook_names_parse_alike(&abx_dl);
    }
}

#[test]
fn a_crawl_of_the_issue_plugins_runs_the_hooks_abx_dl_runs_in_its_order() {
    if let Some(abx_dl) = ask_abx_dl() {
        common::abx::assert_selection_and_order_alike(&abx_dl, SELECTED);
    }
}

/// The plugins the comparison crawls with.
///
/// Not `screenshot`: in abx-plugins 1.12.171 it captures a tab that `chrome_tab` opened in the
/// background (`Target.createTarget` with `background: true`), and headless Chromium 156 stops
/// drawing background tabs a few seconds after the browser last drew: a capture that comes later
/// waits for a frame that never comes, and the hook is killed at its timeout. Reproduced without
/// abxd or any hook (puppeteer alone: open a background tab, wait 6 s, capture — it hangs; with
/// `bringToFront()` first it does not). abx-dl's one snapshot captures early enough; a crawl's
/// second snapshot under abxd never does, its first only on a loaded machine — so comparing the
/// hook would compare timings, not runners.
const COMPARED: &str = "chrome,title,wget,favicon,htmltotext,parse_html_urls,pdf,dom,headers";

/// The tools and the abx-plugins root abx-dl runs from, or `None` (outside CI only) when they
/// are not there.
fn tools_and_plugins_root() -> Option<(Tools, String)> {
    let tools = Tools::find()?;
    let abx_dl = ask_abx_dl()?;
    Some((tools, abx_dl["root"].as_str().unwrap().to_string()))
}

#[test]
fn archivebox_hooks_under_abxd_agree_with_abx_dl_on_a_local_page() {
    let Some((tools, root)) = tools_and_plugins_root() else {
        return;
    };
    let site = serve_test_site();
    let url = format!("http://{site}/");
    let path = tools.path();
    let chromium = tools.chromium.display().to_string();

    // abxd, started first: its install step provisions the hooks' binaries (through the daemon).
    let mut daemon = common::TestDaemon::prepare(&common::plugins_config(&[Path::new(&root)]));
    daemon.launch_with_env(&[("PATH", &path), ("CHROME_BINARY", &chromium)]);
    let output = daemon
        .abxd_command(&["install", "--plugins", COMPARED])
        .env("PATH", &path)
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "abxd install failed: {report}\n{}",
        daemon.log()
    );
    assert!(
        report.contains("chromium") && report.contains("wget"),
        "{report}"
    );

    // abx-dl, the reference.
    let reference = Reference::of(&tools, COMPARED, &url, &[]);
    assert!(
        reference.results().len() >= 8,
        "abx-dl reported too little: {:?}",
        reference.records
    );

    // abxd, the same hooks at depth 1.
    crawl_as_abx_dl_did(&daemon, &reference, COMPARED, &url, "1.12.183");
    let store = daemon.store();

    // abxd's own guarantees hold for these hooks: every hook is a row under its worker, the
    // crawl's browser is `child` rows under the launch hook, nothing of the crawl survives.
    let rows = store.processes().list(&Default::default()).unwrap();
    let by_id: std::collections::HashMap<i64, &abxd::store::ProcessRow> =
        rows.iter().map(|r| (r.id, r)).collect();
    // (Hooks of the crawl have results; the install's runs are the orchestrator's own.)
    for hook in rows
        .iter()
        .filter(|r| r.kind == abxd::domain::Kind::Hook && r.result_id.is_some())
    {
        let parent = by_id[&hook.parent_id.unwrap()].kind;
        assert!(parent.is_worker(), "{:?} under {parent}", hook.argv);
    }
    let launch = rows
        .iter()
        .find(|r| r.argv[0].ends_with("on_CrawlSetup__90_chrome_launch.daemon.bg.js"))
        .expect("the crawl's browser launch hook ran");
    let under_launch = |row: &abxd::store::ProcessRow| {
        let mut parent = row.parent_id;
        while let Some(id) = parent {
            if id == launch.id {
                return true;
            }
            parent = by_id.get(&id).and_then(|r| r.parent_id);
        }
        false
    };
    let browser: Vec<_> = rows
        .iter()
        .filter(|r| r.kind == abxd::domain::Kind::Child && under_launch(r))
        .filter(|r| r.argv.iter().any(|a| a.contains("chrom")))
        .collect();
    assert!(
        !browser.is_empty(),
        "no chromium rows under the launch hook"
    );
    daemon.assert_nothing_survives();
}

#[test]
fn abxd_install_provisions_each_declared_binary_as_a_process_of_the_table() {
    let Some((tools, root)) = tools_and_plugins_root() else {
        return;
    };
    // No daemon runs: abxd runs just for the install, and claims nothing.
    let daemon = common::TestDaemon::prepare(&common::plugins_config(&[Path::new(&root)]));
    daemon.create_database();
    let queued = daemon.add(&["http://127.0.0.1:9/", "--plugins", "wget"]);
    let output = daemon
        .abxd_command(&["install", "--plugins", "wget"])
        .env("PATH", tools.path())
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}\n{}", daemon.log());
    assert!(
        report.starts_with("ok      wget             wget"),
        "{report}"
    );
    let store = daemon.store();
    let rows = store.processes().list(&Default::default()).unwrap();
    let installer = rows
        .iter()
        .find(|r| r.argv.first().is_some_and(|a| a == "abxpkg"))
        .expect("the installer run is a row");
    assert_eq!(
        installer.argv,
        ["abxpkg", "--binproviders=env,apt,brew", "install", "wget"]
    );
    assert_eq!(installer.exit_code, Some(0));
    assert_eq!(
        store.crawls().get(queued).unwrap().unwrap().status,
        "queued"
    );
    // Naming a plugin that does not exist is refused, naming it.
    let status = daemon
        .abxd_command(&["install", "--plugins", "wgett"])
        .status()
        .unwrap();
    assert!(!status.success());
    assert!(
        daemon.log().contains("no plugin named wgett"),
        "{}",
        daemon.log()
    );
}

#[test]
fn a_plugins_binaries_are_found_on_the_path_or_installed_when_a_crawl_needs_them() {
    let Some(tools) = Tools::find() else {
        return;
    };
    let plugins = tempfile::tempdir().unwrap();
    for (plugin, binary) in [("needsit", "abxd-no-such-binary"), ("hassh", "bash")] {
        let dir = plugins.path().join(plugin);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.json"),
            format!(r#"{{"required_binaries":[{{"name":"{binary}","binproviders":"env"}}]}}"#),
        )
        .unwrap();
        let hook = dir.join(format!("on_Snapshot__10_{plugin}.sh"));
        std::fs::write(
            &hook,
            "#!/usr/bin/env -S abxpkg run --script --deps-from=./config.json:required_binaries bash\n\
             # /// script\n# ///\necho '{\"type\":\"ArchiveResult\",\"status\":\"succeeded\"}'\n",
        )
        .unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    let status_of = |daemon: &common::TestDaemon, crawl: i64, plugin: &str| {
        let results = daemon.store().results().of_crawl(crawl).unwrap();
        let result = results.iter().find(|r| r.plugin == plugin).unwrap().clone();
        (result.status.to_string(), result.output.unwrap_or_default())
    };
    let installer_runs =
        |daemon: &common::TestDaemon, binary: &str| -> Vec<abxd::store::ProcessRow> {
            (daemon
                .store()
                .processes()
                .list(&Default::default())
                .unwrap())
            .into_iter()
            .filter(|r| r.argv.first().is_some_and(|a| a == "abxpkg"))
            .filter(|r| r.argv.last().is_some_and(|a| a == binary))
            .collect()
        };
    // As abx-dl: no `abxd install` first. bash is on the PATH: found, and the plugin runs; the
    // binary no provider has is tried once, and its plugin is skipped, naming it and the fix.
    let mut daemon = common::TestDaemon::prepare(&common::plugins_config(&[plugins.path()]));
    daemon.launch_with_env(&[("PATH", &tools.path())]);
    let crawl = daemon.add(&["http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(120));
    assert_eq!(status_of(&daemon, crawl, "hassh").0, "succeeded");
    let (status, said) = status_of(&daemon, crawl, "needsit");
    assert_eq!(status, "skipped", "{said}");
    assert!(
        said.starts_with("not run: abxd-no-such-binary could not be found or installed (")
            && said.contains("via providers env")
            && said.ends_with(
                "): set ABXD_NO_SUCH_BINARY_BINARY to one that is; \
                 `abxd install --plugins needsit` tries again and says why"
            ),
        "{said}"
    );
    // Each was one installer run, a process of the table under the orchestrator.
    for binary in ["bash", "abxd-no-such-binary"] {
        let runs = installer_runs(&daemon, binary);
        assert_eq!(runs.len(), 1, "{binary}: {runs:?}");
        assert_eq!(runs[0].parent_id, Some(1), "{binary}");
        assert_eq!(
            runs[0].argv,
            ["abxpkg", "--binproviders=env", "install", binary]
        );
    }
    // Once per host: a second crawl runs no installer again.
    let again = daemon.add(&["http://127.0.0.1:9/again"]);
    daemon.wait_sealed(again, std::time::Duration::from_secs(120));
    assert_eq!(status_of(&daemon, again, "hassh").0, "succeeded");
    for binary in ["bash", "abxd-no-such-binary"] {
        assert_eq!(installer_runs(&daemon, binary).len(), 1, "{binary}");
    }

    // With `[install] auto = false`, only `abxd install` provisions: until then both are skipped,
    // each naming the command.
    let mut manual = common::TestDaemon::prepare(&format!(
        "{}[install]\nauto = false\n",
        common::plugins_config(&[plugins.path()])
    ));
    manual.launch_with_env(&[("PATH", &tools.path())]);
    let crawl = manual.add(&["http://127.0.0.1:9/"]);
    manual.wait_sealed(crawl, std::time::Duration::from_secs(120));
    for (plugin, binary) in [("needsit", "abxd-no-such-binary"), ("hassh", "bash")] {
        assert_eq!(
            status_of(&manual, crawl, plugin),
            (
                "skipped".to_string(),
                format!(
                    "not run: its binaries are not provisioned ({binary}); `abxd install \
                     --plugins {plugin}` provisions them (or set [install] auto = true)"
                )
            )
        );
    }
    assert!(installer_runs(&manual, "bash").is_empty());
    // The install provisions what can be provisioned and says what cannot.
    let output = manual
        .abxd_command(&["install"])
        .env("PATH", tools.path())
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{report}");
    assert!(report.contains("ok      hassh"), "{report}");
    assert!(
        report.contains("FAILED  needsit          abxd-no-such-binary"),
        "{report}"
    );
    let crawl = manual.add(&["http://127.0.0.1:9/again"]);
    manual.wait_sealed(crawl, std::time::Duration::from_secs(120));
    assert_eq!(status_of(&manual, crawl, "hassh").0, "succeeded");
    assert_eq!(status_of(&manual, crawl, "needsit").0, "skipped");
}
