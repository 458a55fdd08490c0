//! A pool's admission gate: before it claims work to start, what the host has is measured and
//! `admission::decide` says whether the start may happen (`[limits] memory_floor`,
//! `max_browsers`).
//!
//! (Also when the pool's loop must look again: for admission, or for work backing off.)
//!
//! For a pool of snapshots it also learns what one costs in memory (`admission::Growth`): from the
//! memory left at each look, and once a second while its snapshots run with a floor set.
//!
//! Invariants: the gate is looked at only when there is due work to start, and memory watched
//! only while the pool's snapshots run (an idle pool measures nothing, and so wakes no one); a
//! start held back is claimed by no one here and tried again `admission::POLL` later; each new
//! reason to wait is logged once, and the end of a wait too.
//! Whether a start launches a browser is known before it is claimed: every snapshot of a crawl
//! that isolates Chrome per snapshot does, and a crawl does when its hooks launch one browser
//! for it (the next due crawl is looked at). A worker counts as the browser it will launch from
//! its start until that browser is found, so two starts in a row cannot both slip under the cap.

use super::WorkerPool;
use crate::admission::{self, Decision, Growth, Load, Measured, OwnCgroups};
use crate::config::Config;
use crate::domain::Queue;
use crate::store::{Crawl, Store, StoreError};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Which of a pool's starts launch a browser.
#[derive(Debug, Clone, Copy, Default)]
pub enum Launches {
    /// None does (the snapshots of a crawl whose browser they share).
    #[default]
    Nothing,
    /// Each does (the snapshots of a crawl that isolates Chrome per snapshot).
    EachStart,
    /// Those of crawls for which this says so (the daemon's crawl workers).
    PerCrawl(fn(&Config, &Crawl) -> bool),
}

/// What a pool's starts need and why the last one waited.
#[derive(Debug, Clone, Default)]
pub struct Gate {
    pub launches: Launches,
    /// The cgroups abxd runs in, whose memory limits (and their ancestors') bound what is left.
    pub cgroups: OwnCgroups,
    waiting: Option<String>,
    /// For `PerCrawl`: whether each crawl looked at launches a browser.
    crawls: HashMap<i64, bool>,
    /// For a pool of snapshots: what one costs in memory, learned as they run.
    growth: Growth,
    /// When the memory left was last looked at for `growth`.
    observed_at: Option<Instant>,
    /// Since when the first snapshot has been watched while no cost is known.
    warming_up_since: Option<Instant>,
}

impl Gate {
    /// The gate of a pool whose starts launch browsers as `launches` says, in this process's
    /// cgroups.
    pub fn new(launches: Launches) -> Gate {
        Gate {
            launches,
            cgroups: OwnCgroups::find(),
            waiting: None,
            crawls: HashMap::new(),
            growth: Growth::default(),
            observed_at: None,
            warming_up_since: None,
        }
    }

    /// Whether starting `work` (of a pool of `queue`) launches a browser.
    fn launches(&mut self, config: &Config, store: &Store, work: i64) -> Result<bool, StoreError> {
        let per_crawl = match self.launches {
            Launches::Nothing => return Ok(false),
            Launches::EachStart => return Ok(true),
            Launches::PerCrawl(per_crawl) => per_crawl,
        };
        if let Some(&launches) = self.crawls.get(&work) {
            return Ok(launches);
        }
        let launches = store
            .crawls()
            .get(work)?
            .is_some_and(|crawl| per_crawl(config, &crawl));
        self.crawls.insert(work, launches);
        Ok(launches)
    }
}

/// What admission measures now, for a process in `cgroups`: every browser alive on this host,
/// and the free space where `config` has abxd write.
pub fn measure(
    config: &Config,
    store: &Store,
    cgroups: &OwnCgroups,
) -> Result<Measured, StoreError> {
    Ok(Measured {
        memory: admission::memory(cgroups),
        browsers: store.processes().browsers_alive(None)?,
        load: admission::Load::default(),
        disk: free_space(config),
    })
}

/// The least free space where `config` has abxd write.
pub fn free_space(config: &Config) -> Option<crate::disk::Disk> {
    crate::disk::tightest(config.written_places().iter().map(|p| &**p))
}

impl<O: crate::supervisor::Owner> WorkerPool<O> {
    /// Gives the pool its gate (see [`Gate`]).
    pub fn with_gate(mut self, gate: Gate) -> WorkerPool<O> {
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
        if let Some((at, _)) = &self.turn {
            return Some(*at);
        }
        let at = match self.queue {
            Queue::Crawls => store.queue().next_retry_at(self.queue, self.claim_scope()),
            Queue::Snapshots => store.queue().hosts().next_due(self.claim_scope()),
        };
        let at = at.ok().flatten()?;
        Some(
            std::time::Instant::now()
                + Duration::from_millis((at - store.queue_now()).max(0) as u64),
        )
    }

    /// The pool's gate.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Why the pool's starts wait, if they do.
    pub fn waiting(&self) -> Option<&str> {
        self.gate.waiting.as_deref()
    }

