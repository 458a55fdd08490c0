//! ArchiveBox's runner beside abxd, for the tests that compare them: the tools the real hooks need,
//! a test page served on loopback, abx-dl run on it, and what differs between abx-dl's results
//! and files and abxd's for the same hooks.
//!
//! Invariant: a difference is reported in words (hook, what abxd did, what abx-dl did), never
//! normalized away beyond the run-to-run parts (numbers, ids, ports) and the files that are the
//! runner's own, each named here with why.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tools the real hooks need: abx-dl's virtualenv, Node.js >= 22.12, Chromium. `None`
/// (outside CI only) when one is missing.
pub struct Tools {
    pub venv: PathBuf,
    pub node_dir: PathBuf,
    pub chromium: PathBuf,
}

impl Tools {
    /// With abx-dl 1.12.183's virtualenv (`ABXD_ABX_VENV`).
    pub fn find() -> Option<Tools> {
        Self::with_venv(std::env::var_os("ABXD_ABX_VENV").map(PathBuf::from))
    }

    /// With the virtualenv `venv` (abx-dl and abxpkg in its `bin/`).
    pub fn with_venv(venv: Option<PathBuf>) -> Option<Tools> {
        let node_dir = std::env::var_os("ABXD_NODE_BIN").map(PathBuf::from);
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .map(PathBuf::from)
            .into_iter()
            .find(|p| p.exists());
        let wanted = format!("{venv:?}");
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
                    "CI must provide the abx-dl virtualenv ({wanted}), ABXD_NODE_BIN and chromium \
                     (.ci/run does)"
                );
                eprintln!(
                    "skipped: needs an abx-dl virtualenv ({wanted}), ABXD_NODE_BIN and chromium"
                );
                None
            }
        }
    }

    /// What abxd runs with for these hooks: the `PATH` below, `CHROME_BINARY`, and `extra`.
    pub fn env(&self, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut env = vec![
            ("PATH".to_string(), self.path()),
            (
                "CHROME_BINARY".to_string(),
                self.chromium.display().to_string(),
            ),
        ];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        env
    }

    /// PATH for the hooks: the virtualenv (abxpkg, which their shebangs run) and node first.
    pub fn path(&self) -> String {
        format!(
            "{}:{}:{}",
            self.venv.join("bin").display(),
            self.node_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }
}

/// The `abx_plugins/plugins` dir of the virtualenv `venv`.
pub fn plugins_of(venv: &Path) -> PathBuf {
    let lib = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .expect("a python3.* lib in the virtualenv");
    lib.path().join("site-packages/abx_plugins/plugins")
}

