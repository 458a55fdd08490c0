//! A crawl's egress policy, put in force by its crawl worker before anything of the crawl runs
//! (`egress::crawl`): from then on the kernel refuses every connect or send of its hooks — and
//! of everything they start — to a network the crawl may not reach.
//!
//! Invariant: a restricted crawl (the default) whose policy the kernel cannot hold does not run
//! at all; the worker says why and the crawl ends failed.

use super::Context;
use crate::store::Crawl;
use crate::supervisor::CrawlWorkerChild;

/// Holds the crawl's hooks to its egress policy, unless its rules say unrestricted; `Err`: why
/// the kernel cannot.
pub(super) fn hold_to_policy(
    cx: &mut Context<CrawlWorkerChild>,
    crawl: &Crawl,
) -> Result<(), String> {
    if !crawl.rules.restricted() {
        log::warn!(
            "crawl {}: egress unrestricted: its hooks reach whatever the host reaches",
            crawl.id
        );
        return Ok(());
    }
    let Some(cgroup) = cx.supervisor.cgroup() else {
        return Err(format!(
            "its egress cannot be restricted: abxd has no cgroup of its own to hold its hooks in \
             (`abxctl status` says why); set [crawl] egress = \"unrestricted\" in {} (or \
             `abxctl add --egress unrestricted`) to crawl unprotected",
            cx.config.source.display()
        ));
    };
    let seeds_local = crate::url_rule::Seeds::of(&crawl.urls).local;
    let policy = crate::egress::crawl::policy_of(seeds_local, &crawl.rules.allow_networks);
    let own_leaf = cgroup.dir.join(crate::cgroup::SUPERVISOR_LEAF);
    let exemption = crate::egress::crawl::put_in_force(&policy, &cgroup.dir, &own_leaf)
        .map_err(|err| format!("its egress cannot be restricted: {err}"))?;
    log::info!(
        "crawl {}: egress restricted ({} seeds; {} networks allowed)",
        crawl.id,
        if seeds_local { "local" } else { "public" },
        crawl.rules.allow_networks.len()
    );
    cx.supervisor.exempt_workers(exemption);
    Ok(())
}
