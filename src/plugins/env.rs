//! A plugin's resolved config: the values its hooks get as environment variables, whether it is
//! enabled, and its hooks' timeout.
//!
//! Resolution follows abx-plugins' `load_config` as abx-dl drives it: a key of the plugin's
//! schema (its own `config.json`, the shared `base` plugin's, and those of the plugins it
//! requires) takes, first found: abxd's environment (the key, then its `x-aliases`), then
//! `supervisor.toml` (`[plugins.X] env`, and `timeout` as `<PLUGIN>_TIMEOUT`; `timeouts
//! .hook_timeout` as `TIMEOUT` when set), then — if it has an `x-fallback` — the fallback key's
//! value from the same explicit sources, then its schema default. Invariant: a value abxd decides
//! (`SNAP_DIR`, `CRAWL_DIR`, `DATA_DIR`, `EXTRA_CONTEXT`) or an empty default never overrides
//! the environment a hook inherits (an empty `PATH` default would break every hook).

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

/// The value of `key` (or one of its aliases) from an explicit source, if any.
fn explicit(
    key: &str,
    aliases: &[String],
    plugin: &Plugin,
    config: &Config,
    environ: Environ<'_>,
) -> Option<String> {
    let names = || std::iter::once(key).chain(aliases.iter().map(String::as_str));
    if let Some(value) = names().find_map(environ) {
        return Some(value);
    }
    let settings = config.plugins.get(&plugin.name);
    if let Some(value) = settings.and_then(|s| names().find_map(|n| s.env.get(n).cloned())) {
        return Some(value);
    }
    let prefix = key_prefix(&plugin.name);
    match key {
        k if k == format!("{prefix}_TIMEOUT") => settings
            .and_then(|s| s.timeout)
            .map(|t| whole_seconds(t).to_string()),
        "TIMEOUT" if config.timeouts.hook_timeout != Timeouts::default().hook_timeout => {
            Some(whole_seconds(config.timeouts.hook_timeout).to_string())
        }
        _ => None,
    }
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
    let mut values = BTreeMap::new();
    for (key, property) in properties(plugin, catalog) {
        if DECIDED_BY_ABXD.contains(&key) {
            continue;
        }
        let value = explicit(key, &property.aliases, plugin, config, environ)
            .or_else(|| {
                let fallback = property.fallback.as_deref()?;
                explicit(fallback, &[], plugin, config, environ)
            })
            .or_else(|| property.default.as_ref().map(env_text));
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            values.insert(key.to_string(), value);
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
    let value = explicit(&key, &aliases, plugin, config, environ).or_else(|| {
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
