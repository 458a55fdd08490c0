//! Teardown: the deadline map that stops processes — SIGTERM now, SIGKILL at each one's deadline.
//!
//! Invariants: the map is keyed by process row, never by name or bare pid; a signal is sent only
//! after the row's identity is checked against procfs; every signal sent is recorded on its row;
//! an entry leaves the map only when its process is reaped (or proven gone), never because a
//! signal was sent. The event loop sleeps until [`DeadlineMap::next_deadline`] — no polling.

use crate::identity::{self, Identity, Liveness};
use crate::store::{EndReason, Store};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A process to stop: its row, its identity and its process group.
#[derive(Debug, Clone)]
pub struct Target {
    pub row_id: i64,
    pub identity: Identity,
    pub pgid: i32,
}

#[derive(Debug)]
struct Entry {
    target: Target,
    deadline: Instant,
    killed: bool,
    reason: EndReason,
}

#[derive(Debug, Default)]
pub struct DeadlineMap {
    entries: BTreeMap<i64, Entry>,
}

/// Sends `signal` to the process group of `target` if its leader is still the recorded process,
/// and records the signal on the row. Returns whether it was sent.
pub fn signal_checked(store: &mut Store, target: &Target, signal: Signal) -> bool {
    let liveness = identity::check(&target.identity);
    if liveness != Liveness::Alive {
        log::debug!(
            "row {}: not sending {signal} to pid {}: {liveness:?}",
            target.row_id,
            target.identity.pid
        );
        return false;
    }
    match killpg(Pid::from_raw(target.pgid), signal) {
        Ok(()) => {
            if let Err(err) = store.record_signal(target.row_id, signal) {
                log::error!("row {}: cannot record {signal}: {err}", target.row_id);
            }
            true
        }
        Err(err) => {
            log::debug!(
                "row {}: {signal} to group {}: {err}",
                target.row_id,
                target.pgid
            );
            false
        }
    }
}

impl DeadlineMap {
    /// Sends SIGTERM to `target` now and schedules SIGKILL `grace` from now. A target already in
    /// the map keeps its earlier deadline.
    pub fn begin(&mut self, store: &mut Store, target: Target, grace: Duration, reason: EndReason) {
        if self.entries.contains_key(&target.row_id) {
            return;
        }
        signal_checked(store, &target, Signal::SIGTERM);
        self.entries.insert(
            target.row_id,
            Entry {
                target,
                deadline: Instant::now() + grace,
                killed: false,
                reason,
            },
        );
    }

    /// The earliest deadline whose SIGKILL is still to be sent.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.entries
            .values()
            .filter(|e| !e.killed)
            .map(|e| e.deadline)
            .min()
    }

    /// Sends SIGKILL to every target whose deadline is at or before `now`.
    pub fn expire(&mut self, store: &mut Store, now: Instant) {
        for entry in self.entries.values_mut() {
            if !entry.killed && entry.deadline <= now {
                entry.killed = true;
                signal_checked(store, &entry.target, Signal::SIGKILL);
            }
        }
    }

    /// Moves every deadline to now (a second request to stop escalates to SIGKILL at once).
    pub fn hurry(&mut self, store: &mut Store) {
        let now = Instant::now();
        for entry in self.entries.values_mut() {
            entry.deadline = entry.deadline.min(now);
        }
        self.expire(store, now);
    }

    /// Takes the row out of the map once its process is reaped; returns the end reason the
    /// teardown gives it, or `None` if it was not being torn down.
    pub fn finished(&mut self, row_id: i64) -> Option<EndReason> {
        self.entries.remove(&row_id).map(|e| e.reason)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
