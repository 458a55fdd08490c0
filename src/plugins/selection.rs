//! Which plugins a crawl runs: those it names (or every one that runs by default), enabled,
//! with the plugins they require.
//!
//! Invariant: a name that is no plugin is an error naming it and listing what exists; a plugin
//! whose required plugin is missing or disabled does not run, with a warning (as in abx-dl).

use super::{env, Catalog};
use crate::config::Config;
use std::collections::BTreeSet;

/// A crawl's plugin list names plugins that do not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no plugin named {}; {}", .unknown.join(", "), known_list(.known))]
pub struct UnknownPlugins {
    pub unknown: Vec<String>,
    pub known: Vec<String>,
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "the plugins dirs hold no plugin".into()
    } else {
        format!("plugins: {}", known.join(", "))
    }
}

impl Catalog {
    /// Checks that every name of a plugin list exists.
    pub fn check_names(&self, names: &[String]) -> Result<(), UnknownPlugins> {
        let unknown: Vec<String> = names
            .iter()
            .filter(|n| !self.plugins.contains_key(n.as_str()))
            .cloned()
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(UnknownPlugins {
                unknown,
                known: self.names(),
            })
        }
    }

    /// The plugins that parse what an operator imports (`x-accepts-internal-input`): what an
    /// imported crawl's first snapshot runs, whatever the crawl names.
    pub fn import_parsers(&self) -> Vec<String> {
        (self.plugins.iter())
            .filter(|(_, plugin)| plugin.manifest.accepts_input)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The plugins a crawl runs: those of its list (when it has none, every plugin but those
    /// marked `x-auto-run: false`) that are enabled, with the plugins they require,
    /// transitively. A plugin whose required plugin is
    /// disabled or missing does not run (as in abx-dl), with a warning.
    pub fn select(
        &self,
        config: &Config,
        crawl_plugins: Option<&[String]>,
    ) -> Result<BTreeSet<String>, UnknownPlugins> {
        if let Some(names) = crawl_plugins {
            self.check_names(names)?;
        }
        let enabled = |name: &str| {
            self.plugins
                .get(name)
                .is_some_and(|p| env::enabled(p, self, config))
        };
        let wanted: Vec<String> = match crawl_plugins {
            Some(names) => names.to_vec(),
            None => (self.plugins.iter())
                .filter(|(_, plugin)| plugin.manifest.auto_run)
                .map(|(name, _)| name.clone())
                .collect(),
        };
        let mut selected = BTreeSet::new();
        let mut queue: Vec<String> = wanted.into_iter().filter(|n| enabled(n)).collect();
        while let Some(name) = queue.pop() {
            if !selected.insert(name.clone()) {
                continue;
            }
            for required in &self.plugins[&name].manifest.required_plugins {
                if enabled(required) {
                    queue.push(required.clone());
                }
            }
        }
        // Drop plugins whose requirements are missing or disabled, until none is left.
        loop {
            let blocked: Vec<String> = selected
                .iter()
                .filter(|name| {
                    self.plugins[name.as_str()]
                        .manifest
                        .required_plugins
                        .iter()
                        .any(|r| !selected.contains(r))
                })
                .cloned()
                .collect();
            if blocked.is_empty() {
                return Ok(selected);
            }
            for name in blocked {
                log::warn!(
                    "plugin {name} does not run: a plugin it requires is missing or disabled"
                );
                selected.remove(&name);
            }
        }
    }
}
