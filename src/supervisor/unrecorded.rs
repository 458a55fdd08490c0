//! Ends that could not be written. This module keeps the starts and exit statuses a supervisor
//! could not record and writes them again — when the store's back-off ends if another process
//! held the lock, else after [`RETRY`] — a start before its end. When a write fails for another
//! reason (a full disk, an I/O error), the row it meant to make final may stay live although its
//! process is gone, and nothing else would ever look at it again while this incarnation runs: so
//! once such a write failed it also goes over its part of the process table every [`RETRY`]
//! until every end is written.
//!
//! Invariants: a row is made final here only when its process is proven gone (identity check)
//! and no live worker between it and this process's own row will record it — each supervisor
//! settles what it supervises, the daemon what dead workers left. A known exit status is
//! recorded as such; only ends nobody saw are recorded `lost`, saying why. With nothing kept
//! and no failed write, this costs nothing: no timer, no query.

use crate::cgroup::Usage;
use crate::domain::EndDetail;
use crate::domain::{EndReason, ExitOutcome};
use crate::identity::Identity;
use crate::liveness::{self, live_worker_between, parent_alive, why_gone};
use crate::marker;
use crate::spawn::{record_start, Spawned};
use crate::store::{Store, StoreError};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long after a failed write (other than a busy database) the table is gone over again.
pub const RETRY: Duration = Duration::from_secs(1);

/// What a row's end detail says when it is settled here.
const LATE: &str = "its end could not be written when it happened (database write failed)";

/// A start whose identity could not be written.
struct Start {
    row: i64,
    identity: Identity,
    logs: (PathBuf, PathBuf),
    uid: u32,
    /// Its last write failed other than for another process's lock.
    late: bool,
}

/// An exit status the reaper saw, with what the child's cgroup measured of it: written at once
/// with the turn's other ends, or kept here when that write failed.
#[derive(Debug, Clone, Copy)]
pub(super) struct End {
    pub row: i64,
    pub outcome: ExitOutcome,
    pub reason: EndReason,
    pub detail: Option<&'static str>,
    /// When it was reaped (wall-clock ms): what the row says, however late it is written.
    pub at: i64,
    /// What its cgroup measured (a child spawned into one).
    pub usage: Option<Usage>,
    /// Kept after a write failed other than for another process's lock: its row says it was
    /// written after the fact.
    pub late: bool,
}

impl End {
    /// Makes its row final with its status and usage (all or nothing inside the caller's
    /// transaction); `late`: saying that it is written after the fact.
    pub fn write(&self, store: &Store, late: bool) -> Result<(), StoreError> {
        let memory_limit;
        let detail = match (&self.usage, late) {
            (Some(usage), _) if usage.oom_killed => {
                memory_limit = EndDetail::MemoryLimit.to_string();
                Some(memory_limit.as_str())
            }
            (_, true) => Some(LATE),
            (_, false) => self.detail,
        };
        liveness::finish_reaped(store, self.row, self.outcome, self.reason, detail, self.at)?;
        if let Some(usage) = &self.usage {
            store
                .processes()
                .record_usage(self.row, usage.cpu_usec, usage.memory_peak)?;
        }
        Ok(())
    }
}

pub struct Unrecorded {
    /// The row of the process this runs in: the root of what it settles.
    own_row: Option<i64>,
    /// The marker namespace (for rows whose process was never recorded).
    instance: String,
    ends: Vec<End>,
    starts: Vec<Start>,
    /// The store's count of failed writes when last looked at.
    failures_seen: u64,
    /// When to go over the table again.
    due: Option<Instant>,
    /// When to try the starts and ends the busy database refused again.
    kept_due: Option<Instant>,
}

impl Unrecorded {
    pub fn new(own_row: Option<i64>, instance: String) -> Unrecorded {
        Unrecorded {
            own_row,
            instance,
            ends: Vec::new(),
            starts: Vec::new(),
            failures_seen: 0,
            due: None,
            kept_due: None,
        }
    }

    /// Keeps a start whose identity could not be written, to write it later (before its end).
    pub fn start_failed(&mut self, spawned: &Spawned) {
        self.starts.push(Start {
            row: spawned.row_id,
            identity: spawned.identity.clone(),
            logs: spawned.logs.clone(),
            uid: spawned.uid,
            late: false,
        });
    }

    /// Whether row `row`'s start waits to be written: its end must wait for it (a start is
    /// written only on a row still `starting`).
    pub fn start_waits(&self, row: i64) -> bool {
        self.starts.iter().any(|start| start.row == row)
    }

    /// Keeps an exit status whose write failed, to write it later: saying so on its row unless
    /// it was only refused for a while by another process's lock (`busy`).
    pub fn end_failed(&mut self, mut end: End, busy: bool) {
        end.late |= !busy;
        self.ends.push(end);
    }

    /// Goes over the table again [`RETRY`] from now: a process below ended abnormally (a worker
    /// that failed may have left ends unwritten, with no failed write in this process).
    pub fn look_again(&mut self, now: Instant) {
        self.due.get_or_insert(now + RETRY);
    }

