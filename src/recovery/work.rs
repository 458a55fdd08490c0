//! Recovering work whose owner is gone: planned read-only, then carried out, each seal and
//! put-back fenced to the epoch it was planned at.
//!
//! Invariants: a result that succeeded is never touched; interrupted results run again until
//! `limits.max_result_attempts`, then end failed; work whose results (or snapshots) are all
//! final is sealed, any other is requeued; an owner is judged by process evidence on this
//! machine, by its machine's heartbeat on another, by the lease only where none was recorded.

use super::{describe, Reconciliation};
use crate::config::Config;
use crate::domain::{Claim, Queue, ResultStatus};
use crate::liveness::owner_alive;
use crate::store::{HookResult, Store, StoreError};
use std::collections::BTreeSet;
use std::time::Duration;

/// The most a piece of work waits before it runs again.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(600);
/// What recovering ownerless work does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkPlan {
    pub retry_results: Vec<i64>,
    pub fail_results: Vec<(i64, u32)>,
    pub seal_snapshots: Vec<Claim>,
    pub requeue_snapshots: Vec<Claim>,
    pub seal_crawls: Vec<Claim>,
    pub requeue_crawls: Vec<Claim>,
}

impl WorkPlan {
    pub fn is_empty(&self) -> bool {
        *self == WorkPlan::default()
    }
}
/// Recovers the started work (of `crawl`, or all) whose owner is dead, logging each action: the
/// one way both the daemon (a dead crawl worker) and a crawl worker (a dead snapshot worker)
/// recover. With `back_off`, requeued work waits by its restart count.
pub fn recover_ownerless(
    store: &Store,
    config: &Config,
    crawl: Option<i64>,
    back_off: bool,
) -> Result<(), StoreError> {
    // One transaction: a recovery the database refused half-way (e.g. busy) changed nothing,
    // so trying it again counts no restart twice.
    store
        .all_or_nothing(|store| {
            let plan = plan_work(store, config, crawl, &BTreeSet::new())?;
            apply_work(store, config, &plan, back_off)?;
            Ok(plan)
        })
        .map(|plan| {
            for line in describe(&Reconciliation::default(), &plan) {
                log::info!("recovery: {line}");
            }
        })
}

/// Plans the recovery of started work whose owner is not alive, within `crawl` if given.
/// `dead_rows` are rows to treat as dead although their processes still run (orphans about to
/// be torn down, for a dry run).
pub fn plan_work(
    store: &Store,
    config: &Config,
    crawl: Option<i64>,
    dead_rows: &BTreeSet<i64>,
) -> Result<WorkPlan, StoreError> {
    let now = store.queue_now();
    let lease = config.timeouts.lease;
    plan(store, config, crawl, |owner, lease_ends| {
        // Process evidence first; a lease only where no owner was ever recorded.
        Ok(match owner {
            Some(_) => !owner_alive(store, owner, dead_rows, lease)?,
            None => lease_ends <= now,
        })
    })
}

/// Recovers the work of the machines presumed dead — other hosts of a shared store not heard
/// from for longer than the lease — and only theirs (this host's own dead workers are
/// recovered by their parents, once what they left is torn down). What every daemon of a fleet
/// does at each heartbeat; each seal and put-back is fenced, so it happens once however many
/// hosts try. Returns the plan carried out.
pub fn take_over_silent(store: &Store, config: &Config) -> Result<WorkPlan, StoreError> {
    let since = store.shared_now() - config.timeouts.lease.as_millis() as i64;
    let silent: BTreeSet<i64> = store
        .machines()
        .rows_of_silent_machines(since)?
        .into_iter()
        .collect();
    if silent.is_empty() {
        return Ok(WorkPlan::default());
    }
    store.all_or_nothing(|store| {
        let plan = plan(store, config, None, |owner, _| {
            Ok(owner.is_some_and(|owner| silent.contains(&owner)))
        })?;
        apply_work(store, config, &plan, false)?;
        Ok(plan)
    })
}

