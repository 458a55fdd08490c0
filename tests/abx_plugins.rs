//! ArchiveBox's real hooks: abx-plugins 1.12.171 as abx-dl 1.12.183 sees them, compared with what
//! abxd sees — every hook name parsed alike, and the same hooks in the same order for a crawl of
//! `chrome,title,wget,favicon,htmltotext,parse_html_urls`. abx-dl itself answers (its Python runs
//! in the virtualenv `.ci/run` makes; `ABXD_ABX_VENV` names it).

mod common;

use abxd::config::Config;
use abxd::plugins::{name, Catalog, Phase};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What abx-dl says, as JSON: the plugins dir, each hook file's parse, and the selection's hooks.
const ASK_ABX_DL: &str = r#"
import json
from pathlib import Path
import abx_plugins
from abx_dl.models import parse_hook_filename, discover_plugins, filter_plugins
root = Path(abx_plugins.__file__).parent / "plugins"
files = sorted({p.name for p in root.glob("*/on_*")})
out = {"root": str(root), "parsed": {f: parse_hook_filename(f) for f in files}}
selected = filter_plugins(discover_plugins(root), ["chrome", "title", "wget", "favicon", "htmltotext", "parse_html_urls"])
out["selected"] = sorted(selected)
for event in ["CrawlSetup", "Snapshot"]:
    hooks = [h for p in selected.values() for h in p.filter_hooks(event)]
    out[event] = [h.name for h in sorted(hooks, key=lambda h: h.sort_key)]
print(json.dumps(out))
"#;

/// abx-dl's answer, or `None` (outside CI only) when its virtualenv is not there.
fn ask_abx_dl() -> Option<Value> {
    let venv = std::env::var_os("ABXD_ABX_VENV").map(PathBuf::from);
    let python = venv.as_ref().map(|v| v.join("bin/python"));
    let Some(python) = python.filter(|p| p.exists()) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "ABXD_ABX_VENV must name a virtualenv with abx-dl 1.12.183 in CI (.ci/run makes it)"
        );
        eprintln!("skipped: no abx-dl virtualenv (set ABXD_ABX_VENV; .ci/run makes one)");
        return None;
    };
    let output = Command::new(python)
        .args(["-c", ASK_ABX_DL])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_slice(&output.stdout).unwrap())
}

#[test]
fn every_hook_name_of_abx_plugins_parses_as_abx_dl_parses_it() {
    let Some(abx_dl) = ask_abx_dl() else {
        return;
    };
    let parsed = abx_dl["parsed"].as_object().unwrap();
    assert!(parsed.len() > 50, "too few hooks: {}", parsed.len());
    for (file, theirs) in parsed {
        let ours = name::parse(file).map(|h| serde_json::json!([h.event, h.order, h.background]));
        assert_eq!(ours.unwrap_or(Value::Null), *theirs, "{file}");
    }
}

