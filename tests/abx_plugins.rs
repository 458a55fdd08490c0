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
