//! A pool of worker processes, one per claimed piece of work: the daemon's crawl workers, and a
//! crawl worker's snapshot workers. Both do the same thing — claim → spawn a worker → hand it the
//! work → on its exit: sealed, or recovered (now, or once what it leaked is torn down) — so it is
//! written once, here.
//!
//! Invariants: at most `limit` workers at once; a claimed row is owned by the pool's owner from
//! the claim on, and by the worker's process row before anything else happens to it; a worker that could not be started puts its work back
//! (backing off by its restart count) instead of leaving it claimed; work whose worker died is
//! recovered by `recovery`'s rules, never re-run by hand; a worker that leaked processes is
//! recovered only once its teardown finished, so no two workers ever run the same work.

mod gate;
mod request;

pub use gate::{free_space, measure, Gate, Launches};
pub use request::own_row;
pub(crate) use request::{worker_argv, worker_env};

use crate::config::Config;
use crate::domain::{Claim, Queue, WorkStatus};
use crate::recovery;
use crate::spawn::SpawnError;
use crate::store::{Budget, SnapshotClaim, Store, StoreError};
use crate::supervisor::{ChildPolicy, CrawlWorkerChild, DaemonChild, Owner, Supervisor};
use std::collections::HashMap;

/// How soon a pool whose snapshot claim was not its turn asks again: a slot another crawl's
/// snapshot frees is seen by no event of this process.
const TURN_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// What the exit of one of the pool's workers meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEnd {
    /// It sealed its work.
    Sealed { work: i64 },
    /// It ended first; its work was recovered.
    Recovered { work: i64 },
    /// It ended first, leaving processes; its work is recovered when their teardown finishes.
    AwaitingTeardown { work: i64 },
    /// It ended first and recovery was left to someone else (the pool is being interrupted).
    Abandoned { work: i64 },
}

impl std::fmt::Display for WorkerEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerEnd::Sealed { work } => write!(f, "{work} sealed"),
            WorkerEnd::Recovered { work } => write!(f, "{work} recovered"),
            WorkerEnd::AwaitingTeardown { work } => {
                write!(f, "{work} recovered once its leftovers are torn down")
            }
            WorkerEnd::Abandoned { work } => write!(f, "{work} left to the daemon's recovery"),
        }
    }
}

pub struct WorkerPool<O> {
    queue: Queue,
    /// Who its workers' exits are for, in the process that runs it (see `supervisor::Owner`).
    owner: O,
    /// For snapshot workers: the crawl whose snapshots they work on (`None`: snapshots lent to
    /// other machines' crawls, see [`WorkerPool::lent_snapshots`]).
    crawl: Option<i64>,
    /// For crawl workers under `abxd run`: the one crawl they may claim (other queued crawls of
    /// the data dir are left to the daemon).
    only: Option<i64>,
    /// The process row of the pool's owner, the workers' parent.
    parent_row: i64,
    /// Workers by process row → the work each owns.
    workers: HashMap<i64, Held>,
    /// Dead workers whose leftovers are still being torn down, by row → their work.
    awaiting_teardown: HashMap<i64, Held>,
    /// Work claimed whose worker the busy database kept from starting.
    unstarted: Vec<Held>,
    /// What admission looks at before a start (`gate`), and why it last held starts back.
    gate: gate::Gate,
    /// How many workers run at once, in place of `[limits]`'s (a crawl's
    /// `--crawl-max-concurrent-snapshots`).
    most: Option<usize>,
    /// Its last snapshot claim was not its turn (`domain::turn`): when to ask again, and why.
    turn: Option<(std::time::Instant, String)>,
}

/// A piece of work the pool claimed: the claim, and the crawl it belongs to (a crawl's is
/// itself), by which its recovery is scoped.
#[derive(Debug, Clone, Copy)]
struct Held {
    claim: Claim,
    crawl: i64,
}

