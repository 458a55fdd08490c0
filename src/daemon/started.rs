//! What the daemon tells the host once it has started — once recovery is over (no orphan tree
//! of a previous incarnation left): READY to systemd, and the start-up's code given back
//! ([`memory`]); then STATUS to systemd as it changes, and the code given back again each time
//! the loop goes idle.
//!
//! Invariants: READY and the first release happen once, after recovery, never before. After
//! that, code is given back only when the loop goes to sleep idle ([`goes_idle`]) having run
//! since the last release, so an idle daemon stays asleep: the release adds no wake-up.

use super::Daemon;
use crate::store::Queue;
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
    /// Once recovery is over, the start-up's code given back to the host (see `memory`) and
    /// READY; then STATUS as it changes.
    pub(super) fn tell_systemd(&mut self) {
        if self.state.orphans.is_empty() && !std::mem::replace(&mut self.started, true) {
            self.release_code("start-up");
        }
        if !self.notifier.enabled() {
            return;
        }
        let queued = self.state.store.queued_count(Queue::Crawls).unwrap_or(0);
        let status = format!(
            "{} crawl workers, {queued} crawls queued",
            self.state.crawls.len()
        );
        if self.state.orphans.is_empty() && !self.notifier.is_ready() {
            self.notifier.ready(status);
        } else {
            self.notifier.status(status);
        }
    }

    /// Before the loop sleeps until `timer`: if it goes idle having run since the last release,
    /// the code it ran is given back to the host (see `memory`).
    pub(super) fn before_sleep(&mut self, timer: Option<Instant>) {
        let supervising = self.supervisor.has_work() || !self.state.crawls.is_empty();
        if self.code_ran && goes_idle(self.started, supervising, timer, Instant::now()) {
            self.release_code("idle");
        }
    }

    fn release_code(&mut self, why: &str) {
        let released = crate::memory::release_code();
        self.code_ran = false;
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
