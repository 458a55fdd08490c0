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
    store: &mut Store,
    config: &Config,
    phase: Phase,
    crawl: &Crawl,
    snapshot_id: Option<i64>,
) -> Result<Vec<Prepared>, StoreError> {
    let catalog = Catalog::load(&config.plugins_dirs);
    let wanted = crawl.plugins.as_ref().map(|names| {
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
    // it claimed the crawl.)
    let installed = store.installed_binaries()?;
    let environ = crate::plugins::env::process_environ;
    let missing = install::unprovisioned(&catalog, &selected, config, &installed, &environ);
    for (plugin, binaries) in &missing {
        let reason = if config.install.auto {
            format!(
                "not run: its binaries could not be found or installed ({}); \
                 `abxd install --plugins {plugin}` tries again and says why",
                binaries.join(", ")
            )
        } else {
            format!(
                "not run: its binaries are not provisioned ({}); `abxd install --plugins \
                 {plugin}` provisions them (or set [install] auto = true)",
                binaries.join(", ")
            )
        };
        let only = BTreeSet::from([plugin.clone()]);
        for hook in catalog.hooks(&only, phase) {
            skip(
                store,
                crawl.id,
                snapshot_id,
                plugin,
                &hook.file_name,
                &reason,
            )?;
        }
        selected.remove(plugin);
    }
    Ok(catalog.prepare(&selected, phase, config))
}

/// Records a hook of the scope as skipped, with why, unless its result is final already.
fn skip(
    store: &mut Store,
    crawl_id: i64,
    snapshot_id: Option<i64>,
    plugin: &str,
    hook: &str,
    reason: &str,
) -> Result<(), StoreError> {
    let result = store.result_for(crawl_id, snapshot_id, plugin, hook)?;
    if !result.is_final() {
        log::warn!("{hook}: {reason}");
        store.finish_result(result.id, ResultStatus::Skipped, Some(reason), &[], 0)?;
    }
    Ok(())
}
