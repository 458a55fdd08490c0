//! Reaping: every child that ended has its row made final here, with the status its reaper saw,
//! before the caller hears of it — also a descendant re-parented to this process (a subreaper),
//! whatever its kind. The ends reaped in one turn of the loop are written in one transaction; an
//! end that is not written (refused, or its commit failed) is kept with its status and written
//! later (`unrecorded`): a failed batch loses no end.

use super::unrecorded::End;
use super::Owner;
use super::{decide, Event, Supervisor};
use crate::domain::{EndReason, ExitOutcome};
use crate::reaper;
use crate::store::{now_ms, Store};
use std::time::Instant;

impl<O: Owner> Supervisor<O> {
    /// For the last moment before this process exits, its loop ended: writes what the outbox
    /// kept and the ends a failed write left unrecorded, each waiting for another process's
    /// lock as a command does (SQLite's own wait, up to `store::busy::PATIENT`) — and, while the
    /// database is out of reach (a server restarting), trying again for as long. What is still
    /// not written then — the database is not writable — is left to the daemon's own pass.
    pub fn settle_before_exit(&mut self, store: &Store) {
        if let Err(err) = store.set_patience(crate::store::Patience::Patient) {
            log::warn!("cannot wait for the database's lock: {err}");
        }
        let give_up_at = Instant::now() + crate::store::PATIENT;
        loop {
            store.outbox().write_kept();
            let settled = self.unrecorded.settle_now(store, |_| false);
            if settled && store.outbox().is_empty() {
                return;
            }
            // (Only the lock, or a server out of reach, is waited for: a write that failed
            // otherwise — a full disk, a database gone — would fail again.)
            let waiting_helps = store.outbox().held_back();
            if !waiting_helps || Instant::now() >= give_up_at {
                log::error!("exiting with ends still unrecorded: the database is not writable");
                return;
            }
            // (Waited on the loop's poll, not slept: a signal still ends the wait.)
            let retry = crate::store::RETRY_AFTER_FAILURE;
            let wait = store
                .outbox()
                .next_try()
                .saturating_duration_since(Instant::now());
            let _ = self.poll.poll(&mut self.events, Some(wait.max(retry)));
        }
    }

    /// Reaps whatever has ended now, without waiting: for the last moment before this process
    /// exits, so that nothing re-parented to it goes unrecorded.
    pub fn reap_now(&mut self, store: &Store) -> Vec<Event<O>> {
        let mut out = Vec::new();
        self.reap(store, &mut out);
        self.write_held(store);
        out
    }

