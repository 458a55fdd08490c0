//! The supervisor's decisions, as functions of its state that return what to do: what a child's
//! exit leaves to settle, which children passed their deadline, when each root of a final
//! teardown is stopped, what a descendant scan changed, what a lease renewal means. The loop in
//! `mod.rs` gathers the facts (procfs, the store) and applies the answer.
//!
//! Invariant: nothing here does I/O or reads a clock; every input is a value, so each rule is
//! tested without a process (see the tests below).

use crate::proctree::Found;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::ChildPolicy;
use crate::domain::EndReason;

/// What to do with what an exited child left running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leftovers {
    /// Nothing of it lives on.
    None,
    /// Flag it leaking and tear its subtree down now (a foreground hook, a worker).
    StopNow,
    /// Flag it leaking and tear its subtree down with everything else, when the supervisor
    /// stops all (a background hook: its descendants may still be serving the others).
    StopAtEnd,
}

impl Leftovers {
    pub fn leaked(self) -> bool {
        self != Leftovers::None
    }
}

/// A child exited and `alive` processes of its subtree live on. `ending`: the supervisor is
/// already stopping everything, so "at the end" is now (nothing would tear them down later).
pub fn after_exit(policy: ChildPolicy, alive: usize, ending: bool) -> Leftovers {
    match (alive, policy.leftovers_now || ending) {
        (0, _) => Leftovers::None,
        (_, true) => Leftovers::StopNow,
        (_, false) => Leftovers::StopAtEnd,
    }
}

/// The end reason of a reaped child: the one its teardown gives it, else `killed` if someone
/// else signalled it (e.g. `abxctl kill` through the daemon), else `exited`.
pub fn reason_for_reaped(teardown: Option<EndReason>, signalled_by_others: bool) -> EndReason {
    match (teardown, signalled_by_others) {
        (Some(reason), _) => reason,
        (None, true) => EndReason::Killed,
        (None, false) => EndReason::Exited,
    }
}

/// When one root of a final teardown ([`super::Supervisor::stop_all`]) is signalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopAt {
    pub row: i64,
    /// `None`: now; else not before then (a child too young to have set up its SIGTERM handler).
    pub not_before: Option<Instant>,
}

/// The stops of a final teardown: every child, once it is `allowance` old, and every leftover
/// at once.
pub fn stop_all(
    children: &[(i64, Instant)],
    leftovers: &[i64],
    now: Instant,
    allowance: Duration,
) -> Vec<StopAt> {
    let young = |started: Instant| Some(started + allowance).filter(|at| *at > now);
    children
        .iter()
        .map(|&(row, started)| StopAt {
            row,
            not_before: young(started),
        })
        .chain(leftovers.iter().map(|&row| StopAt {
            row,
            not_before: None,
        }))
        .collect()
}

/// What a descendant scan of one child changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DescendantChanges<'a> {
    /// Processes seen for the first time, parents before children (by start time), so a
    /// child's parent row exists when it is recorded.
    pub new: Vec<&'a Found>,
    /// Recorded descendants no longer seen: (pid, row).
    pub ended: Vec<(i32, i64)>,
}

/// Compares the descendants recorded so far (`known`, pid → row) with those `found` now.
pub fn descendant_changes<'a>(
    known: &HashMap<i32, i64>,
    found: &'a HashMap<i32, Found>,
) -> DescendantChanges<'a> {
    let mut new: Vec<&Found> = found
        .values()
        .filter(|f| !known.contains_key(&f.identity.pid))
        .collect();
    new.sort_by_key(|f| (f.identity.start_ticks, f.identity.pid));
    let mut ended: Vec<(i32, i64)> = known
        .iter()
        .filter(|(pid, _)| !found.contains_key(pid))
        .map(|(pid, row)| (*pid, *row))
        .collect();
    ended.sort();
    DescendantChanges { new, ended }
}

/// What a lease renewal's answer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseStep {
    /// Renewed: next renewal at.
    Renewed(Instant),
    /// Someone else owns the work now.
    Lost,
    /// The store failed: try again at (sooner than a normal renewal).
    Retry(Instant),
}

/// The next step after renewing a lease of `duration` at `now`: `renewed` is the store's
/// answer (`None` when the write failed).
pub fn lease_step(renewed: Option<bool>, now: Instant, duration: Duration) -> LeaseStep {
    match renewed {
        Some(true) => LeaseStep::Renewed(now + duration / 3),
        Some(false) => LeaseStep::Lost,
        None => LeaseStep::Retry(now + duration / 10),
    }
}

