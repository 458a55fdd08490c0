//! A row's liveness and its end: whether the process a row claims still runs, who will record
//! its end, and the functions that make a row final.
//!
//! Invariants: `ProcessTable::record_end` and `ProcessTable::record_lost` are called from this module only, so
//! every way a row ends is one of the functions below:
//! - [`finish_reaped`]: its reaper saw its exit status (the supervisor loop, or a kept status
//!   written late);
//! - [`finish_unobserved`]: it is gone and nobody reaped it in front of us. It is recorded
//!   here only when no abxd process will reap it — see [`left_to_reaper`] — so a status that
//!   someone can still observe is never replaced by "unknown";
//! - [`finish_lost`]: recovery's verdict on rows whose process is gone, reused or of an earlier
//!   boot, or that never started;
//! - [`finish_spawn_failed`] and [`finish_own`]: the spawner and the daemon itself.

use crate::domain::{EndReason, ExitOutcome, Kind};
use crate::identity::{self, Identity, Liveness};
use crate::marker;
use crate::proctree;
use crate::store::{OrLater, ProcessRow, Store, StoreError};
use std::collections::BTreeSet;

/// Why the process of `identity` is not running any more, or `None` if it is.
pub fn why_gone(identity: &Identity) -> Option<String> {
    why(identity, identity::check(identity))
}

/// [`why_gone`] for many identities at once (one listing of `/proc`: `identity::check_all`).
pub fn why_all_gone(identities: &[&Identity]) -> Vec<Option<String>> {
    identity::check_all(identities)
        .into_iter()
        .zip(identities)
        .map(|(liveness, identity)| why(identity, liveness))
        .collect()
}

fn why(identity: &Identity, liveness: Liveness) -> Option<String> {
    match liveness {
        Liveness::Alive => None,
        Liveness::Gone => Some("process gone".to_string()),
        Liveness::Reused => Some(format!(
            "pid {} now belongs to another process (start time differs)",
            identity.pid
        )),
        Liveness::OtherBoot => Some("recorded during an earlier boot".to_string()),
    }
}

/// Whether the process of `row` runs: by its identity, or — for a row whose start could not be
/// written (a failed write) — by its marker.
pub fn row_running(store: &Store, row: &ProcessRow) -> Result<bool, StoreError> {
    Ok(match &row.identity {
        Some(id) => identity::check(id).is_alive(),
        None => !marker::marked(&store.marker_namespace()?, &[row.id]).is_empty(),
    })
}

/// Whether the process of `row`'s parent row is alive.
pub fn parent_alive(store: &Store, row: &ProcessRow) -> bool {
    row.parent_id
        .and_then(|p| store.processes().get(p).ok().flatten())
        .and_then(|p| p.identity)
        .is_some_and(|id| identity::check(&id).is_alive())
}

/// Whether a work row's owner (a worker's process row) is a live process, not one of
/// `dead_rows`. An owner on another machine is judged by that machine's heartbeat: alive while
/// it was heard within `lease`, presumed dead after (its work is then recovered here, and the
/// fence keeps whatever it writes when it comes back from landing).
pub fn owner_alive(
    store: &Store,
    owner: Option<i64>,
    dead_rows: &BTreeSet<i64>,
    lease: std::time::Duration,
) -> Result<bool, StoreError> {
    let Some(owner) = owner.filter(|o| !dead_rows.contains(o)) else {
        return Ok(false);
    };
    match store.processes().get(owner)? {
        Some(row) if row.status.is_live() && !row.on_this_machine() => {
            let heard_since = store.shared_now() - lease.as_millis() as i64;
            let machine = row.machine_id.as_deref().unwrap_or_default();
            Ok(store.machines().machine_heard_since(machine, heard_since)?)
        }
        Some(row) if row.status.is_live() => row_running(store, &row),
        _ => Ok(false),
    }
}

/// Whether a worker process below `own_row` and above `row` is alive: it supervises `row` and
/// records its end itself.
pub fn live_worker_between(store: &Store, row: &ProcessRow, own_row: i64) -> bool {
    let mut parent = row.parent_id;
    while let Some(id) = parent.filter(|id| *id != own_row) {
        let Ok(Some(above)) = store.processes().get(id) else {
            return false;
        };
        if above.kind.is_worker()
            && above
                .identity
                .is_some_and(|id| identity::check(&id).is_alive())
        {
            return true;
        }
        parent = above.parent_id;
    }
    false
}

/// Whether the end of `pid` is left to its reaper: it is a zombie whose parent is this process
/// or another supervising abxd process (each records what it reaps, re-parented or not).
/// A zombie of a hook or of any other program is not: that parent reaps it and tells no one.
pub fn left_to_reaper(store: &Store, pid: i32) -> bool {
    let Some(parent) = proctree::zombie_parent(pid) else {
        return false;
    };
    if parent == std::process::id() as i32 {
        return true;
    }
    matches!(
        store.processes().live_row_by_pid(parent),
        Ok(Some(row)) if row.kind.is_supervisor()
    )
}

/// Which rows a caller may make final when it sees their process gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recording {
    /// Only `child` rows: a hook or worker row is made final by whoever reaps it, which knows
    /// its status.
    ChildRows,
    /// Every row: for orphans, whose parents are gone and will reap nothing.
    AllRows,
}

impl Recording {
    pub fn covers(self, kind: Kind) -> bool {
        self == Recording::AllRows || kind == Kind::Child
    }
}

/// Makes row `row_id` final when its process (`pid`) was seen gone without being reaped here:
/// only if `recording` covers its kind and no abxd reaper will record it. Returns `false` if the
/// write failed (the caller may try again).
#[must_use = "a failed write leaves the row claiming a process that is gone"]
pub fn finish_unobserved(
    store: &Store,
    row_id: i64,
    kind: Kind,
    pid: Option<i32>,
    recording: Recording,
    reason: EndReason,
    detail: &str,
) -> bool {
    if !recording.covers(kind) || pid.is_some_and(|pid| left_to_reaper(store, pid)) {
        return true;
    }
    match store
        .processes()
        .record_end(row_id, None, reason, Some(detail))
        .or_later()
    {
        Ok(Some(())) => true,
        Ok(None) => false,
        Err(err) => {
            log::error!("row {row_id}: cannot record its end (kept to retry): {err}");
            false
        }
    }
}

/// Makes a reaped process's row final with the status its reaper saw (at `ended_at`, wall-clock
/// ms: the moment it was reaped, also when the write comes later).
pub fn finish_reaped(
    store: &Store,
    row_id: i64,
    outcome: ExitOutcome,
    reason: EndReason,
    detail: Option<&str>,
    ended_at: i64,
) -> Result<(), StoreError> {
    store
        .processes()
        .record_end_at(row_id, Some(outcome), reason, detail, ended_at)
}

/// Makes many rows `lost` at once, each with why (one transaction).
pub fn finish_lost(store: &Store, rows: &[(i64, &str)]) -> Result<(), StoreError> {
    store.processes().record_lost(rows)
}

/// Makes the row of a process that could not be started final, saying why.
pub fn finish_spawn_failed(store: &Store, row_id: i64, why: &str) -> Result<(), StoreError> {
    store
        .processes()
        .record_end(row_id, None, EndReason::SpawnFailed, Some(why))
}

/// The daemon records its own clean end, the last thing it writes.
pub fn finish_own(store: &Store, row_id: i64, detail: &str) -> Result<(), StoreError> {
    store.processes().record_end(
        row_id,
        Some(ExitOutcome::Code(0)),
        EndReason::Exited,
        Some(detail),
    )
}
