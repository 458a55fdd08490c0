//! Plugins: the plugin folders of the plugins dirs, their hooks and manifests (the catalog), which
//! of them a crawl runs (the selection), and each plugin's resolved config (`env`).
//!
//! The contract is abx-dl's (`abxd-hooks(7)`): a plugin is a folder (not hidden, not starting
//! with `_`) with an optional `config.json` and executable hooks named by the rule of `name`.
//! `CrawlSetup` and `Crawl` hooks run once per crawl, `Snapshot` hooks per snapshot, each phase
//! in (NN, stem) order across its plugins; other events (`Install`, `Binary`, …) are listed, not
//! run. Invariants: discovery only reads; a file that looks like a hook but cannot be run is
//! reported with its reason (never silently dropped, never run); a plugin found in two
//! directories is taken from the first; selecting a plugin that does not exist is an error
//! naming it and listing what exists.

pub mod env;
pub mod install;
pub mod manifest;
pub mod name;
mod selection;

pub use selection::UnknownPlugins;

use crate::config::{Config, ConfigError};
use manifest::Manifest;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Once per crawl, before its snapshots: `CrawlSetup` and `Crawl` hooks.
    Crawl,
    /// Once per snapshot: `Snapshot` hooks.
    Snapshot,
}

impl Phase {
    /// The phase an event's hooks run in, or `None` for events that are not crawled.
    pub fn of_event(event: &str) -> Option<Phase> {
        match event {
            "CrawlSetup" | "Crawl" => Some(Phase::Crawl),
            "Snapshot" => Some(Phase::Snapshot),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    pub plugin: String,
    /// The event its name says (`CrawlSetup`, `Snapshot`, …).
    pub event: String,
    pub order: u32,
    /// The file name without its last extension (abx-dl's hook name).
    pub stem: String,
    pub background: bool,
    pub path: PathBuf,
    /// The file name, which identifies the hook in results.
    pub file_name: String,
}

impl Hook {
    pub fn phase(&self) -> Option<Phase> {
        Phase::of_event(&self.event)
    }
}

/// A file in a plugin folder that looks like a hook but cannot run, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub plugin: String,
    pub path: PathBuf,
    /// The phase its name says, when its name can be read.
    pub phase: Option<Phase>,
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

#[derive(Debug, Clone, PartialEq)]
pub struct Plugin {
    pub name: String,
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub hooks: Vec<Hook>,
}

/// Every plugin of the plugins dirs.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub plugins: BTreeMap<String, Plugin>,
    pub rejected: Vec<Rejected>,
}

impl Catalog {
    /// Reads every plugin folder of `dirs`.
    pub fn load(dirs: &[PathBuf]) -> Catalog {
        let mut catalog = Catalog::default();
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
                let name = plugin_dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_string();
                if name.starts_with(['.', '_']) || catalog.plugins.contains_key(&name) {
                    continue;
                }
                catalog.load_plugin(dir, &plugin_dir, name);
            }
        }
        catalog
    }

    fn load_plugin(&mut self, plugins_dir: &Path, dir: &Path, name: String) {
        let manifest = match Manifest::read(dir) {
            Ok(manifest) => manifest,
            Err(reason) => {
                self.rejected.push(Rejected {
                    plugin: name.clone(),
                    path: dir.join("config.json"),
                    phase: None,
                    reason: format!("its config.json cannot be read: {reason}"),
                });
                Manifest::default()
            }
        };
        if !manifest.for_runtime(&manifest::runtime()) {
            return;
        }
        let mut hooks = Vec::new();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for path in entries.filter_map(|e| e.ok()).map(|e| e.path()) {
            let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(parsed) = name::parse(file_name) else {
                if file_name.starts_with("on_") {
                    self.rejected.push(Rejected {
                        plugin: name.clone(),
                        path: path.clone(),
                        phase: None,
                        reason: "name breaks the hook naming rule \
                                 (on_{Event}__[NN_]{description}[.bg].{ext})"
                            .into(),
                    });
                }
                continue;
            };
            let phase = Phase::of_event(&parsed.event);
            let reject = |reason: String| Rejected {
                plugin: name.clone(),
                path: path.clone(),
                phase,
                reason,
            };
            match runnable(plugins_dir, &path) {
                // A hook of an event that is not crawled (Install, Binary…) is not reported.
                Err(_) if phase.is_none() => {}
                Err(reason) => self.rejected.push(reject(reason)),
                Ok(()) => hooks.push(Hook {
                    plugin: name.clone(),
                    event: parsed.event,
                    order: parsed.order,
                    stem: parsed.stem,
                    background: parsed.background,
                    path: path.clone(),
                    file_name: file_name.to_string(),
                }),
            }
        }
        hooks.sort_by(|a, b| (a.order, &a.stem).cmp(&(b.order, &b.stem)));
        self.plugins.insert(
            name.clone(),
            Plugin {
                name,
                dir: dir.to_path_buf(),
                manifest,
                hooks,
            },
        );
    }

    /// The names of plugins that exist, sorted.
    pub fn names(&self) -> Vec<String> {
        self.plugins.keys().cloned().collect()
    }

    /// The hooks of `phase` of the selected plugins, in run order: (NN, stem) across plugins.
    pub fn hooks(&self, selected: &BTreeSet<String>, phase: Phase) -> Vec<Hook> {
        let mut hooks: Vec<Hook> = selected
            .iter()
            .filter_map(|name| self.plugins.get(name))
            .flat_map(|p| p.hooks.iter())
            .filter(|h| h.phase() == Some(phase))
            .cloned()
            .collect();
        hooks.sort_by(|a, b| (a.order, &a.stem, &a.plugin).cmp(&(b.order, &b.stem, &b.plugin)));
        hooks
    }

    /// The rejected hook files of `phase` of the selected plugins.
    pub fn rejected(&self, selected: &BTreeSet<String>, phase: Phase) -> Vec<&Rejected> {
        self.rejected
            .iter()
            .filter(|r| selected.contains(&r.plugin) && r.phase == Some(phase))
            .collect()
    }
}