#[test]
fn a_crawl_of_the_issue_plugins_runs_the_hooks_abx_dl_runs_in_its_order() {
    let Some(abx_dl) = ask_abx_dl() else {
        return;
    };
    let root = Path::new(abx_dl["root"].as_str().unwrap());
    let config = Config::parse(
        Path::new("/etc/abxd/supervisor.toml"),
        &format!(
            "[paths]\nplugins_dirs = [{:?}]\n",
            root.display().to_string()
        ),
    )
    .unwrap();
    let catalog = Catalog::load(&config.plugins_dirs);
    let wanted: Vec<String> = [
        "chrome",
        "title",
        "wget",
        "favicon",
        "htmltotext",
        "parse_html_urls",
    ]
    .map(String::from)
    .to_vec();
    let selected = catalog.select(&config, Some(&wanted)).unwrap();
    let theirs: Vec<&str> = abx_dl["selected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let ours: Vec<&str> = selected.iter().map(String::as_str).collect();
    assert_eq!(ours, theirs, "the selection with required plugins");
    for (phase, event) in [(Phase::Crawl, "CrawlSetup"), (Phase::Snapshot, "Snapshot")] {
        let ours: Vec<String> = catalog
            .hooks(&selected, phase)
            .into_iter()
            .map(|h| h.stem)
            .collect();
        let theirs: Vec<String> = abx_dl[event]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert_eq!(ours, theirs, "{event} hooks");
    }
}

/// The tools the real hooks need: abx-dl's virtualenv, Node.js >= 22.12, Chromium. `None`
/// (outside CI only) when one is missing.
struct Tools {
    venv: PathBuf,
    node_dir: PathBuf,
    chromium: PathBuf,
}

impl Tools {
    fn find() -> Option<Tools> {
        let venv = std::env::var_os("ABXD_ABX_VENV").map(PathBuf::from);
        let node_dir = std::env::var_os("ABXD_NODE_BIN").map(PathBuf::from);
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .map(PathBuf::from)
            .into_iter()
            .find(|p| p.exists());
        match (venv, node_dir, chromium) {
            (Some(venv), Some(node_dir), Some(chromium)) if venv.join("bin/python").exists() => {
                Some(Tools {
                    venv,
                    node_dir,
                    chromium,
                })
            }
            _ => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI must provide ABXD_ABX_VENV, ABXD_NODE_BIN and chromium (.ci/run does)"
                );
                eprintln!("skipped: needs ABXD_ABX_VENV, ABXD_NODE_BIN and chromium");
                None
            }
        }
    }

    /// PATH for the hooks: the virtualenv (abxpkg, which their shebangs run) and node first.
    fn path(&self) -> String {
        format!(
            "{}:{}:{}",
            self.venv.join("bin").display(),
            self.node_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }
}

/// A page to archive, served on loopback by a thread per connection: a title, a favicon, a
/// stylesheet, a link, and an image that answers only after two seconds (so wget, a background
/// hook, outlives the foreground hooks before it).
fn serve_test_site() -> std::net::SocketAddr {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    return;
                }
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let (status, kind, body): (&str, &str, Vec<u8>) = match path.as_str() {
                    "/" => ("200 OK", "text/html", INDEX.as_bytes().to_vec()),
                    "/other.html" => ("200 OK", "text/html", OTHER.as_bytes().to_vec()),
                    "/style.css" => ("200 OK", "text/css", b"h1 { color: teal }\n".to_vec()),
                    "/favicon.ico" => ("200 OK", "image/x-icon", vec![0, 0, 1, 0, 1, 0]),
                    "/slow.png" => {
                        std::thread::sleep(std::time::Duration::from_secs(2));
                        ("200 OK", "image/png", b"\x89PNG\r\n\x1a\n".to_vec())
                    }
                    _ => ("404 Not Found", "text/plain", b"no\n".to_vec()),
                };
                let head = format!(
                    "HTTP/1.0 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n",
                    body.len()
                );
                let mut stream = &stream;
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            });
        }
    });
    addr
}

const INDEX: &str = "<!doctype html><html><head><title>The abxd test page</title>\
<link rel=\"icon\" href=\"/favicon.ico\"><link rel=\"stylesheet\" href=\"/style.css\"></head>\
<body><h1>Archive me</h1><p>Some words for htmltotext to find.</p>\
<a href=\"/other.html\">the other page</a><img src=\"/slow.png\"></body></html>";

const OTHER: &str = "<!doctype html><html><head><title>Other</title></head>\
<body><p>The other page.</p></body></html>";