impl WorkerPool<DaemonChild> {
    /// The daemon's pool of crawl workers.
    pub fn crawls(parent_row: i64) -> WorkerPool<DaemonChild> {
        WorkerPool::new(DaemonChild::CrawlWorkers, Queue::Crawls, None, parent_row)
    }

    /// A daemon's pool of snapshot workers for the crawls other machines of a fleet run (see
    /// the store's `queue().claim`): its free slots lent to them.
    pub fn lent_snapshots(parent_row: i64) -> WorkerPool<DaemonChild> {
        let owner = DaemonChild::LentSnapshotWorkers;
        WorkerPool::new(owner, Queue::Snapshots, None, parent_row)
    }
}

impl WorkerPool<CrawlWorkerChild> {
    /// A crawl worker's pool of snapshot workers for `crawl`.
    pub fn snapshots(crawl: i64, parent_row: i64) -> WorkerPool<CrawlWorkerChild> {
        let owner = CrawlWorkerChild::SnapshotWorkers;
        WorkerPool::new(owner, Queue::Snapshots, Some(crawl), parent_row)
    }
}

impl<O: Owner> WorkerPool<O> {
    fn new(owner: O, queue: Queue, crawl: Option<i64>, parent_row: i64) -> WorkerPool<O> {
        WorkerPool {
            queue,
            owner,
            crawl,
            only: None,
            parent_row,
            workers: HashMap::new(),
            awaiting_teardown: HashMap::new(),
            unstarted: Vec::new(),
            gate: gate::Gate::new(gate::Launches::Nothing),
            most: None,
            turn: None,
        }
    }

    /// Runs at most `most` workers at once (none: `[limits]` says), whatever `[limits]` says.
    pub fn at_most(self, most: Option<u64>) -> WorkerPool<O> {
        let most = most.map(|n| usize::try_from(n).unwrap_or(usize::MAX).max(1));
        WorkerPool { most, ..self }
    }

    /// Claims only crawl `id` from now on (a crawl pool: `abxd run`).
    pub fn claim_only(&mut self, id: i64) {
        debug_assert_eq!(self.queue, Queue::Crawls);
        self.only = Some(id);
    }

    /// How many more workers it may start now, and the one crawl it may claim, if claims are
    /// restricted to one (`abxd run`): what the next claims can take.
    pub fn room(&self, config: &Config) -> (usize, Option<i64>) {
        let free = self.limit(config).saturating_sub(self.workers.len());
        (free, self.only)
    }

    /// What claims are restricted to: see [`WorkQueue::claim`](crate::store::WorkQueue::claim).
    fn claim_scope(&self) -> Option<i64> {
        match self.queue {
            Queue::Crawls => self.only,
            Queue::Snapshots => self.crawl,
        }
    }

    fn limit(&self, config: &Config) -> usize {
        let configured = match self.queue {
            Queue::Crawls => config.limits.max_crawl_workers,
            Queue::Snapshots => config.limits.max_snapshot_workers,
        };
        self.most.unwrap_or(configured as usize)
    }

