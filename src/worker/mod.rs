//! Workers: `abxd worker crawl ID` (`crawl`) and `abxd worker snapshot ID` (`snapshot`), each a
//! process of its own.
//!
//! A crawl worker runs its crawl's hooks, creates the depth-0 snapshots, keeps up to
//! `max_snapshot_workers` snapshot workers running (a [`WorkerPool`]), seals the crawl when every
//! snapshot is sealed and then tears its background crawl hooks down. A snapshot worker runs the
//! snapshot's hooks, turns discovered URLs into snapshots at depth+1, tears its background hooks
//! down when the foreground ones are done, and seals the snapshot.
//!
//! Invariants: a worker works only on what its parent claimed for it and hands over (the lease
//! names its process row as owner) and renews that lease while it works; it reaps its own
//! children; on SIGTERM it tears its children down — or, when the SIGTERM comes from a teardown
//! of its own row above it, leaves that to the teardown above (`supervisor::above`) — and exits
//! [`EXIT_INTERRUPTED`] without sealing, so the work is requeued; it seals only work that is
//! really finished.

mod crawl;
mod egress;
mod end;
mod input;
mod limits;
mod politeness;
mod selection;
mod snapshot;

pub use crawl::run_crawl_worker;
pub use selection::crawl_launches_browser;
pub use snapshot::run_snapshot_worker;

use crate::config::Config;
use crate::domain::{EndReason, ExitOutcome, Lease, Limit, Queue};
use crate::hook_user::{HookUser, Taken};
use crate::hooks::{HookRunner, Outcome};
use crate::marker::PROCESS_ID_ENV;
use crate::pool::WorkerPool;
use crate::signal::Signal;
use crate::store::{now_ms, Patience, Store, StoreError};
use crate::supervisor::{Event, RunsHooks, Supervisor, Timing};
use limits::Watches;
use std::time::{Duration, Instant};

/// A worker that finished its work exits 0.
pub const EXIT_DONE: i32 = 0;
/// A worker that was interrupted (SIGTERM, a lost lease) exits EX_TEMPFAIL: its work goes back
/// to the queue, and its parent recovers it (see `docs/design.md`).
pub const EXIT_INTERRUPTED: i32 = 75;

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("event loop: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Setup(String),
}

/// What every worker starts from: config, store, its own row, the loop.
struct Context<O> {
    config: Config,
    store: Store,
    row_id: i64,
    supervisor: Supervisor<O>,
    /// Set once SIGTERM/SIGINT arrived or the lease was lost: tear down, do not seal.
    interrupted: bool,
    /// Rows whose teardown finished since the caller last looked.
    torn_down: Vec<i64>,
    /// Exits whose records the busy database refused, to be handled again.
    deferred: Vec<Exit<O>>,
    /// Who its hooks run as, if not abxd's own user (`hook_user`).
    run_as: Option<HookUser>,
    /// The user of its own its crawl's hooks run as (`hooks.crawl_users`), held while it lives.
    _crawl_user: Option<Taken>,
    /// The size and time limits of its work.
    watches: Watches,
    /// Set once one of them was reached: the children are torn down as a cancel would, and the
    /// work is sealed naming the limit.
    ended_by: Option<Limit>,
    /// A crawl hook the crawl needs failed (`hooks::resource`): the crawl is sealed failed.
    failed: bool,
}

/// A child that ended, as a worker acts on it.
#[derive(Debug, Clone, Copy)]
struct Exit<O> {
    row: i64,
    /// Who started it (a crawl worker has hooks and snapshot workers).
    owner: O,
    outcome: ExitOutcome,
    reason: EndReason,
    leaked: bool,
}

