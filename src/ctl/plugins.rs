//! `abxctl plugins`: what the plugins dirs hold, as a crawl would run it, with the binaries each
//! plugin declares as this host resolved them; `abxctl binaries`: those binaries alone.
//!
//! Invariant: the plugins dirs listed are the running daemon's (found in its environment, which
//! for a service is systemd's, not the operator's shell's); with no daemon, this config's.

use super::{CtlError, Out, Result};
use crate::config::Config;
use crate::control::client::ClientError;
use crate::control::protocol::{Request, Response};
use crate::exit;
use crate::plugins::{env, install, Catalog, Phase};
use crate::printable;
use crate::render::binaries::{binaries_json, binaries_table, binary_json, not_found};
use crate::store::{Binary, Store};
use serde_json::json;
use std::collections::BTreeSet;

pub(super) fn binaries(config: &Config, json: bool) -> Result<i32> {
    let binaries = Store::open_read_only_at(&config.database)?
        .results()
        .binaries()?;
    if json {
        println!("{}", binaries_json(&binaries));
    } else {
        print!("{}", binaries_table(&binaries));
    }
    Ok(0)
}

/// The binaries `plugin` declares (placeholders filled as its hooks would see them), each with
/// how this host resolved it, if it did.
fn declared<'a>(
    catalog: &Catalog,
    plugin: &str,
    config: &Config,
    resolved: &'a [Binary],
) -> Vec<(String, Option<&'a Binary>)> {
    let one = BTreeSet::from([plugin.to_string()]);
    let (steps, _) = install::plan(catalog, &one, config, &env::process_environ);
    (steps.into_iter())
        .map(|step| {
            let binary = resolved.iter().find(|b| b.name == step.binary);
            (step.binary, binary)
        })
        .collect()
}

/// The plugins dirs the running daemon's crawls run, or none when no daemon answers.
fn daemons_plugins_dirs(config: &Config) -> Option<Vec<std::path::PathBuf>> {
    match super::client(config).request(&Request::Status) {
        Ok(Response::Status(info)) if !info.plugins_dirs.is_empty() => {
            Some(info.plugins_dirs.iter().map(Into::into).collect())
        }
        _ => None,
    }
}

/// `abxctl plugins --env PLUGIN`: what its hooks get from its config, as the daemon resolves
/// it — or, with the daemon down, as abxctl does in its own environment, saying so.
pub(super) fn env_of(config: &Config, plugin: &str, out: Out) -> Result<i32> {
    let request = Request::PluginEnv {
        plugin: plugin.to_string(),
    };
    let (report, running) = match super::client(config).request(&request) {
        Ok(Response::PluginEnv(report)) => (report, true),
        Ok(Response::Error { code, message }) => return Err(CtlError::Refused { code, message }),
        Ok(other) => return Err(super::unexpected(other)),
        Err(ClientError::NotRunning { .. }) => {
            let report = crate::verbs::plugin_env::report(config, plugin, &env::process_environ)
                .map_err(super::refused_here)?;
            (report, false)
        }
        Err(err) => return Err(err.into()),
    };
    let human = || print!("{}", crate::render::plugin_env_table(&report, running));
    out.answer(human, || {
        let mut value = serde_json::to_value(&report).expect("a report serializes");
        value["daemon_running"] = json!(running);
        value
    });
    Ok(exit::OK)
}

pub(super) fn run(config: &Config, json: bool) -> Result<i32> {
    let plugins_dirs = daemons_plugins_dirs(config).unwrap_or_else(|| config.plugins_dirs.clone());
    let catalog = Catalog::load(&plugins_dirs);
    // (No database yet is no binary resolved yet.)
    let resolved = Store::open_read_only_at(&config.database)
        .and_then(|store| store.results().binaries())
        .unwrap_or_default();
    let selected = catalog
        .select(config, None)
        .expect("every plugin of the catalog exists");
    if json {
        let plugins: Vec<_> = catalog
            .plugins
            .values()
            .map(|plugin| {
                let hooks: Vec<_> = plugin
                    .hooks
                    .iter()
                    .map(|h| {
                        json!({
                            "file": h.file_name,
                            "event": h.event,
                            "order": h.order,
                            "background": h.background,
                            "crawled": h.phase().is_some(),
                        })
                    })
                    .collect();
                json!({
                    "name": plugin.name,
                    "dir": plugin.dir,
                    "enabled": env::enabled(plugin, &catalog, config),
                    "runs": selected.contains(&plugin.name),
                    "required_plugins": plugin.manifest.required_plugins,
                    "binaries": declared(&catalog, &plugin.name, config, &resolved)
                        .into_iter()
                        .map(|(name, binary)| match binary {
                            Some(binary) => binary_json(binary),
                            None => json!({"name": name, "found": null}),
                        })
                        .collect::<Vec<_>>(),
                    "hooks": hooks,
                })
            })
            .collect();
        let rejected: Vec<_> = catalog
            .rejected
            .iter()
            .map(|r| json!({"plugin": r.plugin, "path": r.path, "reason": r.reason}))
            .collect();
        let out = json!({"version": 1, "plugins": plugins, "rejected": rejected});
        println!("{out}");
        return Ok(0);
    }
    if catalog.plugins.is_empty() {
        let dirs: Vec<String> = config
            .plugins_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        println!("no plugins in {}", dirs.join(", "));
        return Ok(0);
    }
    for plugin in catalog.plugins.values() {
        let state = if selected.contains(&plugin.name) {
            "runs"
        } else if !env::enabled(plugin, &catalog, config) {
            "disabled"
        } else {
            "does not run: a plugin it requires is missing or disabled"
        };
        let requires = if plugin.manifest.required_plugins.is_empty() {
            String::new()
        } else {
            format!(", requires {}", plugin.manifest.required_plugins.join(", "))
        };
        let line = format!(
            "{} ({state}{requires})  {}",
            plugin.name,
            plugin.dir.display()
        );
        println!("{}", printable::line(&line));
        for (name, binary) in declared(&catalog, &plugin.name, config, &resolved) {
            let how = match binary {
                Some(binary) if binary.found() => format!(
                    "{} ({}) {}",
                    binary.version.as_deref().unwrap_or("-"),
                    binary.provider.as_deref().unwrap_or("-"),
                    binary.abspath.as_deref().unwrap_or("-")
                ),
                Some(binary) => not_found(binary),
                None => "not resolved yet (a crawl or `abxd install` resolves it)".into(),
            };
            println!("{}", printable::line(&format!("  binary   {name}  {how}")));
        }
        for hook in &plugin.hooks {
            let phase = match hook.phase() {
                Some(Phase::Crawl) => "crawl",
                Some(Phase::Snapshot) => "snapshot",
                None => "not run",
            };
            let background = if hook.background { "  background" } else { "" };
            let file = printable::line(&hook.file_name);
            println!("  {phase:<9}{:>3}  {file}{background}", hook.order);
        }
        for rejected in catalog.rejected.iter().filter(|r| r.plugin == plugin.name) {
            let file = rejected.file_name();
            let line = format!("  rejected      {file}: {}", rejected.reason);
            println!("{}", printable::line(&line));
        }
    }
    Ok(0)
}