/// What explains a difference: every hook of the crawl with its snapshot, when it started and
/// ended (seconds after the first), how it ended, and the end of the stderr of each that failed.
fn hook_timeline(store: &abxd::store::Store, crawl: i64) -> String {
    let rows = store.processes(&Default::default()).unwrap();
    let hooks: Vec<_> = rows
        .iter()
        .filter(|r| r.kind == abxd::domain::Kind::Hook && r.crawl_id == Some(crawl))
        .collect();
    let first = hooks.iter().filter_map(|r| r.started_at).min().unwrap_or(0);
    let seconds = |at: Option<i64>| {
        at.map_or("-".to_string(), |t| {
            format!("{:.1}", (t - first) as f64 / 1000.0)
        })
    };
    let mut text = String::from("--- the crawl's hooks (snapshot, start s, end s, end) ---\n");
    for row in &hooks {
        let name = Path::new(&row.argv[0])
            .file_name()
            .unwrap()
            .to_string_lossy();
        text += &format!(
            "{:>4} {name:<45} {:>6} {:>6} {:>3} {} {}\n",
            row.snapshot_id.map_or("-".to_string(), |s| s.to_string()),
            seconds(row.started_at),
            seconds(row.ended_at),
            row.exit_code.map_or("-".to_string(), |c| c.to_string()),
            row.end_reason.map_or("-", |r| r.as_str()),
            row.end_detail_text().as_deref().unwrap_or("")
        );
        if let (true, Some(path)) = (row.exit_code != Some(0), &row.stderr_path) {
            let stderr = std::fs::read_to_string(path).unwrap_or_default();
            let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
            for line in tail.iter().rev() {
                text += &format!("       | {line}\n");
            }
        }
    }
    text
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

/// Text with its run-to-run parts (numbers, hex ids, ports) made alike.
fn normalized(text: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        let varies = run.bytes().all(|b| b.is_ascii_digit()) || run.len() >= 8;
        out.push_str(if varies && !run.is_empty() { "#" } else { run });
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Files abx-dl writes into a plugin dir that are its own, not the hook's: a replay script per
/// hook run (`<hook>.sh`, `cmd.sh`). abxd keeps a hook's command line in its process row and its
/// logs in `SNAP_DIR/logs/`.
fn runner_artifact(file: &str) -> bool {
    file == "cmd.sh" || (file.starts_with("on_") && file.ends_with(".sh"))
}

/// The one difference by design: abx-dl runs a crawl and its single snapshot in one dir, so the
/// crawl's Chrome cleanup also deletes the snapshot's Chrome session files; abxd keeps the crawl
/// dir apart from each snapshot dir (a crawl has many), so a snapshot's `chrome/` keeps them.
const CHROME_SESSION_FILES: [&str; 4] = [
    "browser.json",
    "cdp_url.txt",
    "chrome.pid",
    "navigation.json",
];

/// The files below `dir`, relative and normalized, sorted.
fn files_below(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().display().to_string();
                out.push(normalized(&relative));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out.dedup();
    out
}

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
    let reference = tempfile::tempdir().unwrap();
    let output = Command::new(tools.venv.join("bin/abx-dl"))
        .args(["dl", &format!("--plugins={COMPARED}"), "-d"])
        .arg(reference.path())
        .arg(&url)
        .env("PATH", &path)
        .env("CHROME_BINARY", &chromium)
        .env(common::TAG_ENV, common::unique_tag())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "abx-dl failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let records: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let theirs: std::collections::BTreeMap<String, &Value> = records
        .iter()
        .filter(|r| r["type"] == "ArchiveResult")
        .map(|r| (r["hook_name"].as_str().unwrap().to_string(), r))
        .collect();
    assert!(theirs.len() >= 8, "abx-dl reported too little: {stdout}");

    // abxd, the same hooks at depth 1.
    let crawl = daemon.add(&["--depth", "1", "--plugins", COMPARED, &url]);
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(300));
    let store = daemon.store();
    let snapshots = store.snapshots(crawl).unwrap();
    let first = snapshots.iter().find(|s| s.depth == 0).unwrap();
    let results = store.snapshot_results(first.id).unwrap();
    let snap_dir = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/snapshots/{}", first.id));

    let mut differences = Vec::new();
    for (hook, record) in &theirs {
        let ours = results.iter().find(|r| {
            r.hook
                .strip_suffix(
                    Path::new(&r.hook)
                        .extension()
                        .map_or("", |e| e.to_str().unwrap()),
                )
                .map(|s| s.trim_end_matches('.'))
                == Some(hook.as_str())
        });
        let Some(ours) = ours else {
            differences.push(format!("{hook}: abx-dl ran it, abxd did not"));
            continue;
        };
        let their_status = match record["status"].as_str().unwrap() {
            "noresult" => "noresults",
            other => other,
        };
        if ours.status != their_status {
            differences.push(format!(
                "{hook}: status {} vs abx-dl {their_status}",
                ours.status
            ));
        }
        let their_output = record["output_str"].as_str().unwrap_or("");
        let our_output = ours.output.as_deref().unwrap_or("");
        if !their_output.is_empty() && normalized(our_output) != normalized(their_output) {
            differences.push(format!(
                "{hook}: output {our_output:?} vs abx-dl {their_output:?}"
            ));
        }
    }
    // The files each plugin left under SNAP_DIR/<plugin>/.
    let plugins: std::collections::BTreeSet<&str> = theirs
        .values()
        .map(|r| r["plugin"].as_str().unwrap())
        .collect();
    for plugin in plugins {
        let ours = files_below(&snap_dir.join(plugin));
        let mut theirs: Vec<String> = files_below(&reference.path().join(plugin))
            .into_iter()
            .filter(|f| !runner_artifact(f))
            .collect();
        if plugin == "chrome" {
            theirs.extend(CHROME_SESSION_FILES.map(normalized));
            theirs.sort();
            theirs.dedup();
        }
        if ours != theirs {
            differences.push(format!("{plugin}/: files {ours:?} vs abx-dl {theirs:?}"));
        }
    }
    // The link was discovered by both, and abxd crawled it at depth 1.
    // (abx-dl prints what a hook discovered inside that hook's Process record.)
    let discovered: Vec<String> = records
        .iter()
        .filter(|r| r["type"] == "Process")
        .flat_map(|r| {
            let stdout = r["stdout"].as_str().unwrap_or("").to_string();
            stdout
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v["type"] == "Snapshot")
                .filter_map(|v| v["url"].as_str().map(String::from))
                .collect::<Vec<_>>()
        })
        .collect();
    let other = format!("{url}other.html");
    assert!(
        discovered.contains(&other),
        "abx-dl discovered {discovered:?}"
    );
    assert!(
        snapshots
            .iter()
            .any(|s| s.url == other && s.depth == 1 && s.status == "sealed"),
        "{snapshots:?}"
    );
    assert!(
        differences.is_empty(),
        "abxd and abx-dl differ:\n{}\n{}",
        differences.join("\n"),
        hook_timeline(&store, crawl)
    );

    // abxd's own guarantees hold for these hooks: every hook is a row under its worker, the
    // crawl's browser is `child` rows under the launch hook, nothing of the crawl survives.
    let rows = store.processes(&Default::default()).unwrap();
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
    let survivors: Vec<i32> = common::tagged_pids(&daemon.tag)
        .into_iter()
        .filter(|&pid| pid != daemon.pid())
        .collect();
    assert!(
        survivors.is_empty(),
        "processes of the crawl survived: {survivors:?}"
    );
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
    let rows = store.processes(&Default::default()).unwrap();
    let installer = rows
        .iter()
        .find(|r| r.argv.first().is_some_and(|a| a == "abxpkg"))
        .expect("the installer run is a row");
    assert_eq!(
        installer.argv,
        ["abxpkg", "--binproviders=env,apt,brew", "install", "wget"]
    );
    assert_eq!(installer.exit_code, Some(0));
    assert_eq!(store.crawl(queued).unwrap().unwrap().status, "queued");
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
        let results = daemon.store().results(crawl).unwrap();
        let result = results.iter().find(|r| r.plugin == plugin).unwrap().clone();
        (result.status.to_string(), result.output.unwrap_or_default())
    };
    let installer_runs =
        |daemon: &common::TestDaemon, binary: &str| -> Vec<abxd::store::ProcessRow> {
            (daemon.store().processes(&Default::default()).unwrap())
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
    assert_eq!(
        status_of(&daemon, crawl, "needsit"),
        (
            "skipped".to_string(),
            "not run: its binaries could not be found or installed (abxd-no-such-binary); \
             `abxd install --plugins needsit` tries again and says why"
                .to_string()
        )
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
