//! Ends that could not be written. When a write fails (a full disk, an I/O error), the row it
//! meant to make final stays live although its process is gone, and nothing else would ever
//! look at it again while this incarnation runs. This module keeps the exit statuses a
//! supervisor could not record and, once any write of its store has failed, goes over its part
//! of the process table every [`RETRY`] until every end is written.
//!
//! Invariants: a row is made final here only when its process is proven gone (identity check)
//! and no live worker between it and this process's own row will record it — each supervisor
//! settles what it supervises, the daemon what dead workers left. A known exit status is
//! recorded as such; only ends nobody saw are recorded `lost`, saying why. With no failed
//! write, this costs nothing: no timer, no query.

use crate::identity::Identity;
use crate::liveness::{self, live_worker_between, parent_alive, why_gone};
use crate::marker;
use crate::spawn::{record_start, Spawned};
use crate::store::{EndReason, ExitOutcome, Store};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long after a failed write the table is gone over again.
pub const RETRY: Duration = Duration::from_secs(1);

/// What a row's end detail says when it is settled here.
const LATE: &str = "its end could not be written when it happened (database write failed)";

/// A start whose identity could not be written.
struct Start {
    row: i64,
    identity: Identity,
    logs: (PathBuf, PathBuf),
}

/// An exit status the reaper saw but could not write.
struct End {
    row: i64,
    outcome: ExitOutcome,
    reason: EndReason,
    /// When it was reaped (wall-clock ms): what the row says, however late it is written.
    at: i64,
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
        }
    }

    /// Keeps a start whose identity could not be written, to write it later (before its end).
    pub fn start_failed(&mut self, spawned: &Spawned) {
        self.starts.push(Start {
            row: spawned.row_id,
            identity: spawned.identity.clone(),
            logs: spawned.logs.clone(),
        });
    }

    /// Keeps an exit status whose write failed, to write it later.
    pub fn end_failed(&mut self, row: i64, outcome: ExitOutcome, reason: EndReason, at: i64) {
        self.ends.push(End {
            row,
            outcome,
            reason,
            at,
        });
    }

    /// Goes over the table again [`RETRY`] from now: a process below ended abnormally (a worker
    /// that failed may have left ends unwritten, with no failed write in this process).
    pub fn look_again(&mut self, now: Instant) {
        self.due.get_or_insert(now + RETRY);
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.due
    }

    /// After a turn of the loop: notices failed writes and, when due, settles what they left.
    /// `tracked` says whether a row's process is a child still waited for (its end comes from
    /// the reaper).
    pub fn after_turn(&mut self, store: &mut Store, now: Instant, tracked: impl Fn(i64) -> bool) {
        if store.failed_writes() > self.failures_seen {
            self.failures_seen = store.failed_writes();
            self.due.get_or_insert(now + RETRY);
        }
        if self.due.is_none_or(|due| due > now) {
            return;
        }
        let settled = self.settle(store, &tracked);
        self.failures_seen = store.failed_writes();
        self.due = (!settled).then(|| now + RETRY);
        if settled && self.failures_seen > 0 {
            log::info!("database writes succeed: every unrecorded end is recorded");
        }
    }

    /// Settles now if a write ever failed; returns whether everything is written.
    pub fn settle_now(&mut self, store: &mut Store, tracked: impl Fn(i64) -> bool) -> bool {
        if store.failed_writes() == 0 && self.ends.is_empty() && self.starts.is_empty() {
            return true;
        }
        self.settle(store, &tracked)
    }

    /// Writes the kept exit statuses, then the ends no one saw. Returns whether all is written
    /// (no write failed meanwhile).
    fn settle(&mut self, store: &mut Store, tracked: &impl Fn(i64) -> bool) -> bool {
        let failures_before = store.failed_writes();
        self.write_all(store, tracked) && store.failed_writes() == failures_before
    }

    fn write_all(&mut self, store: &mut Store, tracked: &impl Fn(i64) -> bool) -> bool {
        self.starts
            .retain(|start| record_start(store, start.row, &start.identity, &start.logs).is_err());
        if !self.starts.is_empty() {
            return false;
        }
        self.ends.retain(|end| {
            let late = Some(LATE);
            liveness::finish_reaped(store, end.row, end.outcome, end.reason, late, end.at).is_err()
        });
        if !self.ends.is_empty() {
            return false;
        }
        let Some(own_row) = self.own_row else {
            return true;
        };
        let Ok(rows) = store.live_subtree(own_row) else {
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
