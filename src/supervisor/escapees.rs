//! Escapees: what left a hook's tree and was re-parented to this process (a subreaper) — adopted
//! as an escaped `child` row and torn down once its scope ended.
//!
//! Invariants: an unknown child still marked as one of this process's live children only
//! double-forked: it is that child's (recorded below it, settled when it ends), never an
//! escapee; every other unknown child is adopted once and torn down with its own descendants; a
//! worker ends only when two sweeps in a row find nothing (a fork treadmill hands up a new
//! generation at every exit).

use super::Owner;
use super::Supervisor;
use crate::domain::{EndReason, Kind};
use crate::marker;
use crate::proctree;
use crate::signal::Signal;
use crate::store::Store;
impl<O: Owner> Supervisor<O> {
    /// Adopts this process's unknown children: whatever left a hook's tree (cleared its marker,
    /// changed its session) and was re-parented here, this process being a subreaper. Each gets
    /// a `child` row — the one a scan recorded below its hook, else a new one below this
    /// process's own row — flagged escaped; except one still marked as a live child's, which
    /// only double-forked: it is recorded below that child and left to it. Returns the rows of
    /// the escaped unknown children alive now.
    /// Called at every descendant scan, so an escapee has its row while its scope still runs.
    pub(super) fn adopt_unknown_children(&mut self, store: &Store) -> Vec<i64> {
        let Some(own_row) = self.own_row else {
            return Vec::new();
        };
        let me = std::process::id() as i32;
        let unknown: Vec<i32> = proctree::children_of(me)
            .into_iter()
            .filter(|&pid| !self.children.has_pid(pid) && !self.teardown.has_member(pid))
            .collect();
        // Double-forked away but still marked as a live child's (a browser's crash handler,
        // a daemonizing helper): no escape, but that child's, recorded below it and settled
        // when it ends (`settle_leftovers` counts it by marker).
        let still_marked = marker::marked_among(&self.instance, &unknown, &self.children.rows());
        let owner_of = |pid: i32| {
            still_marked
                .iter()
                .find(|(_, found)| found.iter().any(|f| f.identity.pid == pid))
                .map(|(row, _)| *row)
        };
        let mut rows = Vec::new();
        for pid in unknown {
            // (A zombie is reaped, and recorded, on this turn of the loop.)
            let Some((found, _)) = proctree::pin(pid) else {
                continue;
            };
            let known = match store.processes().live_row_by_pid(pid) {
                Ok(Some(row))
                    if row
                        .identity
                        .as_ref()
                        .is_some_and(|id| id.same_process(&found.identity)) =>
                {
                    Some(row)
                }
                _ => None,
            };
            if let Some(owner) = owner_of(pid) {
                if known.is_none() {
                    let found = found.clone();
                    store.outbox().write(
                        format!("the row of pid {pid} below row {owner}"),
                        move |store| store.processes().record_descendant(owner, &found).map(drop),
                    );
                }
                continue;
            }
            // Unkillable: torn down already, waited for no more (reaped when it ends).
            if known.as_ref().is_some_and(|row| row.unkillable) {
                continue;
            }
            // Flagged already, or a hook or worker orphaned by its parent's death (not an
            // escape: it is torn down, not flagged).
            if let Some(row) = known
                .as_ref()
                .filter(|r| r.escaped || r.kind != Kind::Child)
            {
                rows.push(row.id);
                continue;
            }
            // Under cgroup containment its cgroup names the row it belongs to.
            let parent = crate::cgroup::row_of_process(pid).unwrap_or(own_row);
            let row = match known {
                Some(row) => Ok(row.id),
                None => store.processes().record_descendant(parent, &found),
            };
            let row = match row {
                Ok(row) => row,
                Err(err) => {
                    log::error!("cannot record escaped pid {pid}: {err}");
                    continue;
                }
            };
            crate::teardown::flag_escaped(store, row);
            log::warn!(
                "pid {pid} ({}) escaped its hook's tree: adopted as row {row}",
                found.argv.join(" ")
            );
            rows.push(row);
        }
        rows
    }

    /// Adopts this process's unknown children (see `adopt_unknown_children`) and tears each down
    /// (SIGTERM, `min_grace`, SIGKILL) with its own descendants. Returns how many.
    pub(super) fn sweep_escapees(&mut self, store: &Store) -> usize {
        // (Torn down from above: what is re-parented here is a member of that teardown, which
        // finds it wherever it goes next.)
        if self.covered_from_above() {
            return 0;
        }
        let rows = self.adopt_unknown_children(store);
        let grace = self.timing.min_grace;
        for &row in &rows {
            self.stop(store, row, Signal::TERM, grace, EndReason::Killed);
        }
        rows.len()
    }
}

impl<O: Owner> Supervisor<O> {
    /// Whether nothing that escaped is left below this process: two sweeps in a row adopt
    /// nothing and find no unknown child that ended between them. A fork-and-exit treadmill
    /// hands a new generation up at every exit; one empty look would miss the one in flight.
    /// An unknown child that ended is reaped (and its row, if any, made final) here.
    pub fn escapees_settled(&mut self, store: &Store) -> bool {
        for _ in 0..2 {
            if self.sweep_escapees(store) > 0 || self.reap_unknown_ended(store) > 0 {
                return false;
            }
        }
        true
    }

    /// Reaps the children of this process that ended and are neither its spawned children nor
    /// members of a teardown (those are reaped by the loop, which reports them). Returns how many.
    fn reap_unknown_ended(&mut self, store: &Store) -> usize {
        let me = std::process::id() as i32;
        let reaped: Vec<crate::reaper::Reaped> = proctree::children_of(me)
            .into_iter()
            .filter(|&pid| !self.children.has_pid(pid) && proctree::zombie_parent(pid) == Some(me))
            .filter_map(crate::reaper::reap_one)
            .collect();
        self.record_reaped(store, &reaped);
        for ended in &reaped {
            self.teardown.on_reaped(store, ended.pid);
        }
        reaped.len()
    }
}