/// A page to archive, served on loopback by a thread per connection: a title, a favicon, a
/// stylesheet, a link, and an image that answers only after two seconds (so wget, a background
/// hook, outlives the foreground hooks before it).
pub fn serve_test_site() -> std::net::SocketAddr {
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
pub fn hook_timeline(store: &abxd::store::Store, crawl: i64) -> String {
    let rows = store.processes().list(&Default::default()).unwrap();
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

/// Text with its run-to-run parts (numbers, hex ids, ports) made alike.
pub fn normalized(text: &str) -> String {
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
pub fn runner_artifact(file: &str) -> bool {
    file == "cmd.sh" || (file.starts_with("on_") && file.ends_with(".sh"))
}

/// The one difference by design: abx-dl runs a crawl and its single snapshot in one dir, so the
/// crawl's Chrome cleanup also deletes the snapshot's Chrome session files; abxd keeps the crawl
/// dir apart from each snapshot dir (a crawl has many), so a snapshot's `chrome/` keeps them.
pub const CHROME_SESSION_FILES: [&str; 4] = [
    "browser.json",
    "cdp_url.txt",
    "chrome.pid",
    "navigation.json",
];

/// The files below `dir`, relative and normalized, sorted.
pub fn files_below(dir: &Path) -> Vec<String> {
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

/// What abx-dl printed for one crawl of a URL, and the dir it archived into.
pub struct Reference {
    pub records: Vec<Value>,
    pub dir: tempfile::TempDir,
}

impl Reference {
    /// Runs `abx-dl dl --plugins=PLUGINS` on `url` with the tools, and `env` besides; panics,
    /// saying what abx-dl said, unless it succeeds.
    pub fn of(tools: &Tools, plugins: &str, url: &str, env: &[(&str, &str)]) -> Reference {
        let dir = tempfile::tempdir().unwrap();
        let output = Command::new(tools.venv.join("bin/abx-dl"))
            .args(["dl", &format!("--plugins={plugins}"), "-d"])
            .arg(dir.path())
            .arg(url)
            .env("PATH", tools.path())
            .env("CHROME_BINARY", &tools.chromium)
            .envs(env.iter().copied())
            .env(super::TAG_ENV, super::unique_tag())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "abx-dl failed: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let records = (stdout.lines())
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        Reference { records, dir }
    }

    /// abx-dl's ArchiveResult records by hook name (the file name without its extension).
    pub fn results(&self) -> std::collections::BTreeMap<String, &Value> {
        (self.records.iter())
            .filter(|r| r["type"] == "ArchiveResult")
            .map(|r| (r["hook_name"].as_str().unwrap().to_string(), r))
            .collect()
    }

    /// The URLs the hooks discovered (abx-dl prints them inside each hook's Process record).
    pub fn discovered(&self) -> Vec<String> {
        (self.records.iter())
            .filter(|r| r["type"] == "Process")
            .flat_map(|r| {
                let stdout = r["stdout"].as_str().unwrap_or("").to_string();
                (stdout.lines())
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .filter(|v| v["type"] == "Snapshot")
                    .filter_map(|v| v["url"].as_str().map(String::from))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Where abxd and abx-dl differ for `snapshot` of `crawl` (whose dir is `snap_dir`): per hook
    /// abx-dl ran, its status and `output_str`; per plugin, the files below `SNAP_DIR/<plugin>/`.
    pub fn differences(
        &self,
        store: &abxd::store::Store,
        snapshot: i64,
        snap_dir: &Path,
    ) -> Vec<String> {
        let results = store.results().snapshot_results(snapshot).unwrap();
        let theirs = self.results();
        let mut differences = Vec::new();
        for (hook, record) in &theirs {
            let ours = results.iter().find(|r| {
                let extension = Path::new(&r.hook)
                    .extension()
                    .map_or("", |e| e.to_str().unwrap());
                (r.hook.strip_suffix(extension)).map(|s| s.trim_end_matches('.'))
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
        let plugins: std::collections::BTreeSet<&str> = (theirs.values())
            .map(|r| r["plugin"].as_str().unwrap())
            .collect();
        for plugin in plugins {
            let ours = files_below(&snap_dir.join(plugin));
            let mut theirs: Vec<String> = files_below(&self.dir.path().join(plugin))
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
        differences
    }
}

/// Starts `daemon` with `env` (see [`Tools::env`]).
pub fn launch(daemon: &mut super::TestDaemon, env: &[(String, String)]) {
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    daemon.launch_with_env(&pairs);
}

/// Has `daemon` crawl `url` at depth 1 with `plugins`, and asserts that its first snapshot is
/// what `reference` (abx-dl `pin`) made of the same page, and that both discovered the page's
/// link, which abxd crawled at depth 1. Returns the crawl.
pub fn crawl_as_abx_dl_did(
    daemon: &super::TestDaemon,
    reference: &Reference,
    plugins: &str,
    url: &str,
    pin: &str,
) -> i64 {
    let crawl = daemon.add(&["--depth", "1", "--plugins", plugins, url]);
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(300));
    let store = daemon.store();
    let snapshots = store.crawls().snapshots(crawl).unwrap();
    let first = snapshots.iter().find(|s| s.depth == 0).unwrap();
    let snap_dir = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/snapshots/{}", first.id));
    let differences = reference.differences(&store, first.id, &snap_dir);
    assert!(
        differences.is_empty(),
        "abxd and abx-dl {pin} differ:\n{}\n{}",
        differences.join("\n"),
        hook_timeline(&store, crawl)
    );
    let other = format!("{url}other.html");
    let discovered = reference.discovered();
    assert!(
        discovered.contains(&other),
        "abx-dl discovered {discovered:?}"
    );
    assert!(
        (snapshots.iter()).any(|s| s.url == other && s.depth == 1 && s.status == "sealed"),
        "{snapshots:?}"
    );
    crawl
}

/// What abx-dl says, as JSON: the plugins dir, each hook file's parse, every plugin it
/// discovers (1.13: after its runtime filter), and for the plugins named in argv[1] (JSON) the
/// selection with what they require and its hooks per event in abx-dl's order. Written for
/// both APIs: 1.12's `discover_plugins`/`filter_plugins`, 1.13's `PluginCatalog`.
const ASK_ABX_DL: &str = r#"
import json, sys
from pathlib import Path
import abx_plugins
from abx_dl.models import parse_hook_filename
names = json.loads(sys.argv[1])
root = Path(abx_plugins.__file__).parent / "plugins"
files = sorted({p.name for p in root.glob("*/on_*")})
out = {"root": str(root), "parsed": {f: parse_hook_filename(f) for f in files}}
try:
    from abx_dl.catalog import PluginCatalog
    catalog = PluginCatalog.discover()
    out["all"] = sorted(catalog)
    selected = dict(catalog.select(names))
except ImportError:
    from abx_dl.models import discover_plugins, filter_plugins
    selected = filter_plugins(discover_plugins(root), names)
out["selected"] = sorted(selected)
for event in ["CrawlSetup", "Snapshot"]:
    hooks = [h for p in selected.values() for h in p.filter_hooks(event)]
    out[event] = [h.name for h in sorted(hooks, key=lambda h: h.sort_key)]
print(json.dumps(out))
"#;

/// abx-dl's reading of its plugins (see [`ASK_ABX_DL`]), asked of the Python of `venv`.
pub fn ask_abx_dl(venv: &Path, plugins: &[&str]) -> Value {
    let output = Command::new(venv.join("bin/python"))
        .args(["-c", ASK_ABX_DL, &serde_json::to_string(plugins).unwrap()])
        .env_remove("ABX_PLUGINS_DIR")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Every hook file name parses under abxd as under abx-dl: event, order, background.
pub fn assert_hook_names_parse_alike(abx_dl: &Value) {
    let parsed = abx_dl["parsed"].as_object().unwrap();
    assert!(parsed.len() > 50, "too few hooks: {}", parsed.len());
    for (file, theirs) in parsed {
        let ours = abxd::plugins::name::parse(file)
            .map(|h| serde_json::json!([h.event, h.order, h.background]));
        assert_eq!(ours.unwrap_or(Value::Null), *theirs, "{file}");
    }
}

/// abxd reads abx-dl's plugins dir as abx-dl does: the same plugins (where abx-dl says which),
/// the same selection for `plugins` with what they require, the same hooks per phase in the
/// same order.
pub fn assert_selection_and_order_alike(abx_dl: &Value, plugins: &[&str]) {
    use abxd::plugins::{Catalog, Phase};
    let root = Path::new(abx_dl["root"].as_str().unwrap());
    let config = abxd::config::Config::parse(
        Path::new("/etc/abxd/supervisor.toml"),
        &super::plugins_config(&[root]),
    )
    .unwrap();
    let catalog = Catalog::load(&config.plugins_dirs);
    let strings = |v: &Value| -> Vec<String> {
        (v.as_array().unwrap().iter())
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    if abx_dl["all"].is_array() {
        let ours: Vec<String> = catalog.plugins.keys().cloned().collect();
        assert_eq!(ours, strings(&abx_dl["all"]), "the plugins of the dir");
    }
    let wanted: Vec<String> = plugins.iter().map(|p| p.to_string()).collect();
    let selected = catalog.select(&config, Some(&wanted)).unwrap();
    let ours: Vec<String> = selected.iter().cloned().collect();
    assert_eq!(
        ours,
        strings(&abx_dl["selected"]),
        "the selection with required plugins"
    );
    for (phase, event) in [(Phase::Crawl, "CrawlSetup"), (Phase::Snapshot, "Snapshot")] {
        let ours: Vec<String> = (catalog.hooks(&selected, phase).into_iter())
            .map(|h| h.stem)
            .collect();
        assert_eq!(ours, strings(&abx_dl[event]), "{event} hooks");
    }
}