/// A hook ready to run: its plugin's resolved config and its timeout.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub hook: Hook,
    /// The plugin's resolved config, as environment variables (see `env`).
    pub env: BTreeMap<String, String>,
    /// Its timeout (a background hook: its grace when its scope ends).
    pub timeout: std::time::Duration,
    /// Its cgroup's limits (`[plugins.X] memory_max`, `tasks_max`, `cpu_weight`).
    pub limits: crate::cgroup::Limits,
    /// Whether another selected plugin requires its plugin (`required_plugins`): a crawl hook
    /// of it is a resource the crawl cannot go on without.
    pub required: bool,
    /// Its plugin's `wait_for_plugins` and `wait_for_background_cleanup` (see `hooks::order`).
    pub waits_for: Vec<String>,
    pub after_background: bool,
    /// The plugins its plugin requires, directly or through others (the order background hooks
    /// stop in at their scope's end: see `hooks::order`).
    pub requires: Vec<String>,
}

impl Catalog {
    /// The hooks of `phase` of the selected plugins, in run order, each with its config.
    pub fn prepare(
        &self,
        selected: &BTreeSet<String>,
        phase: Phase,
        config: &Config,
    ) -> Vec<Prepared> {
        // Each plugin's config once, however many hooks it has.
        let mut resolved: BTreeMap<&str, (BTreeMap<String, String>, std::time::Duration)> =
            BTreeMap::new();
        let required: BTreeSet<&String> = (selected.iter())
            .filter_map(|name| self.plugins.get(name))
            .flat_map(|plugin| &plugin.manifest.required_plugins)
            .collect();
        self.hooks(selected, phase)
            .into_iter()
            .map(|hook| {
                let plugin = &self.plugins[&hook.plugin];
                let (env, timeout) = resolved
                    .entry(plugin.name.as_str())
                    .or_insert_with(|| self.resolve(plugin, config))
                    .clone();
                let limits = config.plugins.get(&hook.plugin).map(|p| p.limits());
                let limits = limits.unwrap_or_default();
                Prepared {
                    required: required.contains(&hook.plugin),
                    waits_for: plugin.manifest.wait_for_plugins.clone(),
                    after_background: plugin.manifest.wait_for_background_cleanup,
                    requires: self.requires(&plugin.name),
                    hook,
                    env,
                    timeout,
                    limits,
                }
            })
            .collect()
    }

    /// The plugins `name` requires, directly or through others, each once.
    fn requires(&self, name: &str) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        let mut next = vec![name.to_string()];
        while let Some(plugin) = next.pop() {
            let direct = self
                .plugins
                .get(&plugin)
                .map(|p| &p.manifest.required_plugins);
            for required in direct.into_iter().flatten() {
                if required != name && !found.contains(required) {
                    found.push(required.clone());
                    next.push(required.clone());
                }
            }
        }
        found
    }

    /// A plugin's hook environment (its resolved config, then `[plugins.X] env` keys outside
    /// the schema as they are) and its hooks' timeout.
    fn resolve(
        &self,
        plugin: &Plugin,
        config: &Config,
    ) -> (BTreeMap<String, String>, std::time::Duration) {
        let mut env = env::resolve(plugin, self, config, &env::process_environ);
        let timeout = env::timeout(plugin, &env, config, &env::process_environ);
        let extra = config.plugins.get(&plugin.name).map(|p| &p.env);
        for (key, value) in extra.into_iter().flatten() {
            env.entry(key.clone()).or_insert_with(|| value.clone());
        }
        (env, timeout)
    }
}

/// Checks that every `[plugins.X]` table of `config` names a plugin of its plugins dirs (a typo
/// there would otherwise configure nothing, silently).
pub fn check_settings(config: &Config) -> Result<(), ConfigError> {
    let catalog = Catalog::load(&config.plugins_dirs);
    let named: Vec<String> = config.plugins.keys().cloned().collect();
    catalog
        .check_names(&named)
        .map_err(|err| ConfigError::Invalid {
            path: config.source.clone(),
            key: format!("plugins.{}", err.unknown[0]),
            message: err.to_string(),
        })
}

/// Whether the file at `path` can run as a hook, or why not.
fn runnable(plugins_dir: &Path, path: &Path) -> Result<(), String> {
    if let Some(target) = outside(plugins_dir, path) {
        return Err(format!(
            "is a symlink to {}, outside the plugins dir {}",
            target.display(),
            plugins_dir.display()
        ));
    }
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err("is not a regular file".into()),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => {
            Err("is not executable (chmod +x it)".into())
        }
        Err(err) => Err(format!("cannot be read: {err}")),
        Ok(_) => Ok(()),
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

#[cfg(test)]
mod tests;
