//! The child registry: every process this supervisor spawned and has not reaped yet, with its
//! deadline, and the stops that wait until a child is old enough to be signalled.
//!
//! Invariant: a child is here from the moment it is spawned until its reaper removes it, so
//! "is this pid mine to reap" and "is row R a child still waited for" are answered here and only
//! here. Nothing in this file does I/O.

use super::decide::StopAt;
use super::ChildPolicy;
use super::Owner;
use crate::cgroup::Cgroup;
use crate::domain::EndReason;
use crate::identity::{Identity, PidRef};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

pub(super) struct Child<O> {
    pub row_id: i64,
    /// Who started it, and handles its exit.
    pub owner: O,
    /// When it must be stopped for running too long (taken once it passed).
    pub deadline: Option<Instant>,
    pub policy: ChildPolicy,
    /// Descendants recorded so far, by pid.
    pub descendants: HashMap<i32, Descendant>,
    /// Its stdout and stderr log files.
    pub logs: (PathBuf, PathBuf),
    pub started: Instant,
    /// Its row's cgroup, under cgroup containment: its descendants are the processes in it.
    pub cgroup: Option<Cgroup>,
}

/// A descendant recorded as a `child` row, with the handle it was pinned by when it was found
/// (kept while its row is live: it tells when the process ended, whatever its pid means since).
pub(super) struct Descendant {
    pub row: i64,
    pub identity: Identity,
    pub pinned: PidRef,
    /// It was seen re-parented to this supervising process: it left its hook's process tree.
    pub escaped: bool,
}

/// A stop of a child too young to be signalled yet.
#[derive(Debug, Clone, Copy)]
struct DelayedStop {
    at: Instant,
    row: i64,
    reason: EndReason,
}

pub(super) struct Children<O> {
    by_pid: HashMap<i32, Child<O>>,
    delayed_stops: Vec<DelayedStop>,
}

impl<O> Default for Children<O> {
    fn default() -> Self {
        Children {
            by_pid: HashMap::new(),
            delayed_stops: Vec::new(),
        }
    }
}

impl<O: Owner> Children<O> {
    pub fn insert(&mut self, pid: i32, child: Child<O>) {
        self.by_pid.insert(pid, child);
    }

    /// Takes a reaped child out of the registry (`None`: not one of ours).
    pub fn remove(&mut self, pid: i32) -> Option<Child<O>> {
        self.by_pid.remove(&pid)
    }

    /// The stdout and stderr log files of child `pid`.
    pub fn logs_of(&self, pid: i32) -> Option<&(PathBuf, PathBuf)> {
        self.by_pid.get(&pid).map(|c| &c.logs)
    }

    /// The row of child `pid`.
    pub fn row_of(&self, pid: i32) -> Option<i64> {
        self.by_pid.get(&pid).map(|c| c.row_id)
    }

    /// The cgroup of child `pid`, under cgroup containment.
    pub fn cgroup_of(&self, pid: i32) -> Option<&Cgroup> {
        self.by_pid.get(&pid).and_then(|c| c.cgroup.as_ref())
    }

    pub fn get_mut(&mut self, pid: i32) -> Option<&mut Child<O>> {
        self.by_pid.get_mut(&pid)
    }

    pub fn is_empty(&self) -> bool {
        self.by_pid.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_pid.len()
    }

    /// Whether `pid` is one of the children spawned here.
    pub fn has_pid(&self, pid: i32) -> bool {
        self.by_pid.contains_key(&pid)
    }

    /// Whether row `row` is a child still waited for (its end comes from the reaper).
    pub fn has_row(&self, row: i64) -> bool {
        self.by_pid.values().any(|c| c.row_id == row)
    }

    /// Who owns the child of row `row`, if it is a child still waited for.
    pub fn owner_of_row(&self, row: i64) -> Option<O> {
        self.by_pid
            .values()
            .find(|c| c.row_id == row)
            .map(|c| c.owner)
    }