/// Plans the recovery of the started work (within `crawl` if given) that `abandoned` says of
/// its owner row and lease end.
pub(super) fn plan(
    store: &Store,
    config: &Config,
    crawl: Option<i64>,
    abandoned: impl Fn(Option<i64>, i64) -> Result<bool, StoreError>,
) -> Result<WorkPlan, StoreError> {
    let mut plan = WorkPlan::default();
    let ownerless = |queue: Queue| -> Result<Vec<Claim>, StoreError> {
        let mut ids = Vec::new();
        for (claim, owner, lease_ends) in store.queue().started(queue)? {
            if abandoned(owner, lease_ends)? {
                ids.push(claim);
            }
        }
        Ok(ids)
    };
    let max_attempts = config.limits.max_result_attempts;
    let settle_results = |results: &[HookResult], plan: &mut WorkPlan| -> bool {
        // Whether every result is (or is made) final.
        let mut all_final = !results.is_empty();
        for result in results {
            match result.status {
                ResultStatus::Started if result.attempts >= max_attempts => {
                    plan.fail_results.push((result.id, result.attempts))
                }
                ResultStatus::Started => {
                    plan.retry_results.push(result.id);
                    all_final = false;
                }
                ResultStatus::Queued => all_final = false,
                _ => {}
            }
        }
        all_final
    };
    let mut sealed_now: BTreeSet<i64> = BTreeSet::new();
    for claim in ownerless(Queue::Snapshots)? {
        let snapshot_id = claim.id;
        let Some(snapshot) = store.crawls().snapshot(snapshot_id)? else {
            continue;
        };
        if crawl.is_some_and(|c| c != snapshot.crawl_id) {
            continue;
        }
        let results = store.results().snapshot_results(snapshot_id)?;
        if settle_results(&results, &mut plan) {
            plan.seal_snapshots.push(claim);
            sealed_now.insert(snapshot_id);
        } else {
            plan.requeue_snapshots.push(claim);
        }
    }
    for claim in ownerless(Queue::Crawls)? {
        let crawl_id = claim.id;
        if crawl.is_some_and(|c| c != crawl_id) {
            continue;
        }
        // (Read by what is still open, and its crawl hooks' results alone: recovering a crawl
        // of 100,000 snapshots and a million results reads neither.)
        let open = (store.crawls()).open_snapshots(crawl_id, sealed_now.len() + 1)?;
        let all_sealed = store.crawls().first_snapshot(crawl_id)?.is_some()
            && open.iter().all(|id| sealed_now.contains(id));
        let crawl_results = store.results().of_crawl_hooks(crawl_id)?;
        if all_sealed {
            // Its crawl hooks were only waiting for the end: an interrupted one is final now.
            for result in crawl_results
                .iter()
                .filter(|r| r.status == ResultStatus::Started)
            {
                plan.fail_results.push((result.id, result.attempts));
            }
            plan.seal_crawls.push(claim);
        } else {
            settle_results(&crawl_results, &mut plan);
            plan.requeue_crawls.push(claim);
        }
    }
    Ok(plan)
}

/// How long work restarted `restarts` times waits before it runs again.
pub fn backoff(config: &Config, restarts: u32) -> Duration {
    config
        .timeouts
        .retry_backoff
        .saturating_mul(1 << restarts.min(10))
        .min(MAX_BACKOFF)
}

/// Carries a work plan out. With `back_off`, requeued work waits by its restart count;
/// otherwise it is due at once (recovery at start).
pub fn apply_work(
    store: &Store,
    config: &Config,
    plan: &WorkPlan,
    back_off: bool,
) -> Result<(), StoreError> {
    for &id in &plan.retry_results {
        store.results().retry(id)?;
    }
    for &(id, attempts) in &plan.fail_results {
        let message = format!("interrupted {attempts} times; not run again");
        store
            .results()
            .finish(id, ResultStatus::Failed, Some(&message), &[], 0)?;
    }
    // (Each seal and put-back holds only if the row is still at the epoch it was planned at:
    // done once, however many hosts recover at once.)
    for &claim in &plan.seal_snapshots {
        store.queue().seal(claim)?;
    }
    let now = store.queue_now();
    let due = |restarts: u32| -> i64 {
        if back_off {
            now + backoff(config, restarts).as_millis() as i64
        } else {
            now
        }
    };
    for &claim in &plan.requeue_snapshots {
        let restarts = store
            .crawls()
            .snapshot(claim.id)?
            .map(|s| s.restarts)
            .unwrap_or(0);
        store.queue().requeue(claim, due(restarts))?;
    }
    for &claim in &plan.seal_crawls {
        store.queue().seal(claim)?;
    }
    for &claim in &plan.requeue_crawls {
        let restarts = store
            .crawls()
            .get(claim.id)?
            .map(|c| c.restarts)
            .unwrap_or(0);
        store.queue().requeue(claim, due(restarts))?;
    }
    Ok(())
}
