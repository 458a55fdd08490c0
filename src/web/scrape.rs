//! `/metrics` read: the tally brought up to date from the store, the gauges read now.
//!
//! Invariant: one scrape at a time updates the tally (it is behind a lock), so two scrapes at
//! once never count a row twice.

use super::metrics;
use super::seen::Entry;
use super::Shared;
use crate::store::{Moment, Store, StoreError, Watched};

/// `/metrics`: the tally brought up to date, and the gauges read now — every read as of one
/// moment, so that the kept counts and the rows read agree.
pub(super) fn scrape(store: &Store, shared: &Shared) -> Result<String, StoreError> {
    let mut tally = shared.tally.lock().unwrap_or_else(|e| e.into_inner());
    let watched = store.processes().watched();
    watched.as_of_one_moment(|| read(store, watched, shared, &mut tally))
}

fn read(
    store: &Store,
    watched: Watched<'_>,
    shared: &Shared,
    tally: &mut metrics::Tally,
) -> Result<String, StoreError> {
    catch_up(watched, tally, Moment::Ended)?;
    catch_up(watched, tally, Moment::HookStarted)?;
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
    let min_free_space = shared.config.limits.min_free_space;
    gauges.disk = crate::pool::free_space(&shared.config).map(|disk| {
        (
            disk.free,
            crate::disk::short(&disk, min_free_space).is_some(),
        )
    });
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
    gauges.politeness = super::politeness::HostGauges {
        hosts: store.queue().hosts().list()?,
        backoffs: store.queue().hosts().backoff_counts()?,
    };
    Ok(metrics::render(tally, &gauges))
}

/// Counts what had `moment` since the tally's mark: the rows from the mark on, read whole;
/// then, when the kept count of rows that ever had it grew by more than those, the rows of the
/// overlap before the mark not read yet (committed late) — their entries read only then.
fn catch_up(
    watched: Watched<'_>,
    tally: &mut metrics::Tally,
    moment: Moment,
) -> Result<(), StoreError> {
    let (from, until) = tally.seen(moment).overlap();
    let total = watched.moment_total(moment)?;
    let add = |tally: &mut metrics::Tally, since: i64, ids: &[i64]| -> Result<(), StoreError> {
        match moment {
            Moment::Ended => tally.add_ended(&watched.ended(since, ids)?),
            Moment::HookStarted => tally.add_started(&watched.hooks_started(since, ids)?),
        }
        Ok(())
    };
    add(tally, until, &[])?;
    let mut late = Vec::new();
    if tally.seen(moment).missed_some(total) {
        late = (tally.seen(moment)).unread(&watched.moments(moment, from, until)?);
        add(tally, i64::MAX, &ids(&late))?;
    }
    tally.seen(moment).read(total, &late);
    Ok(())
}

/// The row ids of `entries`.
fn ids(entries: &[Entry]) -> Vec<i64> {
    entries.iter().map(|&(_, id)| id).collect()
}