    /// The rows of the children still waited for.
    pub fn rows(&self) -> Vec<i64> {
        self.by_pid.values().map(|c| c.row_id).collect()
    }

    /// The pids of children whose descendants are scanned.
    pub fn scanned(&self) -> Vec<i32> {
        self.by_pid
            .iter()
            .filter(|(_, c)| c.policy.scan_descendants)
            .map(|(pid, _)| *pid)
            .collect()
    }

    /// Every child as (row, started), the roots of a final teardown.
    pub fn roots(&self) -> Vec<(i64, Instant)> {
        self.by_pid
            .values()
            .map(|c| (c.row_id, c.started))
            .collect()
    }

    /// The earliest deadline or delayed stop.
    pub fn next_deadline(&self) -> Option<Instant> {
        let deadlines = self.by_pid.values().filter_map(|c| c.deadline);
        let stops = self.delayed_stops.iter().map(|s| s.at);
        deadlines.chain(stops).min()
    }

    /// The rows of children whose deadline has passed; each is reported once.
    pub fn take_overdue(&mut self, now: Instant) -> Vec<i64> {
        self.by_pid
            .values_mut()
            .filter(|c| c.deadline.is_some_and(|d| d <= now))
            .map(|c| {
                c.deadline = None;
                c.row_id
            })
            .collect()
    }

    /// Keeps a stop that must wait (`stop.not_before` is set).
    pub fn delay(&mut self, stop: StopAt, reason: EndReason) {
        if let Some(at) = stop.not_before {
            self.delayed_stops.push(DelayedStop {
                at,
                row: stop.row,
                reason,
            });
        }
    }

    /// The delayed stops that are due, of children still here.
    pub fn take_due_stops(&mut self, now: Instant) -> Vec<(i64, EndReason)> {
        let (due, later): (Vec<DelayedStop>, Vec<DelayedStop>) =
            self.delayed_stops.iter().partition(|s| s.at <= now);
        self.delayed_stops = later;
        due.into_iter()
            .filter(|s| self.has_row(s.row))
            .map(|s| (s.row, s.reason))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn child(
        row_id: i64,
        deadline: Option<Instant>,
        started: Instant,
    ) -> Child<crate::supervisor::SnapshotWorkerChild> {
        Child {
            row_id,
            owner: crate::supervisor::SnapshotWorkerChild::Hooks,
            deadline,
            policy: ChildPolicy::FOREGROUND_HOOK,
            descendants: HashMap::new(),
            logs: Default::default(),
            started,
            cgroup: None,
        }
    }

    #[test]
    fn a_passed_deadline_is_reported_once() {
        let now = Instant::now();
        let mut children = Children::default();
        children.insert(1, child(10, Some(now - Duration::from_millis(1)), now));
        children.insert(2, child(20, Some(now + Duration::from_secs(5)), now));
        children.insert(3, child(30, None, now));
        assert_eq!(children.take_overdue(now), vec![10]);
        assert_eq!(children.take_overdue(now), Vec::<i64>::new());
        assert_eq!(children.next_deadline(), Some(now + Duration::from_secs(5)));
    }

    #[test]
    fn a_delayed_stop_is_due_only_for_a_child_still_here() {
        let now = Instant::now();
        let mut children = Children::default();
        children.insert(1, child(10, None, now));
        children.insert(2, child(20, None, now));
        let at = now + Duration::from_millis(100);
        for row in [10, 20] {
            let stop = StopAt {
                row,
                not_before: Some(at),
            };
            children.delay(stop, EndReason::Killed);
        }
        assert_eq!(children.next_deadline(), Some(at));
        assert!(children.take_due_stops(now).is_empty());
        children.remove(2);
        assert_eq!(children.take_due_stops(at), vec![(10, EndReason::Killed)]);
        assert_eq!(children.next_deadline(), None);
    }
}
