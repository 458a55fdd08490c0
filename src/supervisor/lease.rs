//! The lease a worker holds on its crawl or snapshot, renewed every third of its duration while
//! the loop waits.
//!
//! Invariant: a lease whose renewal the store refuses is dropped at once and reported lost (the
//! worker then stops, leaving the work to its new owner); a renewal that fails to be written is
//! retried sooner, never given up silently.

use super::decide::{lease_step, LeaseStep};
use crate::domain::Lease;
use crate::store::Store;
use std::time::Instant;

#[derive(Default)]
pub(super) struct LeaseKeeper {
    held: Option<(Lease, Instant)>,
}

impl LeaseKeeper {
    pub fn hold(&mut self, lease: Lease, now: Instant) {
        self.held = Some((lease, now + lease.duration / 3));
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.held.map(|(_, due)| due)
    }

    /// Renews the lease if due; returns whether it was lost.
    pub fn renew_if_due(&mut self, store: &Store, now: Instant) -> bool {
        let Some((lease, due)) = self.held else {
            return false;
        };
        if due > now {
            return false;
        }
        let renewed = store
            .queue()
            .renew(&lease)
            .map_err(|err| {
                log::error!(
                    "cannot renew the lease on {} {}: {err}",
                    lease.claim.queue,
                    lease.claim.id
                )
            })
            .ok();
        match lease_step(renewed, now, lease.duration) {
            LeaseStep::Renewed(next) | LeaseStep::Retry(next) => {
                self.held = Some((lease, next));
                false
            }
            LeaseStep::Lost => {
                log::error!(
                    "lost the lease on {}: it changed hands, or it ran out",
                    lease.claim
                );
                self.held = None;
                true
            }
        }
    }
}