impl<O: RunsHooks> Context<O> {
    /// The worker's context, fenced to the claim its parent handed it; `None` when the work
    /// changed hands before the worker began (it then touches nothing and exits interrupted).
    fn open(config: Config, queue: Queue, id: i64) -> Result<Option<Context<O>>, WorkerError> {
        let row_id = crate::pool::own_row().ok_or_else(|| {
            WorkerError::Setup(format!(
                "{PROCESS_ID_ENV} is not set: workers are started by abxd, not by hand"
            ))
        })?;
        if let Err(err) = nix::sys::prctl::set_child_subreaper(true) {
            log::warn!("cannot become a child subreaper: {err}");
        }
        // Never a new file: a database deleted under the daemon must not be replaced by workers.
        let store = Store::open_existing_at(&config.database)?;
        store.set_synchronous_commit(config.synchronous_commit);
        let decided = crate::hook_user::for_crawls(&config).map_err(WorkerError::Setup)?;
        let Some(claim) = store.queue().claim_of(queue, id, row_id)? else {
            log::warn!("{queue} {id} is no longer this worker's: it changed hands before it began");
            return Ok(None);
        };
        let crawl = match queue {
            Queue::Crawls => Some(id),
            Queue::Snapshots => store.crawls().snapshot(id)?.map(|s| s.crawl_id),
        };
        let (run_as, crawl_user) = decided
            .for_crawl(crawl, &config)
            .map_err(|why| WorkerError::Setup(format!("{queue} {id}: {why}")))?;
        store.fence_to(claim);
        let timing = Timing::from_config(&config);
        let mut supervisor = Supervisor::new(timing, store.marker_namespace()?, Some(row_id))?;
        // Under cgroup containment the daemon placed this worker in its row's cgroup (in the
        // `supervisor` leaf) and named that cgroup: its children go below it.
        if let Some(dir) = std::env::var_os(crate::cgroup::CGROUP_ENV) {
            supervisor.contain_in(crate::cgroup::Cgroup::at(dir));
        }
        supervisor.hold_lease(Lease {
            claim,
            owner: row_id,
            duration: config.timeouts.lease,
        });
        Ok(Some(Context {
            config,
            store,
            row_id,
            supervisor,
            interrupted: false,
            torn_down: Vec::new(),
            deferred: Vec::new(),
            run_as,
            _crawl_user: crawl_user,
            watches: Watches::default(),
            ended_by: None,
            failed: false,
        }))
    }

    /// Waits for the next events (or `timer`) and handles those every worker handles alike;
    /// returns the exits for the caller.
    fn next_exits(&mut self, timer: Option<Instant>) -> Result<Vec<Exit<O>>, WorkerError> {
        let mut exits = std::mem::take(&mut self.deferred);
        // Exits whose records the busy database refused are given again soon.
        let retry = (!exits.is_empty()).then(|| self.store.outbox().next_try());
        let watch = self
            .ended_by
            .is_none()
            .then(|| self.watches.next_due())
            .flatten();
        let timer = timer.into_iter().chain(retry).chain(watch).min();
        let events = self.supervisor.wait(&self.store, timer)?;
        for event in events {
            match event {
                Event::Exited {
                    row_id,
                    owner,
                    outcome,
                    reason,
                    leaked,
                    ..
                } => exits.push(Exit {
                    row: row_id,
                    owner,
                    outcome,
                    reason,
                    leaked,
                }),
                Event::Signal(Signal::TERM | Signal::INT) | Event::LeaseLost => self.interrupt(),
                // (A pool worker's — a crawl worker's snapshot workers —: its pool recovers the
                // work it held. A hook's teardown ends in its exit, which its runner records.)
                Event::TornDown {
                    report,
                    owner: Some(owner),
                } if owner != O::HOOKS => self.torn_down.push(report.root_row),
                Event::TornDown { .. } => {}
                Event::Signal(_) | Event::Ready(_) | Event::Timer => {}
            }
        }
        if self.ended_by.is_none() && !self.interrupted {
            if let Some((limit, what)) = self.watches.reached() {
                self.end_by(limit, &what);
            }
        }
        Ok(exits)
    }

    /// [`Context::next_exits`], with the exits of the runs `runner` took over from a worker that
    /// died before recording them (`hooks::unrecorded`).
    fn next_exits_of(
        &mut self,
        runner: &mut HookRunner,
        timer: Option<Instant>,
    ) -> Result<Vec<Exit<O>>, WorkerError> {
        let mut exits = self.next_exits(timer)?;
        exits.extend(
            (runner.take_ended_unrecorded().into_iter()).map(|(row, outcome, reason)| Exit {
                row,
                owner: O::HOOKS,
                outcome,
                reason,
                leaked: false,
            }),
        );
        Ok(exits)
    }

