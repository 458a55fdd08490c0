//! The cgroups a previous incarnation left, emptied from the loop: killed once recovery no
//! longer needs them (no orphan tree left), removed as each one's `cgroup.events` says it is
//! empty — the loop is woken by the watch, never made to wait (`cgroup::Emptying`).

use super::State;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

/// The token the stale cgroups' watch wakes the loop with.
pub(super) const STALE_CGROUPS: Token = Token(usize::MAX - 1);

impl State {
    /// Kills what the previous incarnation's cgroups hold and has the loop told as they empty.
    pub(super) fn clear_stale_cgroups(&mut self, registry: &Registry) {
        let stale = self.containment.take_stale();
        if stale.is_empty() {
            return;
        }
        self.stale_cgroups = crate::cgroup::Emptying::start(stale);
        if let Some(fd) = self.stale_cgroups.raw_fd() {
            let registered =
                registry.register(&mut SourceFd(&fd), STALE_CGROUPS, Interest::READABLE);
            if let Err(err) = registered {
                log::error!("cannot wait for stale cgroups to empty: {err}");
            }
        }
    }

    /// The watch on the stale cgroups woke the loop: removes those that emptied. (The watch's
    /// descriptor is closed once all are gone, which takes it out of the loop's poll.)
    pub(super) fn stale_cgroups_changed(&mut self) {
        if self.stale_cgroups.on_ready() {
            log::info!("the cgroups of the previous incarnation are removed");
        }
    }
}
