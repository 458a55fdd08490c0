//! What the daemon tells the host once it has started — once recovery is over (no orphan tree
//! of a previous incarnation left): READY to systemd, and the start-up's code given back
//! (`memory`); then STATUS to systemd as it changes, and the code given back again each time
//! the loop goes idle.
//!
//! Invariants: READY and the first release happen once, after recovery, never before. After
//! that, code is given back only as the loop goes to sleep idle ([`goes_idle`]), once per sleep,
//! so an idle daemon stays asleep: the release adds no wake-up.

use super::Daemon;
use crate::domain::Queue;
use std::time::{Duration, Instant};

/// A sleep at least this long, with nothing supervised, is the loop going idle.
const IDLE_SLEEP: Duration = Duration::from_secs(1);

/// Whether a loop about to sleep until `timer` (`None`: until an event) goes idle: it has
/// started, it supervises nothing, and nothing wakes it within [`IDLE_SLEEP`].
fn goes_idle(started: bool, supervising: bool, timer: Option<Instant>, now: Instant) -> bool {
    started
        && !supervising
        && timer.is_none_or(|at| at.saturating_duration_since(now) >= IDLE_SLEEP)
}

impl Daemon {
    /// Once recovery is over, READY; then STATUS as it changes. Returns whether the daemon
    /// started at this turn (its start-up's code is given back before the loop sleeps).
    pub(super) fn tell_systemd(&mut self) -> bool {
        let just_started =
            self.state.orphans.is_empty() && !std::mem::replace(&mut self.started, true);
        if !self.notifier.enabled() {
            return just_started;
        }
        let queued = self
            .state
            .store
            .queue()
            .queued_count(Queue::Crawls)
            .unwrap_or(0);
        let status = format!(
            "{} crawl workers, {queued} crawls queued",
            self.state.crawls.len()
        );
        if self.state.orphans.is_empty() && !self.notifier.is_ready() {
            self.notifier.ready(status);
        } else {
            self.notifier.status(status);
        }
        just_started
    }

    /// Before the loop sleeps until `timer`: if the daemon `just_started`, or the loop goes
    /// idle, the code it ran is given back to the host (see `memory`).
    pub(super) fn before_sleep(&mut self, timer: Option<Instant>, just_started: bool) {
        let supervising = self.supervisor.has_work() || !self.state.crawls.is_empty();
        let why = if just_started {
            "start-up"
        } else if goes_idle(self.started, supervising, timer, Instant::now()) {
            "idle"
        } else {
            return;
        };
        let released = crate::memory::release_code();
        log::debug!("{released} bytes of code left the resident set ({why})");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_goes_idle_only_started_supervising_nothing_and_with_no_timer_soon() {
        let now = Instant::now();
        let later = now + IDLE_SLEEP;
        let soon = now + IDLE_SLEEP / 2;
        assert!(goes_idle(true, false, None, now));
        assert!(goes_idle(true, false, Some(later), now));
        assert!(!goes_idle(true, false, Some(soon), now), "a timer due soon");
        assert!(!goes_idle(true, true, None, now), "a child supervised");
        assert!(!goes_idle(false, false, None, now), "recovery not over");
    }
}
