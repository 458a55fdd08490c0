//! `plugin_env`: what a plugin's hooks get from its config, each variable with where it came
//! from — answered alike by the daemon (with its own environment, which is what its hooks
//! inherit) and by `abxctl` when the daemon is down (with abxctl's, and saying so).
//!
//! Invariant: a value that looks like a secret (a key naming a password, token, secret or API
//! key) is never shown, only where it came from: whoever may ask the daemon is not thereby
//! whoever may read its secrets.

use super::Refusal;
use crate::config::Config;
use crate::control::protocol::{EnvValue, PluginEnvReport};
use crate::plugins::env::{resolve_with_sources, Environ};
use crate::plugins::Catalog;

/// Words in a key that make its value a secret.
const SECRET_WORDS: &[&str] = &["PASSWORD", "TOKEN", "SECRET", "API_KEY", "APIKEY"];

/// `value` as shown for `key`: none for a secret.
fn shown(key: &str, value: String) -> Option<String> {
    let secret = SECRET_WORDS.iter().any(|word| key.contains(word));
    (!secret).then_some(value)
}

/// The variables `plugin`'s hooks get under `config` in the environment `environ`; refused
/// naming the plugins there are when there is no such plugin.
pub fn report(
    config: &Config,
    plugin: &str,
    environ: Environ<'_>,
) -> Result<PluginEnvReport, Refusal> {
    let catalog = Catalog::load(&config.plugins_dirs);
    let Some(found) = catalog.plugins.get(plugin) else {
        let unknown = catalog.check_names(&[plugin.to_string()]).unwrap_err();
        return Err(Refusal::not_found(unknown.to_string()));
    };
    let mut values: Vec<EnvValue> = (resolve_with_sources(found, &catalog, config, environ))
        .into_iter()
        .map(|(key, resolved)| {
            let from = match &resolved.fallback {
                Some(fallback) => format!("{} through {fallback}", resolved.source),
                None => resolved.source.to_string(),
            };
            EnvValue {
                value: shown(&key, resolved.value),
                key,
                from,
            }
        })
        .collect();
    // (`[plugins.X] env` keys outside the schema reach its hooks as they are.)
    let extra = config.plugins.get(plugin).map(|p| &p.env);
    for (key, value) in extra.into_iter().flatten() {
        if !values.iter().any(|v| &v.key == key) {
            values.push(EnvValue {
                key: key.clone(),
                value: shown(key, value.clone()),
                from: format!("supervisor.toml [plugins.{plugin}] env {key}"),
            });
        }
    }
    values.sort_by(|a, b| a.key.cmp(&b.key));
    let collection = &config.collection;
    Ok(PluginEnvReport {
        plugin: plugin.to_string(),
        values,
        collection: collection.path.as_ref().map(|p| p.display().to_string()),
        collection_problem: collection.unreadable.clone(),
    })
}