/// How many times `descendant_scan` the time between two scans grows to while nothing changes.
pub const SCAN_BACKOFF: u32 = 8;

/// The time until the next descendant scan: `base` after a scan that found something new or
/// gone, else twice the last, up to [`SCAN_BACKOFF`] × `base` — trees that sleep cost a scan
/// now and then, trees that change are seen at once.
pub fn next_scan_interval(last: Duration, base: Duration, changed: bool) -> Duration {
    if changed {
        base
    } else {
        (last * 2).clamp(base, base * SCAN_BACKOFF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::Identity;

    #[test]
    fn scans_back_off_while_nothing_changes_and_return_at_once_when_something_does() {
        let base = Duration::from_secs(1);
        let mut every = base;
        let mut seen = Vec::new();
        for _ in 0..6 {
            every = next_scan_interval(every, base, false);
            seen.push(every.as_secs());
        }
        assert_eq!(seen, [2, 4, 8, 8, 8, 8]);
        assert_eq!(next_scan_interval(every, base, true), base);
    }

    fn found(pid: i32, ppid: i32, start_ticks: u64) -> Found {
        Found {
            identity: Identity {
                boot_id: "b".into(),
                pid,
                start_ticks,
                pidfd_ino: None,
            },
            ppid,
            pgid: pid,
            argv: vec!["x".into()],
            state: 'S',
            uid: None,
        }
    }

    #[test]
    fn an_exit_that_leaves_nothing_settles_nothing() {
        for policy in [
            ChildPolicy::WORKER,
            ChildPolicy::FOREGROUND_HOOK,
            ChildPolicy::BACKGROUND_HOOK,
        ] {
            assert_eq!(after_exit(policy, 0, false), Leftovers::None);
            assert!(!after_exit(policy, 0, true).leaked());
        }
    }

    #[test]
    fn leftovers_of_foreground_children_go_now_of_background_ones_at_the_end() {
        let now = Leftovers::StopNow;
        assert_eq!(after_exit(ChildPolicy::WORKER, 1, false), now);
        assert_eq!(after_exit(ChildPolicy::FOREGROUND_HOOK, 3, false), now);
        let background = after_exit(ChildPolicy::BACKGROUND_HOOK, 2, false);
        assert_eq!(background, Leftovers::StopAtEnd);
        assert!(background.leaked());
        // Once everything is being stopped, nothing waits for the end any more.
        assert_eq!(after_exit(ChildPolicy::BACKGROUND_HOOK, 2, true), now);
    }

    #[test]
    fn a_reaped_childs_reason_prefers_its_teardown() {
        assert_eq!(
            reason_for_reaped(Some(EndReason::Timeout), true),
            EndReason::Timeout
        );
        assert_eq!(reason_for_reaped(None, true), EndReason::Killed);
        assert_eq!(reason_for_reaped(None, false), EndReason::Exited);
    }

    #[test]
    fn young_children_are_stopped_once_old_enough_leftovers_at_once() {
        let now = Instant::now();
        let allowance = Duration::from_millis(250);
        let old = now - Duration::from_secs(1);
        let young = now - Duration::from_millis(50);
        let stops = stop_all(&[(1, old), (2, young)], &[3], now, allowance);
        assert_eq!(
            stops,
            vec![
                StopAt {
                    row: 1,
                    not_before: None
                },
                StopAt {
                    row: 2,
                    not_before: Some(young + allowance)
                },
                StopAt {
                    row: 3,
                    not_before: None
                },
            ]
        );
    }

    #[test]
    fn a_scan_records_new_descendants_parents_first_and_ends_the_vanished() {
        let known = HashMap::from([(10, 100), (11, 101)]);
        let found = HashMap::from([
            (10, found(10, 1, 5)),
            (13, found(13, 12, 9)),
            (12, found(12, 10, 7)),
        ]);
        let changes = descendant_changes(&known, &found);
        let new: Vec<i32> = changes.new.iter().map(|f| f.identity.pid).collect();
        assert_eq!(new, vec![12, 13]);
        assert_eq!(changes.ended, vec![(11, 101)]);
    }

    #[test]
    fn a_lease_is_renewed_every_third_lost_when_taken_retried_sooner_on_errors() {
        let now = Instant::now();
        let lease = Duration::from_secs(60);
        assert_eq!(
            lease_step(Some(true), now, lease),
            LeaseStep::Renewed(now + Duration::from_secs(20))
        );
        assert_eq!(lease_step(Some(false), now, lease), LeaseStep::Lost);
        assert_eq!(
            lease_step(None, now, lease),
            LeaseStep::Retry(now + Duration::from_secs(6))
        );
    }
}
