//! Schedules in the daemon: fire what is due when the loop looks for work, and wake the loop
//! when the next one is due — and at no other time.
//!
//! Invariant: `schedules_at` is what the store said of the next occurrence when the daemon last
//! looked (at start, after each firing, after each change it made or was told of); the loop's
//! timer is set to it, so an idle daemon with schedules wakes once per occurrence, and one with
//! none never. On a fleet another host's change or firing notifies every host, which looks
//! again, so a schedule fires while any host runs; an occurrence is taken by one host alone (the
//! store moves its `next_at` only from the value it read).

use super::State;
use crate::store::OrLater;
use std::time::{Duration, Instant};

impl State {
    /// Reads when the next schedule is due.
    pub(super) fn look_at_schedules(&mut self) {
        match self.store.schedules().next_at() {
            Ok(at) => self.schedules_at = at,
            Err(err) => log::warn!("cannot read the schedules: {err}"),
        }
    }

    /// Makes the crawls of every due occurrence (or counts it skipped), then looks again.
    pub(super) fn fire_schedules(&mut self) {
        if self
            .schedules_at
            .is_none_or(|at| at > self.store.shared_now())
        {
            return;
        }
        match self
            .store
            .schedules()
            .fire_due(&jiff::tz::TimeZone::system())
            .or_later()
        {
            Ok(Some(fired)) => {
                for fired in fired {
                    log::info!("schedule {}: {}", fired.schedule_id, fired.note);
                }
            }
            // (Tried again when the store's back-off ends: see `next_schedule_due`.)
            Ok(None) => return,
            Err(err) => log::warn!("cannot fire the due schedules: {err}"),
        }
        self.look_at_schedules();
    }

    /// When the loop must wake for the next schedule, if one is due ever.
    pub(super) fn next_schedule_due(&self) -> Option<Instant> {
        let at = self.schedules_at?;
        let wait = (at - self.store.shared_now()).max(0);
        let due = Instant::now().checked_add(Duration::from_millis(wait as u64))?;
        // (Due already while the database is busy: when the store tries again.)
        Some(match self.store.outbox().busy_since() {
            Some(_) => due.max(self.store.outbox().next_try()),
            None => due,
        })
    }
}
