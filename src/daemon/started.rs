//! What the daemon tells the host once it has started — once recovery is over (no orphan tree
//! of a previous incarnation left): READY to systemd, and the start-up's code given back
//! ([`memory`]); then STATUS to systemd as it changes.
//!
//! Invariant: each happens once, after recovery, never before.

use super::Daemon;
use crate::memory;
use crate::store::Queue;

impl Daemon {
    /// Once recovery is over, the start-up's code given back to the host (see `memory`) and
    /// READY; then STATUS as it changes.
    pub(super) fn tell_systemd(&mut self) {
        if self.state.orphans.is_empty() && !std::mem::replace(&mut self.started, true) {
            let released = memory::release_start_up_code();
            log::debug!("{released} bytes of start-up code left the resident set");
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
}