    /// Reaps every child that has ended. Their ends are written first, all in one transaction
    /// (one commit per turn of the loop, however many processes a teardown ends at once); an
    /// end that is not written — refused, or its commit failed — is kept with its status and
    /// written later (`unrecorded`); torn down from above, ends are held to be written with
    /// others (`above`). Then what each leaves is settled.
    pub(super) fn reap(&mut self, store: &Store, out: &mut Vec<Event<O>>) {
        let reaped = reaper::reap_ready();
        if reaped.is_empty() {
            return;
        }
        let ends = self.record_reaped(store, &reaped);
        let mut scope_ended = false;
        for (reaped, end) in reaped.into_iter().zip(ends) {
            if reaped.outcome != ExitOutcome::Code(0) {
                // A supervisor that failed may have left ends unwritten: look again soon.
                self.unrecorded.look_again(Instant::now());
            }
            self.teardown.on_reaped(store, reaped.pid);
            let Some(child) = self.children.remove(reaped.pid) else {
                continue;
            };
            let row_id = child.row_id;
            let reason = end.map_or(EndReason::Exited, |end| end.reason);
            log::debug!(
                "row {row_id} (pid {}) ended: {}",
                reaped.pid,
                reaped.outcome
            );
            if child.policy.scan_descendants {
                for log in [&child.logs.0, &child.logs.1] {
                    super::log_cap::cap_log(log, self.timing.max_log_bytes);
                }
            }
            // A worker's end is the end of its scope: what escaped from it is ours now.
            scope_ended |= child.policy == super::ChildPolicy::WORKER;
            let leaked = self.settle_leftovers(store, &child);
            if let Some(cgroup) = child.cgroup.as_ref().filter(|_| !leaked) {
                cgroup.remove();
            }
            out.push(Event::Exited {
                row_id,
                owner: child.owner,
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

    /// The end to write for a process reaped here: its row (a child's, or — re-parented here —
    /// a descendant's live row, if it has one) and why it ended.
    fn end_of(&self, store: &Store, reaped: &reaper::Reaped, at: i64) -> Option<End> {
        let (row, detail, reason) = match self.children.row_of(reaped.pid) {
            Some(row) => {
                let teardown_reason = self.teardown.reason_for(row);
                let signalled_by_others = || {
                    matches!(store.processes().get(row), Ok(Some(r))
                        if r.sigterm_at.is_some() || r.sigkill_at.is_some())
                };
                let reason = decide::reason_for_reaped(
                    teardown_reason,
                    teardown_reason.is_none() && signalled_by_others(),
                );
                (row, None, reason)
            }
            None => {
                // (A teardown's member knows its row: most processes re-parented here are.)
                let (row, reason) = match self.teardown.member_row(reaped.pid) {
                    Some(known) => known,
                    None => {
                        let Ok(Some(row)) = store.processes().live_row_by_pid(reaped.pid) else {
                            log::debug!("reaped pid {} (re-parented, not recorded)", reaped.pid);
                            return None;
                        };
                        let reason = self.teardown.reason_for(row.id);
                        (row.id, reason.unwrap_or(EndReason::Exited))
                    }
                };
                let detail = "re-parented to its supervisor, which reaped it";
                (row, Some(detail), reason)
            }
        };
        // (Read now: its cgroup is removed once its end is recorded.)
        let usage = self
            .children
            .cgroup_of(reaped.pid)
            .map(crate::cgroup::Cgroup::usage);
        Some(End {
            row,
            outcome: reaped.outcome,
            reason,
            detail,
            at,
            usage,
            late: false,
        })
    }

    /// Writes the ends of processes reaped here in one transaction; what is not written is kept
    /// to write later. Returns each one's end (none for a process without a live row).
    pub(super) fn record_reaped(
        &mut self,
        store: &Store,
        reaped: &[reaper::Reaped],
    ) -> Vec<Option<End>> {
        let at = now_ms();
        for logs in reaped.iter().filter_map(|r| self.children.logs_of(r.pid)) {
            sync_logs(logs);
        }
        let ends: Vec<Option<End>> = reaped.iter().map(|r| self.end_of(store, r, at)).collect();
        let children_reaped = reaped
            .iter()
            .filter(|r| self.children.has_pid(r.pid))
            .count();
        let children_left = self.children.len() > children_reaped;
        let to_write = self.ends_to_write(ends.iter().flatten().copied().collect(), children_left);
        self.write_ends(store, &to_write);
        ends
    }

    /// Writes `ends` in one transaction; what is not written is kept to write later, as is the
    /// end of a row whose start waits to be written (after it).
    pub(super) fn write_ends(&mut self, store: &Store, ends: &[End]) {
        let (after_start, ends): (Vec<End>, Vec<End>) = ends
            .iter()
            .partition(|end| self.unrecorded.start_waits(end.row));
        for end in after_start {
            self.unrecorded.end_failed(end, true);
        }
        let ends = ends.as_slice();
        if ends.is_empty() {
            return;
        }
        let written = store.all_or_nothing(|store| {
            let mut results = Vec::with_capacity(ends.len());
            for end in ends {
                match end.write(store, false) {
                    // (Refused for the whole turn: the lock is someone else's.)
                    Err(err) if err.is_busy() => return Err(err),
                    result => results.push(result),
                }
            }
            Ok(results)
        });
        match written {
            Ok(results) => {
                for (end, result) in ends.iter().zip(results) {
                    if let Err(err) = result {
                        log::warn!("row {}: its end is written later: {err}", end.row);
                        self.unrecorded.end_failed(*end, false);
                    }
                }
            }
            Err(err) => {
                // (One line for the turn: a busy database refuses them all at once — in a
                // moment, as a matter of course.)
                let rows: Vec<String> = ends.iter().map(|end| end.row.to_string()).collect();
                let level = match err.is_busy() {
                    true => log::Level::Debug,
                    false => log::Level::Warn,
                };
                log::log!(
                    level,
                    "the ends of rows {} are written later: {err}",
                    rows.join(", ")
                );
                for end in ends {
                    self.unrecorded.end_failed(*end, err.is_busy());
                }
            }
        }
    }

    /// A child of ours that survived SIGKILL (unkillable, flagged on its row by the teardown) is
    /// given up on: reported as ended by SIGKILL so that its scope goes on, though its row stays
    /// live; when it finally ends, it is reaped as an unknown child and its row made final then.
    pub(super) fn give_up_unkillable(
        &mut self,
        report: &crate::teardown::Report,
        out: &mut Vec<Event<O>>,
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
                owner: child.owner,
                pid: process.pid,
                outcome: ExitOutcome::Signal(crate::signal::Signal::KILL.as_raw()),
                reason: EndReason::Killed,
                leaked: false,
            });
        }
    }
}

/// Puts what a reaped child printed on disk before its end is recorded: a run whose end survives
/// a power cut then has its output too, so the next worker that takes the run over from its
/// row's end (`hooks::unrecorded`) reads what it printed, not an empty file.
fn sync_logs((stdout, stderr): &(std::path::PathBuf, std::path::PathBuf)) {
    for path in [stdout, stderr] {
        if let Err(err) = std::fs::File::open(path).and_then(|file| file.sync_data()) {
            log::debug!("cannot sync {}: {err}", path.display());
        }
    }
}