    /// `limit` was reached: what runs is torn down as a cancel would, and the work is sealed
    /// naming it once the children are gone.
    fn end_by(&mut self, limit: Limit, what: &str) {
        log::warn!(
            "{} reached ({what}): tearing down what runs; the work is sealed as ended by it",
            limit.flag()
        );
        self.ended_by = Some(limit);
        self.supervisor.stop_all(&self.store, EndReason::Killed);
    }

    fn interrupt(&mut self) {
        // A worker hears SIGTERM from each supervisor above it (its parent and the daemon), so a
        // repeated one is not an escalation here: the daemon escalates by killing the tree itself.
        if self.interrupted {
            return;
        }
        self.interrupted = true;
        match self.teardown_above() {
            Some(kill_due) => {
                log::info!(
                    "interrupted by a teardown from above: leaving its signals to it, reaping \
                     the children, leaving the work to be requeued"
                );
                self.supervisor.leave_teardown_above(kill_due);
            }
            None => {
                log::info!("interrupted: tearing down and leaving the work to be requeued");
                self.supervisor.stop_all(&self.store, EndReason::Killed);
            }
        }
    }

    /// Records a hook's exit on its result, with what `also` writes of it, in one transaction
    /// (unless this worker was interrupted: then the result is left to run again); returns what
    /// it reported.
    fn record_hook(
        &mut self,
        runner: &mut HookRunner,
        exit: Exit<O>,
        also: impl FnOnce(&Store, &Outcome) -> Result<(), StoreError>,
    ) -> Result<Option<Outcome>, StoreError> {
        // (Ended by a limit, its open results are cancelled when it is sealed.)
        if self.interrupted
            || self.ended_by.is_some()
            || (exit.reason == EndReason::Killed && self.teardown_above().is_some())
        {
            // Torn down with this worker (whose SIGTERM may not have arrived yet): an
            // interruption, not the hook's failure — the result is left to run again.
            return Ok(None);
        }
        let exit = (exit.row, exit.outcome, exit.reason);
        runner.on_exit(&mut self.supervisor, &self.store, exit, also)
    }

    /// What became of handling `exit`: an exit whose records the busy database refused is kept
    /// and given again after the next turn (its handling changed nothing).
    fn handled(&mut self, exit: Exit<O>, result: Result<(), StoreError>) -> Result<(), StoreError> {
        let result = self.unless_lost(result);
        match result {
            Err(err) if err.is_busy() => {
                if self.deferred.is_empty() {
                    // (Routine: the loop never waits for the lock; see `store::busy`.)
                    log::debug!("row {}: its end is recorded later: {err}", exit.row);
                }
                self.deferred.push(exit);
                Ok(())
            }
            other => other,
        }
    }

    /// What a write of work that the fence refused means: the work changed hands (this worker
    /// was paused or cut off past its lease, and another took it over). The worker is
    /// interrupted — it tears its hooks down and exits without writing anything more for it —
    /// and the write is not an error of the worker.
    fn unless_lost<T: Default>(&mut self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        match result {
            Err(err) if err.is_fenced() => {
                log::error!("{err}: this worker lost its work");
                self.interrupt();
                Ok(T::default())
            }
            other => other,
        }
    }

    /// Runs `write` until the database takes it, turning the loop meanwhile (exits that arrive
    /// are kept for the caller); `None` if the worker was interrupted first (also by a write
    /// the fence refused).
    fn persist<T>(
        &mut self,
        mut write: impl FnMut(&Store) -> Result<T, StoreError>,
    ) -> Result<Option<T>, WorkerError> {
        loop {
            match write(&mut self.store) {
                Err(err) if err.is_busy() => {
                    let retry = self.store.outbox().next_try();
                    let exits = self.next_exits(Some(retry))?;
                    self.deferred.extend(exits);
                    if self.interrupted {
                        return Ok(None);
                    }
                }
                Err(err) if err.is_fenced() => {
                    self.unless_lost(Err::<(), _>(err))?;
                    return Ok(None);
                }
                written => return Ok(Some(written?)),
            }
        }
    }

