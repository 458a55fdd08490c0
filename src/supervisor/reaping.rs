//! Reaping: every child that ended has its row made final here, with the status its reaper saw,
//! before the caller hears of it — also a descendant re-parented to this process (a subreaper),
//! whatever its kind. An end that cannot be written is kept and written later (`unrecorded`).

use super::{decide, Event, Supervisor, UNRECORDED_RETRY};
use crate::liveness;
use crate::reaper;
use crate::store::{now_ms, EndReason, ExitOutcome, Store};
use std::time::{Duration, Instant};

impl Supervisor {
    /// For the last moment before this process exits: writes the ends a failed write left
    /// unrecorded, retrying while writes fail, for at most `patience` (after which the daemon's
    /// own pass settles them).
    pub fn settle_before_exit(&mut self, store: &mut Store, patience: Duration) {
        let give_up = Instant::now() + patience;
        while !self.unrecorded.settle_now(store, |_| false) {
            if Instant::now() >= give_up {
                log::error!("exiting with ends still unrecorded: the database is not writable");
                return;
            }
            std::thread::sleep(UNRECORDED_RETRY);
        }
    }

    /// Reaps whatever has ended now, without waiting: for the last moment before this process
    /// exits, so that nothing re-parented to it goes unrecorded.
    pub fn reap_now(&mut self, store: &mut Store) -> Vec<Event> {
        let mut out = Vec::new();
        self.reap(store, &mut out);
        out
    }

    pub(super) fn reap(&mut self, store: &mut Store, out: &mut Vec<Event>) {
        let mut scope_ended = false;
        for reaped in reaper::reap_ready() {
            if reaped.outcome != ExitOutcome::Code(0) {
                // A supervisor that failed may have left ends unwritten: look again soon.
                self.unrecorded.look_again(Instant::now());
            }
            let Some(child) = self.children.remove(reaped.pid) else {
                self.reaped_descendant(store, reaped.pid, reaped.outcome);
                self.teardown.on_reaped(store, reaped.pid);
                continue;
            };
            let row_id = child.row_id;
            let signalled_by_others = || {
                matches!(store.process(row_id), Ok(Some(row))
                    if row.sigterm_at.is_some() || row.sigkill_at.is_some())
            };
            let teardown_reason = self.teardown.reason_for(row_id);
            let reason = decide::reason_for_reaped(
                teardown_reason,
                teardown_reason.is_none() && signalled_by_others(),
            );
            log::debug!(
                "row {row_id} (pid {}) ended: {}",
                reaped.pid,
                reaped.outcome
            );
            let at = now_ms();
            if let Err(err) =
                liveness::finish_reaped(store, row_id, reaped.outcome, reason, None, at)
            {
                log::warn!("row {row_id}: its end is written later: {err}");
                self.unrecorded
                    .end_failed(row_id, reaped.outcome, reason, at);
            }
            self.teardown.on_reaped(store, reaped.pid);
            if child.policy.scan_descendants {
                for log in [&child.logs.0, &child.logs.1] {
                    super::descendants::cap_log(log, self.timing.max_log_bytes);
                }
            }
            if let Some(cgroup) = &child.cgroup {
                record_usage(store, row_id, cgroup);
            }
            // A worker's end is the end of its scope: what escaped from it is ours now.
            scope_ended |= child.policy == super::ChildPolicy::WORKER;
            let leaked = self.settle_leftovers(store, &child);
            if let Some(cgroup) = child.cgroup.as_ref().filter(|_| !leaked) {
                cgroup.remove();
            }
            out.push(Event::Exited {
                row_id,
                pid: reaped.pid,
                outcome: reaped.outcome,
                reason,
                leaked,
            });
        }
        if scope_ended {
            // Re-parented here when the worker died (before it could sweep them): torn down
            // at once (SIGTERM, min_grace, SIGKILL).
            self.sweep_escapees(store);
        }
    }

    /// A child of ours that survived SIGKILL (unkillable, flagged on its row by the teardown) is
    /// given up on: reported as ended by SIGKILL so that its scope goes on, though its row stays
    /// live; when it finally ends, it is reaped as an unknown child and its row made final then.
    pub(super) fn give_up_unkillable(
        &mut self,
        report: &crate::teardown::Report,
        out: &mut Vec<Event>,
    ) {
        for process in &report.processes {
            if !matches!(process.fate, crate::teardown::Fate::Survived { .. }) {
                continue;
            }
            let Some(child) = self.children.remove(process.pid) else {
                continue;
            };
            log::error!(
                "row {} (pid {}) is unkillable: its scope goes on without it",
                child.row_id,
                process.pid
            );
            out.push(Event::Exited {
                row_id: child.row_id,
                pid: process.pid,
                outcome: ExitOutcome::Signal(crate::signal::Signal::KILL.as_raw()),
                reason: EndReason::Killed,
                leaked: false,
            });
        }
    }

    /// A process re-parented to us (we are a subreaper: its parent died first) ended: we are the
    /// only one who can know its status, so record it on its row, whatever its kind.
    pub(super) fn reaped_descendant(&mut self, store: &mut Store, pid: i32, outcome: ExitOutcome) {
        match store.live_row_by_pid(pid) {
            Ok(Some(row)) => {
                let reason = self
                    .teardown
                    .reason_for(row.id)
                    .unwrap_or(EndReason::Exited);
                let detail = "re-parented to its supervisor, which reaped it";
                let at = now_ms();
                if let Err(err) =
                    liveness::finish_reaped(store, row.id, outcome, reason, Some(detail), at)
                {
                    log::warn!("row {}: its end is written later: {err}", row.id);
                    self.unrecorded.end_failed(row.id, outcome, reason, at);
                }
            }
            _ => log::debug!("reaped pid {pid} (re-parented, not recorded)"),
        }
    }
}

/// Records what row `row_id`'s cgroup measured of it and its descendants, and notes a kill by
/// its memory limit (the hook's result says so: see `hooks::result`).
fn record_usage(store: &mut Store, row_id: i64, cgroup: &crate::cgroup::Cgroup) {
    let usage = cgroup.usage();
    if let Err(err) = store.record_usage(row_id, usage.cpu_usec, usage.memory_peak) {
        log::error!("row {row_id}: cannot record its CPU and memory use: {err}");
    }
    if usage.oom_killed {
        if let Err(err) = store.set_end_detail(row_id, crate::cgroup::MEMORY_LIMIT) {
            log::error!("row {row_id}: cannot note its memory limit kill: {err}");
        }
    }
}
