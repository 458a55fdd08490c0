//! Plugins: finding the hooks of the plugin directories by the naming rule of SPEC §4.
//!
//! A hook is an executable file `<plugins dir>/<plugin>/on_<Event>__<NN>_<name>[.bg].<ext>`.
//! Invariant: discovery only reads; a file that looks like a hook but cannot be run is reported
//! with its reason (never silently dropped, never run), and hooks come out in the order they run:
//! by NN, then plugin, then name. A plugin found in two directories is taken from the first.

use crate::config::Config;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HookEvent {
    Crawl,
    Snapshot,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    pub plugin: String,
    pub event: HookEvent,
    pub order: u32,
    pub name: String,
    pub background: bool,
    pub path: PathBuf,
    /// The file name, which identifies the hook in results.
    pub file_name: String,
}

/// A file in a plugin folder that is not a runnable hook, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub plugin: String,
    pub path: PathBuf,
    /// The event its name says, when its name can be read.
    pub event: Option<HookEvent>,
    pub reason: String,
}

impl Rejected {
    pub fn file_name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Parses a hook file name: `(event, NN, name, background)`.
pub fn parse_hook_name(file_name: &str) -> Result<(HookEvent, u32, String, bool), String> {
    let rest = file_name
        .strip_prefix("on_")
        .ok_or("does not start with on_")?;
    let (event, rest) = rest
        .split_once("__")
        .ok_or("lacks the __ between event and order")?;
    let event = match event {
        "Crawl" => HookEvent::Crawl,
        "Snapshot" => HookEvent::Snapshot,
        other => return Err(format!("unknown event {other:?} (Crawl or Snapshot)")),
    };
    let (order, rest) = rest.split_once('_').ok_or("lacks _ after the order")?;
    if order.len() != 2 || !order.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("order {order:?} is not two digits"));
    }
    let (stem, ext) = rest.rsplit_once('.').ok_or("has no extension")?;
    let (name, background) = match stem.strip_suffix(".bg") {
        Some(name) => (name, true),
        None => (stem, false),
    };
    let valid = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    if !valid(name) {
        return Err(format!(
            "name {name:?} is empty or has characters other than a-z 0-9 _ -"
        ));
    }
    if !valid(ext) {
        return Err(format!("extension {ext:?} is not valid"));
    }
    Ok((
        event,
        order.parse().expect("two digits"),
        name.to_string(),
        background,
    ))
}

/// Every hook of `event` in `dirs`, in run order, and the files that were rejected.
pub fn discover(dirs: &[PathBuf], event: HookEvent) -> (Vec<Hook>, Vec<Rejected>) {
    let mut hooks = Vec::new();
    let mut rejected = Vec::new();
    let mut seen_plugins = BTreeSet::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut plugin_dirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        plugin_dirs.sort();
        for plugin_dir in plugin_dirs {
            let plugin = plugin_dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            if plugin.starts_with('.') || !seen_plugins.insert(plugin.clone()) {
                continue;
            }
            scan_plugin(dir, &plugin_dir, &plugin, event, &mut hooks, &mut rejected);
        }
    }
    hooks.sort_by(|a, b| (a.order, &a.plugin, &a.name).cmp(&(b.order, &b.plugin, &b.name)));
    (hooks, rejected)
}

fn scan_plugin(
    plugins_dir: &Path,
    dir: &Path,
    plugin: &str,
    event: HookEvent,
    hooks: &mut Vec<Hook>,
    rejected: &mut Vec<Rejected>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        let Some(file_name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        if !file_name.starts_with("on_") {
            continue;
        }
        let reject = |event: Option<HookEvent>, reason: String| Rejected {
            plugin: plugin.to_string(),
            path: path.clone(),
            event,
            reason,
        };
        let (event, order, name, background) = match parse_hook_name(&file_name) {
            Err(reason) => {
                rejected.push(reject(
                    None,
                    format!("name breaks the hook naming rule: {reason}"),
                ));
                continue;
            }
            Ok((found, ..)) if found != event => continue,
            Ok(parsed) => parsed,
        };
        let reject = |reason: String| reject(Some(event), reason);
        if let Some(target) = outside(plugins_dir, &path) {
            rejected.push(reject(format!(
                "is a symlink to {}, outside the plugins dir {}",
                target.display(),
                plugins_dir.display()
            )));
            continue;
        }
        match std::fs::metadata(&path) {
            Ok(meta) if !meta.is_file() => rejected.push(reject("is not a regular file".into())),
            Ok(meta) if meta.permissions().mode() & 0o111 == 0 => {
                rejected.push(reject("is not executable (chmod +x it)".into()))
            }
            Err(err) => rejected.push(reject(format!("cannot be read: {err}"))),
            Ok(_) => hooks.push(Hook {
                plugin: plugin.to_string(),
                event,
                order,
                name,
                background,
                path,
                file_name,
            }),
        }
    }
}

/// Where `path` really leads, if that is outside `plugins_dir` (or nowhere).
fn outside(plugins_dir: &Path, path: &Path) -> Option<PathBuf> {
    let root = plugins_dir.canonicalize().ok()?;
    match path.canonicalize() {
        Ok(target) if target.starts_with(&root) => None,
        Ok(target) => Some(target),
        Err(_) => Some(std::fs::read_link(path).unwrap_or_else(|_| path.to_path_buf())),
    }
}

/// The hooks a crawl runs: those of enabled plugins, and of the crawl's plugin list if it has one.
pub fn select(hooks: Vec<Hook>, config: &Config, crawl_plugins: Option<&[String]>) -> Vec<Hook> {
    hooks
        .into_iter()
        .filter(|hook| selected(&hook.plugin, config, crawl_plugins))
        .collect()
}

/// Whether `plugin` runs in a crawl: it is enabled, and in the crawl's list if it has one.
pub fn selected(plugin: &str, config: &Config, crawl_plugins: Option<&[String]>) -> bool {
    config.plugins.get(plugin).is_none_or(|p| p.enabled)
        && crawl_plugins.is_none_or(|list| list.iter().any(|p| p == plugin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rule() {
        assert_eq!(
            parse_hook_name("on_Snapshot__30_wget.bg.sh").unwrap(),
            (HookEvent::Snapshot, 30, "wget".into(), true)
        );
        assert_eq!(
            parse_hook_name("on_Crawl__90_chrome_launch.py").unwrap(),
            (HookEvent::Crawl, 90, "chrome_launch".into(), false)
        );
        for bad in [
            "on_Snapshot_30_wget.sh",
            "on_Page__30_wget.sh",
            "on_Snapshot__3_wget.sh",
            "on_Snapshot__30_wget",
            "on_Snapshot__30_.sh",
            "on_Snapshot__30_we get.sh",
        ] {
            assert!(parse_hook_name(bad).is_err(), "{bad}");
        }
    }
}
