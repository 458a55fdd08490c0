//! A plugin's resolved config: the values its hooks get as environment variables, whether it is
//! enabled, and its hooks' timeout.
//!
//! Resolution follows abx-plugins' `load_config` as abx-dl drives it: a key of the plugin's
//! schema (its own `config.json`, the shared `base` plugin's, and those of the plugins it
//! requires) takes, first found: abxd's environment (the key, then its `x-aliases`), then
//! `supervisor.toml` (`[plugins.X] env`, and `timeout` as `<PLUGIN>_TIMEOUT`; `timeouts
//! .hook_timeout` as `TIMEOUT` when set), then the ArchiveBox collection's `ArchiveBox.conf`
//! (below abxd's own settings, as ArchiveBox puts its environment above that file), then — if it
//! has an `x-fallback` — the fallback key's value from the same explicit sources, then its
//! schema default. Only schema keys are taken from the collection: what ArchiveBox keeps for
//! itself there (its `SECRET_KEY`) reaches no hook. Invariant: a value abxd decides (`SNAP_DIR`,
//! `CRAWL_DIR`, `DATA_DIR`, `EXTRA_CONTEXT`) or an empty default never overrides the environment
//! a hook inherits (an empty `PATH` default would break every hook).

use super::manifest::{env_text, is_false, Property};
use super::{Catalog, Plugin};
use crate::config::{Config, PluginConfig, Timeouts};
use std::collections::BTreeMap;
use std::time::Duration;

/// Keys abxd sets itself for every hook.
const DECIDED_BY_ABXD: &[&str] = &["SNAP_DIR", "CRAWL_DIR", "DATA_DIR", "EXTRA_CONTEXT"];

/// The environment abxd runs in, as the resolution reads it.
pub type Environ<'a> = &'a dyn Fn(&str) -> Option<String>;

/// abxd's own environment.
pub fn process_environ(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The upper-case name of a plugin, as its keys start (`TITLE` for `title`).
pub fn key_prefix(plugin: &str) -> String {
    plugin.to_ascii_uppercase().replace('-', "_")
}

/// Every schema key a plugin's hooks see: base's, its required plugins', its own (last wins).
fn properties<'a>(plugin: &'a Plugin, catalog: &'a Catalog) -> BTreeMap<&'a str, &'a Property> {
    let mut properties = BTreeMap::new();
    let shared = catalog.plugins.get("base").into_iter();
    let required = plugin
        .manifest
        .required_plugins
        .iter()
        .filter_map(|name| catalog.plugins.get(name));
    for source in shared.chain(required).chain([plugin]) {
        for (key, property) in &source.manifest.properties {
            properties.insert(key.as_str(), property);
        }
    }
    properties
}

/// Where a resolved value came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "source", content = "name")]
pub enum Source {
    /// abxd's environment, under this name (the key or an alias).
    Environment(String),
    /// `supervisor.toml`, at this key.
    Config(String),
    /// The collection's `ArchiveBox.conf`, under this name.
    Collection(String),
    /// The schema's default.
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Environment(name) => write!(f, "abxd's environment ({name})"),
            Source::Config(key) => write!(f, "supervisor.toml {key}"),
            Source::Collection(name) => write!(f, "ArchiveBox.conf ({name})"),
            Source::Default => f.write_str("its default"),
        }
    }
}

/// A resolved value and where it came from (through the fallback key named, if it did).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Resolved {
    pub value: String,
    #[serde(flatten)]
    pub source: Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// The value of `key` (or one of its aliases) from an explicit source, if any.
fn explicit(
    key: &str,
    aliases: &[String],
    plugin: &Plugin,
    config: &Config,
    environ: Environ<'_>,
) -> Option<(String, Source)> {
    let names = || std::iter::once(key).chain(aliases.iter().map(String::as_str));
    let found = |get: &dyn Fn(&str) -> Option<String>| {
        names().find_map(|name| Some((get(name)?, name.to_string())))
    };
    if let Some((value, name)) = found(&|name| environ(name)) {
        return Some((value, Source::Environment(name)));
    }
    let settings = config.plugins.get(&plugin.name);
    let table = format!("[plugins.{}]", plugin.name);
    if let Some((value, name)) = found(&|name| settings?.env.get(name).cloned()) {
        return Some((value, Source::Config(format!("{table} env {name}"))));
    }
    let prefix = key_prefix(&plugin.name);
    let configured = match key {
        k if k == format!("{prefix}_TIMEOUT") => settings
            .and_then(|s| s.timeout)
            .map(|t| (whole_seconds(t), format!("{table} timeout"))),
        "TIMEOUT" if config.timeouts.hook_timeout != Timeouts::default().hook_timeout => Some((
            whole_seconds(config.timeouts.hook_timeout),
            "[timeouts] hook_timeout".to_string(),
        )),
        _ => None,
    };
    if let Some((seconds, key)) = configured {
        return Some((seconds.to_string(), Source::Config(key)));
    }
    let collection = &config.collection;
    found(&|name| collection.get(name).map(str::to_string))
        .map(|(value, name)| (value, Source::Collection(name)))
}

