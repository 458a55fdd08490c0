//! Leaving a teardown to the supervisor above: when this process's own row is being torn down
//! by an abxd process above it (the daemon's shutdown, `abxctl kill` of a worker), that teardown
//! already holds every process below this one — pinned, recorded, signalled, with their
//! deadlines. Repeating it here would only repeat its procfs reads, records and signals; and at
//! a daemon's shutdown a hundred workers, each writing every exit as it comes, queue for the one
//! write lock far longer than the processes take to end.
//!
//! Invariants, while a teardown from above covers this process:
//! - `stop_all` starts no teardown: this loop reaps its children and records their exits (only
//!   their reaper sees their status), and stops only what it would stop anyway (a child past
//!   its own deadline, an escapee);
//! - the ends it reaps are held and written together: when no child is left to wait for, at
//!   most [`HOLD`] after the first was held, and before the SIGKILL deadline above (which may
//!   end this process too) — and whatever is held is written before this process exits;
//! - past the SIGKILL deadline above and [`MARGIN`] (the one above died before finishing: kill
//!   -9 of the daemon), whatever is left is killed here, so nothing runs on for its account.

use super::unrecorded::End;
use super::Owner;
use super::Supervisor;
use crate::domain::EndReason;
use crate::liveness::Recording;
use crate::signal::Signal;
use crate::store::Store;
use crate::teardown;
use std::time::{Duration, Instant};

/// How long past the SIGKILL deadline above this supervisor waits for the tree to be gone
/// before it tears down what is left itself.
pub const MARGIN: Duration = Duration::from_secs(1);

/// The longest an end reaped here waits to be written with others.
pub const HOLD: Duration = Duration::from_millis(50);

/// A teardown from above that covers this process, and the ends held meanwhile.
pub(super) struct Above {
    /// When SIGKILL is due to this process's row.
    kill_due: Instant,
    held: Vec<End>,
    /// When the held ends must be written.
    write_by: Option<Instant>,
}

impl Above {
    /// Holds `ends` if `children_left` and there is time; else returns them with those held.
    fn hold_or_release(&mut self, ends: Vec<End>, children_left: bool, now: Instant) -> Vec<End> {
        let write_by = *self.write_by.get_or_insert_with(|| {
            (now + HOLD).min(self.kill_due.checked_sub(HOLD).unwrap_or(now))
        });
        self.held.extend(ends);
        if children_left && now < write_by {
            return Vec::new();
        }
        self.write_by = None;
        std::mem::take(&mut self.held)
    }

    fn take_over_at(&self) -> Instant {
        self.kill_due + MARGIN
    }
}

impl<O: Owner> Supervisor<O> {
    /// This process's own row is being torn down from above, SIGKILL due at `kill_due`: from
    /// now on this supervisor ends, but signals nothing of its own accord until then (and
    /// [`MARGIN`]).
    pub fn leave_teardown_above(&mut self, kill_due: Instant) {
        self.ending = true;
        self.above = Some(Above {
            kill_due,
            held: Vec::new(),
            write_by: None,
        });
    }

    /// Whether a teardown from above covers what `stop_all` would tear down now.
    pub(super) fn covered_from_above(&self) -> bool {
        self.above.is_some()
    }

    /// When this loop must act for the teardown above: write what it holds, or take over.
    pub(super) fn above_deadline(&self) -> Option<Instant> {
        let above = self.above.as_ref()?;
        Some(
            above
                .write_by
                .map_or(above.take_over_at(), |at| at.min(above.take_over_at())),
        )
    }

    /// The ends to write now of `ends` just reaped (`children_left`: some child is still waited
    /// for): all of them, or — covered from above — none until they are due, then those held
    /// with them.
    pub(super) fn ends_to_write(&mut self, ends: Vec<End>, children_left: bool) -> Vec<End> {
        match &mut self.above {
            Some(above) => above.hold_or_release(ends, children_left, Instant::now()),
            None => ends,
        }
    }

