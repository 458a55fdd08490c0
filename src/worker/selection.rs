//! Which hooks a worker runs for its scope, and why the others do not run.
//!
//! Invariant: a hook that is not run is never dropped silently — a file that looks like a hook
//! but cannot run, or a plugin whose binaries could not be provisioned, gets a skipped result
//! naming them and the command that provisions them (unless its result is final already).

use crate::config::Config;
use crate::domain::ResultStatus;
use crate::plugins::{install, Catalog, Phase, Prepared};
use crate::store::{Crawl, Store, StoreError};
use std::collections::BTreeSet;

/// The hooks to run in `phase` for `crawl`, each with its plugin's config. A file that looks like
/// a hook of a selected plugin but cannot run is reported as a skipped result with the reason, so
/// the operator sees it. A plugin of the crawl's list that no longer exists is left out, saying so
/// (`add` refuses unknown plugins; a plugins dir may have changed since).
pub(super) fn hooks_for(
    store: &Store,
    config: &Config,
    phase: Phase,
    crawl: &Crawl,
    snapshot_id: Option<i64>,
    input: bool,
) -> Result<Vec<Prepared>, StoreError> {
    let catalog = Catalog::load(&config.plugins_dirs);
    // An input snapshot runs the plugins that parse imports (`worker::input`) — or the one its
    // `--parser` names — whatever the crawl names: those run on the pages its import lists.
    let parsers = input.then(|| match crawl.options.parser_plugin() {
        Some(parser) => vec![parser],
        None => catalog.import_parsers(),
    });
    let wanted = parsers.or_else(|| crawl.plugins.clone()).map(|names| {
        let (known, unknown): (Vec<String>, Vec<String>) = names
            .iter()
            .cloned()
            .partition(|n| catalog.plugins.contains_key(n));
        if !unknown.is_empty() {
            log::warn!("crawl {}: no plugin named {}", crawl.id, unknown.join(", "));
        }
        known
    });
    let mut selected = catalog
        .select(config, wanted.as_deref())
        .expect("only known names are left");
    let mut rejected = catalog.rejected(&selected, phase);
    // A file named like a hook whose name cannot be read is reported with the snapshots.
    if phase == Phase::Snapshot {
        rejected.extend(
            catalog
                .rejected
                .iter()
                .filter(|r| r.phase.is_none() && selected.contains(&r.plugin)),
        );
    }
    for reject in rejected {
        let reason = format!("not run: {}", reject.reason);
        let hook = reject.file_name();
        skip(store, crawl.id, snapshot_id, &reject.plugin, &hook, &reason)?;
    }
    // A plugin whose declared binaries could not be provisioned does not run: its hooks would
    // install them on their own clock, mid-crawl. (With `[install] auto`, the daemon tried before
    // it claimed the crawl.) Nor does a plugin that requires one that does not run.
    let binaries = store.results().binaries()?;
    let installed = binaries
        .iter()
        .filter(|b| b.found())
        .map(|b| b.name.clone());
    let environ = crate::plugins::env::process_environ;
    let missing =
        install::unprovisioned(&catalog, &selected, config, &installed.collect(), &environ);
    let mut not_run: Vec<(String, String)> = (missing.iter())
        .map(|(plugin, lacking)| {
            (
                plugin.clone(),
                unprovisioned_reason(config, plugin, lacking, &binaries),
            )
        })
        .collect();
    let mut removed: BTreeSet<String> = missing.into_keys().collect();
    loop {
        let dependents: Vec<(String, String)> = (selected.iter())
            .filter(|plugin| !removed.contains(*plugin))
            .filter_map(|plugin| {
                let required = &catalog.plugins[plugin].manifest.required_plugins;
                let gone = required.iter().find(|r| removed.contains(*r))?;
                Some((
                    plugin.clone(),
                    format!("not run: it requires {gone}, which does not run"),
                ))
            })
            .collect();
        if dependents.is_empty() {
            break;
        }
        removed.extend(dependents.iter().map(|(plugin, _)| plugin.clone()));
        not_run.extend(dependents);
    }
    for (plugin, reason) in &not_run {
        let only = BTreeSet::from([plugin.clone()]);
        for hook in catalog.hooks(&only, phase) {
            skip(
                store,
                crawl.id,
                snapshot_id,
                plugin,
                &hook.file_name,
                reason,
            )?;
        }
        selected.remove(plugin);
    }
    Ok(catalog.prepare(&selected, phase, config))
}

/// Why `plugin` does not run when the binaries `lacking` are not provisioned: each one's failure
/// as this host recorded it, with the variable that names another one, and the command that
/// tries again (or, with `[install] auto` off, the command that provisions them).
fn unprovisioned_reason(
    config: &Config,
    plugin: &str,
    lacking: &[String],
    binaries: &[crate::store::Binary],
) -> String {
    if !config.install.auto {
        return format!(
            "not run: its binaries are not provisioned ({}); `abxd install --plugins \
             {plugin}` provisions them (or set [install] auto = true)",
            lacking.join(", ")
        );
    }
    let each: Vec<String> = (lacking.iter())
        .map(|name| match binaries.iter().find(|b| &b.name == name) {
            Some(binary) if binary.failure.is_some() && !binary.override_key.is_empty() => {
                format!(
                    "{name} could not be found or installed ({}): set {} to one that is",
                    binary.failure.as_deref().unwrap_or_default(),
                    binary.override_key
                )
            }
            _ => format!("{name} could not be found or installed"),
        })
        .collect();
    format!(
        "not run: {}; `abxd install --plugins {plugin}` tries again and says why",
        each.join("; ")
    )
}

/// Records a hook of the scope as skipped, with why, unless its result is final already.
fn skip(
    store: &Store,
    crawl_id: i64,
    snapshot_id: Option<i64>,
    plugin: &str,
    hook: &str,
    reason: &str,
) -> Result<(), StoreError> {
    let result = store
        .results()
        .result_for(crawl_id, snapshot_id, plugin, hook)?;
    if !result.is_final() {
        log::warn!("{hook}: {reason}");
        store
            .results()
            .finish(result.id, ResultStatus::Skipped, Some(reason), &[], 0)?;
    }
    Ok(())
}

/// Whether each snapshot of `crawl` launches a browser of its own: Chrome runs for it, isolated
/// per snapshot (`CHROME_ISOLATION=snapshot`; by default one browser serves the whole crawl).
pub(super) fn snapshots_launch_browsers(config: &Config, crawl: &Crawl) -> bool {
    chrome_isolation(config, crawl).is_some_and(|isolation| isolation == "snapshot")
}

/// Whether `crawl` launches one browser for all its snapshots: Chrome runs for it, shared by
/// the crawl (`CHROME_ISOLATION=crawl`, the default).
pub fn crawl_launches_browser(config: &Config, crawl: &Crawl) -> bool {
    chrome_isolation(config, crawl).is_some_and(|isolation| isolation != "snapshot")
}

/// Chrome's `CHROME_ISOLATION` for `crawl` (its default when unset), if Chrome runs for it.
fn chrome_isolation(config: &Config, crawl: &Crawl) -> Option<String> {
    let catalog = Catalog::load(&config.plugins_dirs);
    let selected = catalog.select(config, crawl.plugins.as_deref()).ok()?;
    let chrome = selected.get("chrome").map(|name| &catalog.plugins[name])?;
    let env = crate::plugins::env::resolve(
        chrome,
        &catalog,
        config,
        &crate::plugins::env::process_environ,
    );
    Some(
        env.get("CHROME_ISOLATION")
            .cloned()
            .unwrap_or_else(|| "crawl".into()),
    )
}