    /// Runs the scope's hooks until they are done (the background ones stopped at the end of the
    /// scope) or the worker is interrupted, recording each exit through `on_exit`.
    fn run_scope(
        &mut self,
        runner: &mut HookRunner,
        on_exit: impl FnMut(&mut Context<O>, &mut HookRunner, Exit<O>) -> Result<(), StoreError>,
    ) -> Result<(), WorkerError> {
        // (Interrupted or ended by a limit, its hooks are torn down all at once, not one by one.)
        if !self.interrupted && self.ended_by.is_none() {
            runner.end_scope(&mut self.supervisor, &self.store);
        }
        self.run_hooks_until(runner, HookRunner::done, on_exit)
    }

    /// Runs the scope's hooks until every one has started and no foreground hook runs.
    fn run_foreground(
        &mut self,
        runner: &mut HookRunner,
        on_exit: impl FnMut(&mut Context<O>, &mut HookRunner, Exit<O>) -> Result<(), StoreError>,
    ) -> Result<(), WorkerError> {
        // From the first hook on, deadlines run: a write no longer waits long for another
        // process's lock (see `store::busy`); what it could not write is retried.
        self.store.set_patience(Patience::Loop)?;
        runner.start_next(&mut self.supervisor, &self.store)?;
        self.run_hooks_until(runner, HookRunner::foreground_done, on_exit)
    }

    /// Turns the loop for `runner` until `done` says so or the worker is interrupted.
    fn run_hooks_until(
        &mut self,
        runner: &mut HookRunner,
        done: fn(&HookRunner) -> bool,
        mut on_exit: impl FnMut(&mut Context<O>, &mut HookRunner, Exit<O>) -> Result<(), StoreError>,
    ) -> Result<(), WorkerError> {
        while !self.interrupted && self.ended_by.is_none() && !done(runner) {
            let timer = runner.next_timer(&self.store);
            for exit in self.next_exits_of(runner, timer)? {
                let handled = on_exit(self, runner, exit);
                self.handled(exit, handled)?;
            }
            runner.after_turn(&mut self.supervisor, &self.store)?;
        }
        Ok(())
    }

    /// When SIGKILL is due to this worker if a teardown from above has signalled it (recorded
    /// before it is sent, so this is known before the signal arrives).
    fn teardown_above(&self) -> Option<Instant> {
        let row = self.store.processes().get(self.row_id).ok().flatten()?;
        if row.sigterm_at.is_none() && row.sigkill_at.is_none() {
            return None;
        }
        // (Wall-clock ms, as the teardown recorded it; a step of the clock moves the
        // moment this worker takes over, never a signal above.)
        let remaining = row.kill_at.map_or(Duration::ZERO, |at| {
            Duration::from_millis(u64::try_from(at - now_ms()).unwrap_or(0))
        });
        Some(Instant::now() + remaining)
    }

    /// Tears every remaining child (and leftover) down, each until its own deadline but at least
    /// `min_grace`, and waits until all are gone, recording each exit through `on_exit`.
    fn drain(
        &mut self,
        mut on_exit: impl FnMut(&mut Context<O>, Exit<O>) -> Result<(), StoreError>,
    ) -> Result<(), WorkerError> {
        self.supervisor.stop_all(&self.store, EndReason::Killed);
        // Done means empty: no child left, and no unknown one (an escapee spawned meanwhile,
        // e.g. by a SIGTERM trap) — nothing is handed up silently.
        loop {
            while self.supervisor.has_work() || !self.deferred.is_empty() {
                for exit in self.next_exits(None)? {
                    let handled = on_exit(self, exit);
                    self.handled(exit, handled)?;
                }
            }
            if self.supervisor.escapees_settled(&self.store) {
                break;
            }
        }
        self.supervisor.reap_now(&self.store);
        self.supervisor.settle_before_exit(&self.store);
        Ok(())
    }

    /// Starts snapshot workers for due snapshots (a crawl worker's pool).
    fn fill(&mut self, pool: &mut WorkerPool<O>) -> Result<(), StoreError> {
        pool.fill(&self.config, &mut self.supervisor, &self.store)
    }
}