    /// When the loop must wake for what is kept: the starts and ends the busy database refused
    /// when the store tries again, the table (and what failed otherwise) when its pass is due.
    pub fn next_deadline(&self) -> Option<Instant> {
        [self.kept_due, self.due].into_iter().flatten().min()
    }

    /// Whether a start or end is kept that only the lock held back.
    fn kept_for_the_lock(&self) -> bool {
        self.starts.iter().any(|s| !s.late) || self.ends.iter().any(|e| !e.late)
    }

    /// After a turn of the loop: notices failed writes and, when due, settles what they left.
    /// `tracked` says whether a row's process is a child still waited for (its end comes from
    /// the reaper).
    pub fn after_turn(&mut self, store: &Store, now: Instant, tracked: impl Fn(i64) -> bool) {
        if store.failed_writes() > self.failures_seen {
            self.failures_seen = store.failed_writes();
            self.due.get_or_insert(now + RETRY);
        }
        if self.due.is_some_and(|due| due <= now) {
            let settled = self.settle(store, &tracked);
            self.failures_seen = store.failed_writes();
            self.due = (!settled).then(|| now + RETRY);
            if settled && self.failures_seen > 0 {
                log::info!("database writes succeed: every unrecorded end is recorded");
            }
        } else if self.kept_due.is_some_and(|at| at <= now) {
            // (What the busy database refused, once the store may try again.)
            self.write_kept(store);
        }
        self.kept_due = match self.kept_due {
            Some(at) if at > now => Some(at),
            _ => self.kept_for_the_lock().then(|| store.outbox().next_try()),
        };
    }

    /// Settles now if a write ever failed, or something is kept or due to be gone over; returns
    /// whether everything is written (then nothing is due any more).
    pub fn settle_now(&mut self, store: &Store, tracked: impl Fn(i64) -> bool) -> bool {
        let nothing_kept = self.ends.is_empty() && self.starts.is_empty() && self.due.is_none();
        if store.failed_writes() == 0 && nothing_kept {
            return true;
        }
        let settled = self.settle(store, &tracked);
        if settled {
            self.due = None;
        }
        settled
    }

    /// Writes the kept exit statuses, then the ends no one saw. Returns whether all is written
    /// (no write failed meanwhile).
    fn settle(&mut self, store: &Store, tracked: &impl Fn(i64) -> bool) -> bool {
        let failures_before = store.failed_writes();
        self.write_all(store, tracked) && store.failed_writes() == failures_before
    }

    /// Writes the kept starts, then the kept ends; returns whether all are written. What fails
    /// again is marked `late` unless only the lock held it back.
    fn write_kept(&mut self, store: &Store) -> bool {
        self.starts.retain_mut(|start| {
            match record_start(store, start.row, &start.identity, &start.logs, start.uid) {
                Ok(()) => false,
                Err(err) => {
                    start.late = !err.is_busy();
                    true
                }
            }
        });
        if !self.starts.is_empty() {
            return false;
        }
        // (All in one transaction; should that fail, each on its own, so one end that cannot be
        // written holds up no other.)
        let ends = &self.ends;
        if store
            .all_or_nothing(|store| ends.iter().try_for_each(|end| end.write(store, end.late)))
            .is_ok()
        {
            self.ends.clear();
        }
        self.ends
            .retain_mut(|end| match end.write(store, end.late) {
                Ok(()) => false,
                Err(err) => {
                    end.late |= !err.is_busy();
                    true
                }
            });
        self.ends.is_empty()
    }

    fn write_all(&mut self, store: &Store, tracked: &impl Fn(i64) -> bool) -> bool {
        if !self.write_kept(store) {
            return false;
        }
        let Some(own_row) = self.own_row else {
            return true;
        };
        let Ok(rows) = store.processes().live_subtree(own_row) else {
            return false;
        };
        let stale: Vec<(i64, String)> = rows
            .iter()
            .filter(|row| row.id != own_row && !tracked(row.id))
            .filter_map(|row| {
                let why = match &row.identity {
                    Some(identity) => why_gone(identity)?,
                    // Being started, or started without its identity written: alive.
                    None if parent_alive(store, row)
                        || !marker::marked(&self.instance, &[row.id]).is_empty() =>
                    {
                        return None
                    }
                    None => "never started: its parent ended while starting it".to_string(),
                };
                // A zombie of an abxd supervisor is reaped, and recorded with its status, there.
                if row
                    .pid
                    .is_some_and(|pid| liveness::left_to_reaper(store, pid))
                {
                    return None;
                }
                let another_records_it = live_worker_between(store, row, own_row);
                (!another_records_it).then(|| (row.id, format!("{why}; {LATE}")))
            })
            .collect();
        if stale.is_empty() {
            return true;
        }
        log::warn!(
            "{} rows claimed processes that are gone: recording them lost",
            stale.len()
        );
        let stale: Vec<(i64, &str)> = stale.iter().map(|(id, why)| (*id, why.as_str())).collect();
        liveness::finish_lost(store, &stale).is_ok()
    }
}
