//! The heartbeat: on a shared store the daemon says every lease/3 that its machine is alive, so
//! the other hosts (and `abxctl ps`) tell a silent machine from a busy one.
//!
//! Invariant: a daemon on a store of its own (SQLite) never wakes for it — it keeps no timer.

use crate::store::Store;
use std::time::{Duration, Instant};

pub(super) struct Heartbeat {
    machine_id: String,
    /// How often it beats; `None` on a store of its own.
    every: Option<Duration>,
    next: Option<Instant>,
}

impl Heartbeat {
    /// Beats every `lease`/3 when the store is `shared`, else never.
    pub fn new(machine_id: &str, shared: bool, lease: Duration) -> Heartbeat {
        let every = shared.then(|| (lease / 3).max(Duration::from_millis(100)));
        Heartbeat {
            machine_id: machine_id.to_string(),
            every,
            next: every.map(|every| Instant::now() + every),
        }
    }

    /// When the loop must wake for the next beat.
    pub fn next_due(&self) -> Option<Instant> {
        self.next
    }

    /// Beats if it is due; a beat the store refused is tried again soon. Returns `None` when
    /// none was due, else whether the store took it.
    pub fn beat_if_due(&mut self, store: &Store) -> Option<bool> {
        let (Some(next), Some(every)) = (self.next, self.every) else {
            return None;
        };
        let now = Instant::now();
        if now < next {
            return None;
        }
        let beat = store.machines().heartbeat(&self.machine_id);
        self.next = Some(match &beat {
            Ok(()) => now + every,
            Err(err) => {
                log::warn!("cannot write this machine's heartbeat: {err}");
                store.outbox().when_to_retry(err.is_busy()).min(now + every)
            }
        });
        Some(beat.is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_on_a_store_of_its_own_keeps_no_heartbeat_timer() {
        let lease = Duration::from_secs(60);
        assert_eq!(Heartbeat::new("m", false, lease).next_due(), None);
        let shared = Heartbeat::new("m", true, lease).next_due().unwrap();
        let wait = shared - Instant::now();
        assert!(
            wait <= Duration::from_secs(20) && wait > Duration::from_secs(19),
            "{wait:?}"
        );
    }
}
