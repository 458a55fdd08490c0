//! `/metrics` read: the tally brought up to date from the store, the gauges read now.
//!
//! Invariant: one scrape at a time updates the tally (it is behind a lock), so two scrapes at
//! once never count a row twice.

use super::metrics;
use super::seen::{Entry, Seen};
use super::Shared;
use crate::store::{Moment, Store, StoreError, Watched};

/// `/metrics`: the tally brought up to date, and the gauges read now.
pub(super) fn scrape(store: &Store, shared: &Shared) -> Result<String, StoreError> {
    let mut tally = shared.tally.lock().unwrap_or_else(|e| e.into_inner());
    let watched = store.processes().watched();
    // (Rows from the end of each overlap on are read whole; within it, only those read late.)
    let (late, learnt) = late_and_learnt(watched, Moment::Ended, &tally.ends)?;
    let ended = watched.ended(tally.ends.overlap().1, &late)?;
    tally.add_ended(&ended, &learnt);
    let (late, learnt) = late_and_learnt(watched, Moment::HookStarted, &tally.starts)?;
    let started = watched.hooks_started(tally.starts.overlap().1, &late)?;
    tally.add_started(&started, &learnt);
    let now = crate::store::now_ms();
    let this_machine = crate::store::ProcessFilter {
        live_only: true,
        machine_id: Some(crate::identity::machine_id().to_string()),
        ..Default::default()
    };
    let live = crate::render::PsEntry::all(store.processes().list(&this_machine)?, now);
    let mut gauges = metrics::Gauges {
        info: (
            shared.host.version.to_string(),
            shared.host.machine_id.clone(),
            shared.host.hostname.clone(),
        ),
        ..metrics::Gauges::default()
    };
    gauges.processes = watched
        .counts_by_kind_and_status()?
        .into_iter()
        .map(|(kind, status, n)| (kind, status.to_string(), n))
        .collect();
    for entry in &live {
        let row = &entry.row;
        for (flag, name) in [
            (row.escaped, "escaped"),
            (row.leaking, "leaking"),
            (row.unkillable, "unkillable"),
        ] {
            if flag {
                *gauges.flagged.entry(name).or_default() += 1;
            }
        }
        let alive = entry.verified == Some(crate::identity::Liveness::Alive);
        if let Some(pid) = row.pid.filter(|_| alive) {
            if let Some(bytes) = crate::proctree::resident_bytes(pid) {
                *gauges.memory.entry(row.kind).or_default() += bytes;
            }
        }
    }
    let (crawls, snapshots) = watched.queue_depths()?;
    gauges.queued = [
        ("crawls", crawls.queued, crawls.oldest_due_ms),
        ("snapshots", snapshots.queued, snapshots.oldest_due_ms),
    ];
    let browsers = store.processes().browsers_alive_by_scope(None)?;
    gauges.browsers_alive = u64::from(browsers.crawl_wide + browsers.per_snapshot);
    let shared_now = store.shared_now();
    gauges.heartbeats = store
        .machines()
        .all()?
        .into_iter()
        .map(|m| (m.id, m.hostname, (shared_now - m.heartbeat_at).max(0)))
        .collect();
    gauges.daemon_writes = crate::store::write_counts();
    gauges.worker_writes = store.machines().worker_write_counts(&gauges.info.1)?;
    gauges.refused = (store.crawls().refusal_totals()?.into_iter())
        .map(|(reason, count)| (reason.to_string(), count))
        .collect();
    Ok(metrics::render(&tally, &gauges))
}

/// What a scrape reads of `moment` besides the rows from `seen`'s overlap on: the ids of the
/// overlap's rows committed late (its entries read only when its count or sum of ids differs
/// from `seen`'s), and the entries it learnt — those late ones, and every machine's from the
/// overlap on.
fn late_and_learnt(
    watched: Watched<'_>,
    moment: Moment,
    seen: &Seen,
) -> Result<(Vec<i64>, Vec<Entry>), StoreError> {
    let (from, until) = seen.overlap();
    let mut learnt = Vec::new();
    if watched.moments_sum(moment, from, until)? != seen.overlap_sum() {
        learnt = seen.unread(&watched.moments(moment, from, until)?);
    }
    let late = learnt.iter().map(|&(_, id)| id).collect();
    learnt.extend(watched.moments(moment, until, i64::MAX)?);
    Ok((late, learnt))
}
