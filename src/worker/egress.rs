//! A crawl's egress policy, put in force by its crawl worker before anything of the crawl runs
//! (`egress::crawl`): from then on the kernel refuses every connect or send of its hooks — and
//! of everything they start — to a network the crawl may not reach.
//!
//! What the policy refused is counted by the kernel (`egress::kernel::Refusals`) and added to
//! the crawl's refusals by reason as the worker goes — when one of its children ended, and at
//! its end (`abxctl show`, `/metrics`). An imported
//! crawl has no seeds when its policy is put in force: once its input is parsed into seeds on a
//! non-public address, the policy is put in force again as a local crawl's (what the URL rule
//! lets such seeds be, their fetch is let through too) — before any of them is claimed.
//!
//! A snapshot lent to this host by another machine's crawl (a fleet) has no crawl worker here:
//! its snapshot worker puts the crawl's policy in force on its own cgroup the same way.
//!
//! Invariant: a restricted crawl (the default) whose policy the kernel cannot hold does not run
//! at all; the worker says why and the crawl ends failed (a lent snapshot: its worker fails,
//! running no hook).

use super::Context;
use crate::domain::Refusal;
use crate::egress::kernel::{Listeners, Refusals};
use crate::egress::ranges::Reach;
use crate::store::{Crawl, Store, StoreError};
use crate::supervisor::RunsHooks;

/// The kernel's counts of what the crawl's policy refused, and how much of them the crawl's
/// refusals hold already; for an imported crawl whose seeds are not known yet, what puts its
/// policy in force again once they are.
pub(super) struct Refused {
    counts: Refusals,
    recorded: [u64; Reach::ALL.len()],
    widen: Option<Widen>,
}

/// What an imported crawl's policy is put in force again with, once its seeds are local.
struct Widen {
    cgroup: std::path::PathBuf,
    listeners: Listeners,
    allow_networks: Vec<String>,
}

impl Refused {
    /// An imported crawl whose seeds turned out local (its input parsed, in the same
    /// transaction as their snapshots): its policy becomes a local crawl's. Asked before each
    /// fill of its pool, so no seed is claimed under the public one; once done, never again.
    pub(super) fn widen_to_local_seeds(
        &mut self,
        store: &Store,
        crawl_id: i64,
    ) -> Result<(), StoreError> {
        let Some(widen) = &self.widen else {
            return Ok(());
        };
        let Some(crawl) = store.crawls().get(crawl_id)? else {
            return Ok(());
        };
        let imported = store.crawls().seed_hosts(crawl_id)?;
        let seeds = crate::url_rule::Seeds::of(&crawl.urls);
        if !seeds
            .with_hosts(imported.iter().map(|(host, _)| host.as_str()))
            .local
        {
            return Ok(());
        }
        let policy = crate::egress::crawl::policy_of(true, &widen.allow_networks);
        let again = (&widen.listeners, &self.counts);
        match crate::egress::crawl::put_in_force_again(&policy, &widen.cgroup, again) {
            Ok(()) => {
                log::info!("crawl {crawl_id}: its seeds are local: egress as a local crawl's")
            }
            Err(err) => log::error!("crawl {crawl_id}: its local seeds stay refused: {err}"),
        }
        self.widen = None;
        Ok(())
    }

    /// Adds what the kernel refused since the last call to the crawl's refusals; a write the
    /// database refused is tried again at the next call.
    pub(super) fn record(&mut self, store: &Store, crawl_id: i64) -> Result<(), StoreError> {
        let now = self.counts.counts();
        for (index, reach) in Reach::ALL.into_iter().enumerate() {
            let new = now[index].saturating_sub(self.recorded[index]);
            if new > 0 {
                store
                    .crawls()
                    .add_refusals(crawl_id, refusal_of(reach), new)?;
                self.recorded[index] = now[index];
            }
        }
        Ok(())
    }
}

/// The reason a connect refused for `reach` is counted under.
fn refusal_of(reach: Reach) -> Refusal {
    match reach {
        Reach::Metadata => Refusal::ConnectMetadata,
        Reach::Loopback => Refusal::ConnectLoopback,
        Reach::Private => Refusal::ConnectPrivate,
        Reach::LinkLocal => Refusal::ConnectLinkLocal,
        Reach::CarrierNat => Refusal::ConnectCarrierNat,
        Reach::Unspecified => Refusal::ConnectUnspecified,
        Reach::Broadcast => Refusal::ConnectBroadcast,
    }
}

/// Whether this snapshot worker works on a snapshot lent to this host: its parent is the daemon,
/// not a crawl worker (whose policy would hold its hooks already).
pub(super) fn is_lent(
    cx: &Context<crate::supervisor::SnapshotWorkerChild>,
) -> Result<bool, StoreError> {
    let parent = (cx.store.processes().get(cx.row_id)?).and_then(|row| row.parent_id);
    let parent = match parent {
        Some(parent) => cx.store.processes().get(parent)?,
        None => None,
    };
    Ok(parent.is_some_and(|row| row.kind == crate::domain::Kind::Orchestrator))
}

/// Holds the crawl's hooks to its egress policy, unless its rules say unrestricted; returns
/// what counts its refusals (none: unrestricted); `Err`: why the kernel cannot.
pub(super) fn hold_to_policy<O: RunsHooks>(
    cx: &mut Context<O>,
    crawl: &Crawl,
) -> Result<Option<Refused>, String> {
    if !crawl.rules.restricted() {
        log::warn!(
            "crawl {}: egress unrestricted: its hooks reach whatever the host reaches",
            crawl.id
        );
        return Ok(None);
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
    let in_force = crate::egress::crawl::put_in_force(&policy, &cgroup.dir, &own_leaf)
        .map_err(|err| format!("its egress cannot be restricted: {err}"))?;
    let widen = (crawl.has_input && !seeds_local).then(|| Widen {
        cgroup: cgroup.dir.clone(),
        listeners: in_force.listeners,
        allow_networks: crawl.rules.allow_networks.clone(),
    });
    log::info!(
        "crawl {}: egress restricted ({} seeds; {} networks allowed)",
        crawl.id,
        if seeds_local { "local" } else { "public" },
        crawl.rules.allow_networks.len()
    );
    cx.supervisor.exempt_workers(in_force.exemption);
    Ok(Some(Refused {
        counts: in_force.refusals,
        recorded: [0; Reach::ALL.len()],
        widen,
    }))
}