    pub fn len(&self) -> usize {
        self.workers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// No worker runs and no dead worker's teardown is awaited.
    pub fn is_idle(&self) -> bool {
        self.workers.is_empty() && self.awaiting_teardown.is_empty()
    }

    /// The process row of the worker that owns `work`, if one runs.
    pub fn worker_of(&self, work: i64) -> Option<i64> {
        self.workers
            .iter()
            .find(|(_, held)| held.claim.id == work)
            .map(|(row, _)| *row)
    }

    /// Claims due work and starts a worker for each, up to the limit. A worker that cannot be
    /// started puts its work back (backing off) and ends this round. Store errors are returned
    /// (the caller decides whether to retry later or fail); work claimed whose worker the busy
    /// database kept from starting is kept claimed and started first next time.
    pub fn fill(
        &mut self,
        config: &Config,
        supervisor: &mut Supervisor<O>,
        store: &Store,
    ) -> Result<(), StoreError> {
        while self.workers.len() < self.limit(config) {
            if self.unstarted.is_empty() && self.held_back(config, store)? {
                return Ok(());
            }
            let held = match self.claimed_unstarted(store)? {
                Some(held) => held,
                None => match self.claim(config, store)? {
                    Some(claim) => self.hold(store, claim)?,
                    None => return Ok(()),
                },
            };
            let (claim, work) = (held.claim, held.claim.id);
            // (A crawl's own variables, above every other setting, reach its hooks through its
            // workers' environment. A crawl worker's snapshot workers inherit them from it.)
            let crawl_env = match self.crawl {
                Some(_) => Default::default(),
                None => store.crawls().env(held.crawl)?,
            };
            let request =
                request::worker_request(self.queue, self.parent_row, config, &held, crawl_env);
            // Owned by the worker's row from the moment the row exists.
            let mut own = |store: &Store, row: i64| {
                if store.queue().set_owner(claim, row)? {
                    Ok(())
                } else {
                    Err(StoreError::Fenced { claim, now: None })
                }
            };
            match supervisor.spawn(store, &request, (self.owner, ChildPolicy::WORKER), &mut own) {
                Ok(spawned) => {
                    log::info!(
                        "{} {work}: worker row {} started",
                        self.queue.as_str(),
                        spawned.row_id
                    );
                    self.workers.insert(spawned.row_id, held);
                }
                Err(SpawnError::Store(err)) if err.is_fenced() => {
                    log::warn!("{}: not started: {err}", self.queue.as_str());
                }
                Err(SpawnError::Store(err)) => {
                    self.unstarted.push(held);
                    return Err(err);
                }
                Err(err) => {
                    log::error!(
                        "{} {work}: cannot start its worker: {err}",
                        self.queue.as_str()
                    );
                    if let Err(err) = self.put_back(config, store, claim) {
                        self.unstarted.push(held);
                        return Err(err);
                    }
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Claims the next piece of work the pool may take: a crawl, or a snapshot whose host key
    /// has room (`[politeness]`), when it is the pool's turn for one of the host's snapshot
    /// slots (else it asks again [`TURN_POLL`] later).
    fn claim(&mut self, config: &Config, store: &Store) -> Result<Option<Claim>, StoreError> {
        let (lease, claimer) = (config.timeouts.lease, Some(self.parent_row));
        if self.queue == Queue::Crawls {
            return store.queue().claim(self.queue, self.only, lease, claimer);
        }
        let rules = (&config.politeness, Budget::of(&config.limits));
        let claimed = (store.queue().hosts()).claim_snapshot(self.crawl, lease, claimer, rules)?;
        self.turn = match claimed {
            SnapshotClaim::NotYourTurn(turn) => {
                Some((std::time::Instant::now() + TURN_POLL, turn.to_string()))
            }
            _ => None,
        };
        Ok(match claimed {
            SnapshotClaim::Claimed(claim) => Some(claim),
            _ => None,
        })
    }

    /// Why its last claim was not its turn, if it was not.
    pub fn waiting_for_turn(&self) -> Option<&str> {
        self.turn.as_ref().map(|(_, why)| why.as_str())
    }

    /// Work this pool claimed but could not start a worker for yet, if it is still claimed by
    /// the pool's owner (else recovery took it back meanwhile, and it is forgotten here).
    fn claimed_unstarted(&mut self, store: &Store) -> Result<Option<Held>, StoreError> {
        while let Some(held) = self.unstarted.pop() {
            if store.queue().still_claimed(held.claim, self.parent_row)? {
                return Ok(Some(held));
            }
        }
        Ok(None)
    }

    /// What the pool holds once it claimed `claim`: the claim and the work's crawl.
    fn hold(&self, store: &Store, claim: Claim) -> Result<Held, StoreError> {
        let crawl = match (self.queue, self.crawl) {
            (Queue::Crawls, _) => claim.id,
            (Queue::Snapshots, Some(crawl)) => crawl,
            (Queue::Snapshots, None) => store
                .crawls()
                .snapshot(claim.id)?
                .map_or(claim.id, |s| s.crawl_id),
        };
        Ok(Held { claim, crawl })
    }

    /// A child of the pool's owner exited. `None`: it was not one of the pool's workers. With
    /// `recover` false (the owner is being interrupted), its work is left to whoever recovers
    /// the owner's work.
    pub fn on_exit(
        &mut self,
        config: &Config,
        store: &Store,
        row: i64,
        leaked: bool,
        recover: bool,
    ) -> Result<Option<WorkerEnd>, StoreError> {
        // (Removed only once handled: on a store error, the same exit may be given again.)
        let Some(&held) = self.workers.get(&row) else {
            return Ok(None);
        };
        let work = held.claim.id;
        let end = if self.sealed(store, work)? {
            self.learn_from_end(config);
            WorkerEnd::Sealed { work }
        } else if !recover {
            WorkerEnd::Abandoned { work }
        } else if leaked {
            WorkerEnd::AwaitingTeardown { work }
        } else {
            recovery::recover_ownerless(store, config, Some(held.crawl), true)?;
            WorkerEnd::Recovered { work }
        };
        self.workers.remove(&row);
        if let WorkerEnd::AwaitingTeardown { .. } = end {
            self.awaiting_teardown.insert(row, held);
        }
        Ok(Some(end))
    }

    /// Says in the log what the exit of worker `row` meant: one wording for every pool.
    pub fn log_end(&self, row: i64, end: WorkerEnd) {
        let noun = self.queue.as_str();
        match end {
            WorkerEnd::Sealed { work } => {
                log::info!("{noun} {work} sealed; its worker (row {row}) exited")
            }
            ended => log::warn!("worker row {row} ended before sealing: {noun} {ended}"),
        }
    }

    /// Handling an event of worker `row` (its exit, the end of its leftovers' teardown) failed
    /// on a store error, and the caller recovers the work later by other means: the worker no
    /// longer counts, and one that exited leaking stays awaited until its leftovers are gone.
    pub fn give_up_on(&mut self, row: i64, leaked: bool) {
        match self.workers.remove(&row) {
            Some(held) if leaked => {
                self.awaiting_teardown.insert(row, held);
            }
            Some(_) => {}
            None => {
                self.awaiting_teardown.remove(&row);
            }
        }
    }

    /// A teardown rooted at `row` finished: if it was a dead worker's leftovers, its work is
    /// recovered now. Returns the work recovered.
    pub fn on_torn_down(
        &mut self,
        config: &Config,
        store: &Store,
        row: i64,
    ) -> Result<Option<i64>, StoreError> {
        let Some(&held) = self.awaiting_teardown.get(&row) else {
            return Ok(None);
        };
        recovery::recover_ownerless(store, config, Some(held.crawl), true)?;
        self.awaiting_teardown.remove(&row);
        Ok(Some(held.claim.id))
    }

    fn sealed(&self, store: &Store, work: i64) -> Result<bool, StoreError> {
        Ok(match self.queue {
            Queue::Crawls => store.crawls().get(work)?.map(|c| c.status),
            Queue::Snapshots => store.crawls().snapshot(work)?.map(|s| s.status),
        } == Some(WorkStatus::Sealed))
    }

    /// Puts claimed work back on its queue, due after its back-off.
    fn put_back(&self, config: &Config, store: &Store, claim: Claim) -> Result<(), StoreError> {
        let restarts = match self.queue {
            Queue::Crawls => store.crawls().get(claim.id)?.map(|c| c.restarts),
            Queue::Snapshots => store.crawls().snapshot(claim.id)?.map(|s| s.restarts),
        };
        let wait = recovery::backoff(config, restarts.unwrap_or(0));
        let due = store.queue_now() + wait.as_millis() as i64;
        store.queue().requeue(claim, due).map(drop)
    }
}