    /// Whether the next start waits: there is due work, and admission says not now.
    pub(super) fn held_back(&mut self, config: &Config, store: &Store) -> Result<bool, StoreError> {
        let bounds = config.admission();
        if bounds.memory_floor == 0 && bounds.max_browsers == 0 && bounds.min_free_space == 0 {
            self.gate.waiting = None;
            return Ok(false);
        }
        let next = store.queue().next_due_id(self.queue, self.claim_scope())?;
        let due = next.is_some();
        // (What is remembered of crawls is of those that run here or start next.)
        let keep: Vec<i64> = (self.workers.values().map(|h| h.claim.id))
            .chain(next)
            .collect();
        self.gate.crawls.retain(|crawl, _| keep.contains(crawl));
        let decision = match next {
            Some(work) => {
                let launches =
                    bounds.max_browsers > 0 && self.gate.launches(config, store, work)?;
                let memory = admission::memory(&self.gate.cgroups);
                let load = self.observe_load(memory.as_ref());
                let measured = Measured {
                    memory,
                    load,
                    browsers: if bounds.max_browsers > 0 {
                        self.browsers_counted(config, store)?
                    } else {
                        0
                    },
                    disk: free_space(config),
                };
                admission::decide(bounds, &measured, launches)
            }
            None => Decision::Admit,
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

    /// For a pool of snapshots: notes the memory left with its workers running, and returns
    /// their load (nothing for a pool of crawls, or where memory is not measured).
    fn observe_load(&mut self, memory: Option<&admission::Memory>) -> Load {
        match (self.queue, memory) {
            (Queue::Snapshots, Some(memory)) => {
                self.gate.observed_at = Some(Instant::now());
                let load = (self.gate.growth).observe(memory.available, self.workers.len() as u32);
                self.end_a_long_warm_up();
                Load {
                    cost: self.gate.growth.cost(),
                    ..load
                }
            }
            _ => Load::default(),
        }
    }

    /// While a pool of snapshots has workers running and admission is on: looks at the memory
    /// left once every `admission::POLL` (a snapshot's peak comes and goes between starts, and
    /// is what its cost is), and returns when to look next. `None`: nothing to watch.
    pub fn watch_memory(&mut self, config: &Config) -> Option<Instant> {
        let watching = self.queue == Queue::Snapshots
            && config.admission().memory_floor > 0
            && !self.workers.is_empty();
        if !watching {
            self.gate.observed_at = None;
            return None;
        }
        let due = (self.gate.observed_at).map_or(Instant::now(), |at| at + admission::POLL);
        if due > Instant::now() {
            return Some(due);
        }
        self.look_at_memory();
        Some(Instant::now() + admission::POLL)
    }

    /// Measures the memory left and notes it for the cost (see `observe_load`).
    fn look_at_memory(&mut self) {
        let memory = admission::memory(&self.gate.cgroups);
        self.observe_load(memory.as_ref());
    }

    /// While no cost is known and a snapshot runs: once the first has been watched for
    /// `admission::WARM_UP`, what it took by then is the cost.
    fn end_a_long_warm_up(&mut self) {
        if self.gate.growth.cost().is_some() || self.workers.is_empty() {
            return;
        }
        let since = *self.gate.warming_up_since.get_or_insert_with(Instant::now);
        if since.elapsed() >= admission::WARM_UP {
            self.gate.growth.settle();
            if let Some(cost) = self.gate.growth.cost() {
                log::info!(
                    "snapshot: a snapshot's cost is taken as {} MiB, what the first took in {} s",
                    cost >> 20,
                    admission::WARM_UP.as_secs()
                );
            }
        }
    }

    /// One of the pool's workers ended having sealed its work: with admission on, the memory
    /// left is looked at once more (the end of its life is its peak's last chance to be seen)
    /// and, for the first one, its cost learned.
    pub(super) fn learn_from_end(&mut self, config: &Config) {
        if config.admission().memory_floor == 0 || self.queue != Queue::Snapshots {
            return;
        }
        self.look_at_memory();
        self.gate.growth.snapshot_ended();
    }

    /// The browsers alive on this host, where each of this pool's workers that will launch one
    /// counts as one until its browser is found (and the snapshots of its own crawl's browsers
    /// are counted once).
    fn browsers_counted(&mut self, config: &Config, store: &Store) -> Result<u32, StoreError> {
        match (self.gate.launches, self.queue) {
            (Launches::Nothing, _) => store.processes().browsers_alive(None),
            (Launches::EachStart, _) => {
                Ok(store.processes().browsers_alive(self.crawl)? + self.workers.len() as u32)
            }
            (Launches::PerCrawl(_), queue) => {
                debug_assert_eq!(queue, Queue::Crawls);
                let alive = store.processes().browsers_alive_by_scope(None)?;
                let works: Vec<i64> = self.workers.values().map(|h| h.claim.id).collect();
                let mut launching = 0;
                for work in works {
                    launching += u32::from(self.gate.launches(config, store, work)?);
                }
                Ok(alive.per_snapshot + alive.crawl_wide.max(launching))
            }
        }
    }
}
