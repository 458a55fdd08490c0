//! A pool's admission gate: before it claims work to start, what the host has is measured and
//! `admission::decide` says whether the start may happen (`[limits] memory_floor`,
//! `max_browsers`).
//!
//! (Also when the pool's loop must look again: for admission, or for work backing off.)
//!
//! Invariants: the gate is looked at only when there is due work to start (an idle pool measures
//! nothing, and so wakes no one); a start held back is claimed by no one here and tried again
//! `admission::POLL` later; each new reason to wait is logged once, and the end of a wait too. A
//! pool whose workers each launch a browser counts each of its workers as one browser from its
//! start, so two starts in a row cannot both slip under the cap before either browser is found.

use super::WorkerPool;
use crate::admission::{self, Decision, Measured};
use crate::config::Config;
use crate::store::{Store, StoreError};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What a pool's starts need and why the last one waited.
#[derive(Debug, Clone, Default)]
pub struct Gate {
    /// Whether each start launches a browser (a crawl's session, or a snapshot's when Chrome is
    /// isolated per snapshot).
    pub launches_browser: bool,
    /// The cgroup abxd runs in, whose ancestors' `memory.max` bound what is left.
    pub cgroup: Option<PathBuf>,
    waiting: Option<String>,
}

impl Gate {
    pub fn new(launches_browser: bool, cgroup: Option<PathBuf>) -> Gate {
        Gate {
            launches_browser,
            cgroup,
            waiting: None,
        }
    }
}

/// What admission measures now, for a process whose cgroup is `cgroup`: every browser alive on
/// this host.
pub fn measure(store: &Store, cgroup: Option<&std::path::Path>) -> Result<Measured, StoreError> {
    Ok(Measured {
        memory: admission::memory(cgroup),
        browsers: store.browsers_alive(None)?,
    })
}

impl WorkerPool {
    /// Gives the pool its gate (see [`Gate`]).
    pub fn with_gate(mut self, gate: Gate) -> WorkerPool {
        self.gate = gate;
        self
    }

    /// When the loop must wake to claim work that is backing off, or to ask admission again
    /// (only with room for it).
    pub fn next_due(&self, config: &Config, store: &Store) -> Option<Instant> {
        if self.workers.len() >= self.limit(config) {
            return None;
        }
        if self.waiting().is_some() {
            return Some(Instant::now() + crate::admission::POLL);
        }
        let at = store
            .next_retry_at(self.queue, self.claim_scope())
            .ok()
            .flatten()?;
        Some(
            std::time::Instant::now()
                + Duration::from_millis((at - store.queue_now()).max(0) as u64),
        )
    }

    /// Why the pool's starts wait, if they do.
    pub fn waiting(&self) -> Option<&str> {
        self.gate.waiting.as_deref()
    }

    /// Whether the next start waits: there is due work, and admission says not now.
    pub(super) fn held_back(&mut self, config: &Config, store: &Store) -> Result<bool, StoreError> {
        let bounds = config.limits.admission();
        if bounds.memory_floor == 0 && bounds.max_browsers == 0 {
            return Ok(false);
        }
        let due = store
            .next_retry_at(self.queue, self.claim_scope())?
            .is_some_and(|at| at <= store.queue_now());
        let decision = if due {
            // A pool whose workers each launch a browser counts one per worker (a browser just
            // launched is not found yet), and not its snapshots' browsers twice.
            let own = self.gate.launches_browser.then_some(self.crawl).flatten();
            let measured = Measured {
                memory: admission::memory(self.gate.cgroup.as_deref()),
                browsers: store.browsers_alive(own)?
                    + if own.is_some() {
                        self.workers.len() as u32
                    } else {
                        0
                    },
            };
            admission::decide(bounds, &measured, self.gate.launches_browser)
        } else {
            Decision::Admit
        };
        let queue = self.queue.as_str();
        match decision {
            Decision::Wait(why) => {
                if self.gate.waiting.as_ref() != Some(&why) {
                    log::info!("{queue}: admission waits for {why}");
                }
                self.gate.waiting = Some(why);
                Ok(true)
            }
            Decision::Admit => {
                if self.gate.waiting.take().is_some() && due {
                    log::info!("{queue}: admission lets work start again");
                }
                Ok(false)
            }
        }
    }
}