    /// After a turn: writes the held ends that are due, and past the time given to the
    /// teardown above, tears down here what is left.
    pub(super) fn after_turn_above(&mut self, store: &Store, now: Instant) {
        let Some(above) = &mut self.above else {
            return;
        };
        if above.write_by.is_some_and(|at| at <= now) {
            let due = above.hold_or_release(Vec::new(), false, now);
            self.write_ends(store, &due);
        }
        if self.above.as_ref().is_some_and(|a| a.take_over_at() <= now) {
            self.take_over_from_above(store);
        }
    }

    /// Writes whatever is held (before this process exits).
    pub(super) fn write_held(&mut self, store: &Store) {
        if let Some(above) = &mut self.above {
            let held = above.hold_or_release(Vec::new(), false, Instant::now());
            self.write_ends(store, &held);
        }
    }

    /// Past the time given to the teardown above: what is left is killed here — its SIGTERM
    /// went out from above and its deadline has passed.
    fn take_over_from_above(&mut self, store: &Store) {
        self.write_held(store);
        self.above = None;
        let requests: Vec<teardown::Request> = self
            .children
            .roots()
            .into_iter()
            .filter(|(row, _)| !self.teardown.is_tearing_down(*row))
            .map(|(root_row, _)| teardown::Request {
                root_row,
                signal: Signal::KILL,
                grace: Duration::ZERO,
                own_deadlines: false,
                reason: EndReason::Killed,
                recording: Recording::ChildRows,
            })
            .collect();
        if !requests.is_empty() {
            log::warn!(
                "the teardown from above did not end every process below this one by its \
                 deadline: killing them here"
            );
            self.begin_teardowns(store, requests);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ExitOutcome;

    fn end(row: i64) -> End {
        End {
            row,
            outcome: ExitOutcome::Code(0),
            reason: EndReason::Killed,
            detail: None,
            at: 0,
            usage: None,
            late: false,
        }
    }

    fn covering(kill_due: Instant) -> Above {
        Above {
            kill_due,
            held: Vec::new(),
            write_by: None,
        }
    }

    fn rows(ends: &[End]) -> Vec<i64> {
        ends.iter().map(|e| e.row).collect()
    }

    #[test]
    fn ends_are_held_while_children_are_left_and_written_together_with_the_last() {
        let now = Instant::now();
        let mut above = covering(now + Duration::from_secs(10));
        assert!(above.hold_or_release(vec![end(1)], true, now).is_empty());
        assert!(above.hold_or_release(vec![end(2)], true, now).is_empty());
        let written = above.hold_or_release(vec![end(3)], false, now);
        assert_eq!(rows(&written), [1, 2, 3]);
        assert!(above.held.is_empty() && above.write_by.is_none());
    }

    #[test]
    fn held_ends_are_written_at_most_hold_after_the_first() {
        let now = Instant::now();
        let mut above = covering(now + Duration::from_secs(10));
        assert!(above.hold_or_release(vec![end(1)], true, now).is_empty());
        assert_eq!(above.write_by, Some(now + HOLD));
        let later = now + HOLD;
        assert_eq!(
            rows(&above.hold_or_release(vec![end(2)], true, later)),
            [1, 2]
        );
        // The next end held starts a new wait.
        assert!(above.hold_or_release(vec![end(3)], true, later).is_empty());
        assert_eq!(above.write_by, Some(later + HOLD));
    }

    #[test]
    fn nothing_is_held_past_the_sigkill_deadline_above() {
        let now = Instant::now();
        // SIGKILL (which may end this process too) is due sooner than HOLD: written at once.
        let mut above = covering(now + HOLD / 2);
        assert_eq!(rows(&above.hold_or_release(vec![end(1)], true, now)), [1]);
        let mut above_later = covering(now + HOLD + HOLD / 2);
        assert!(above_later
            .hold_or_release(vec![end(2)], true, now)
            .is_empty());
        assert_eq!(above_later.write_by, Some(now + HOLD / 2));
        assert!(above_later.write_by.unwrap() < above_later.kill_due);
    }
}