fn whole_seconds(duration: Duration) -> u64 {
    duration.as_secs_f64().ceil().max(1.0) as u64
}

/// The resolved values of a plugin's schema keys, as its hooks read them from the environment.
pub fn resolve(
    plugin: &Plugin,
    catalog: &Catalog,
    config: &Config,
    environ: Environ<'_>,
) -> BTreeMap<String, String> {
    (resolve_with_sources(plugin, catalog, config, environ).into_iter())
        .map(|(key, resolved)| (key, resolved.value))
        .collect()
}

/// [`resolve`], each value with where it came from.
pub fn resolve_with_sources(
    plugin: &Plugin,
    catalog: &Catalog,
    config: &Config,
    environ: Environ<'_>,
) -> BTreeMap<String, Resolved> {
    let mut values = BTreeMap::new();
    for (key, property) in properties(plugin, catalog) {
        if DECIDED_BY_ABXD.contains(&key) {
            continue;
        }
        let resolved = match explicit(key, &property.aliases, plugin, config, environ) {
            Some((value, source)) => Some((value, source, None)),
            None => (property.fallback.as_deref())
                .and_then(|fallback| {
                    let (value, source) = explicit(fallback, &[], plugin, config, environ)?;
                    Some((value, source, Some(fallback.to_string())))
                })
                .or_else(|| {
                    let value = property.default.as_ref().map(env_text)?;
                    Some((value, Source::Default, None))
                }),
        };
        if let Some((value, source, fallback)) = resolved.filter(|(v, _, _)| !v.is_empty()) {
            let resolved = Resolved {
                value,
                source,
                fallback,
            };
            values.insert(key.to_string(), resolved);
        }
    }
    values
}

/// Whether a plugin runs at all: `[plugins.X] enabled` and `<PLUGIN>_ENABLED` (or an alias) from
/// the environment, `supervisor.toml` or its schema default.
pub fn enabled(plugin: &Plugin, catalog: &Catalog, config: &Config) -> bool {
    enabled_with(plugin, catalog, config, &process_environ)
}

pub fn enabled_with(
    plugin: &Plugin,
    catalog: &Catalog,
    config: &Config,
    environ: Environ<'_>,
) -> bool {
    if config.plugins.get(&plugin.name).is_some_and(|p| !p.enabled) {
        return false;
    }
    let key = format!("{}_ENABLED", key_prefix(&plugin.name));
    let aliases = properties(plugin, catalog)
        .get(key.as_str())
        .map(|p| p.aliases.clone())
        .unwrap_or_default();
    let value = explicit(&key, &aliases, plugin, config, environ)
        .map(|(value, _)| value)
        .or_else(|| {
            let property = plugin.manifest.properties.get(&key)?;
            property.default.as_ref().map(env_text)
        });
    !value.is_some_and(|v| is_false(&v))
}

/// How long a hook of the plugin may run (a background hook: its grace at the end of its
/// scope): `<PLUGIN>_TIMEOUT` when the plugin has that key (or it is set), else `TIMEOUT`, else
/// `timeouts.hook_timeout`. `[plugins.X] timeout` is kept to the millisecond.
pub fn timeout(
    plugin: &Plugin,
    resolved: &BTreeMap<String, String>,
    config: &Config,
    environ: Environ<'_>,
) -> Duration {
    let key = format!("{}_TIMEOUT", key_prefix(&plugin.name));
    let seconds = |text: Option<String>| {
        text.and_then(|t| t.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
    };
    let settings: Option<&PluginConfig> = config.plugins.get(&plugin.name);
    seconds(environ(&key))
        .or_else(|| settings.and_then(|s| s.timeout))
        .or_else(|| seconds(resolved.get(&key).cloned()))
        .or_else(|| seconds(environ("TIMEOUT")))
        .unwrap_or(config.timeouts.hook_timeout)
}
