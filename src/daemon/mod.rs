//! The daemon: the orchestrator's event loop and shutdown (this file); its state (`state`);
//! start-up (`startup`); telling the host it started (`started`); reloading the config
//! (`reload`); installs of the plugins' binaries (`install`); exports into ArchiveBox
//! collections (`export`); serving an ArchiveBox collection's queue (`archivebox`); one handler
//! per control request (`handlers`).
//!
//! Invariants: one thread runs the [`Supervisor<DaemonChild>`] loop and owns every piece of the daemon's
//! state; on a shared (PostgreSQL) store a second thread only listens for LISTEN/NOTIFY and wakes
//! the loop (`store::listen`), touching nothing else; the web view's threads (`web`, started
//! beside the daemon where `[web] listen` says) read the store through connections of their own
//! and never reach the loop. Signals arrive as events; SIGCHLD reaps
//! through the supervisor, the only place the daemon waits on a child. With nothing to do the loop
//! sleeps in `poll` with no timeout; its timers are real deadlines only (a SIGKILL deadline, the
//! moment a backed-off crawl becomes due, a retry after the store failed). The daemon is a child
//! subreaper, so whatever its children leave behind is re-parented to it and reaped here too. It
//! claims crawls and starts one crawl worker per crawl (a [`WorkerPool`]), at most
//! `limits.max_crawl_workers` at once, whenever something may have made room or work: start, an
//! `add` request, a worker's exit, a timer.

mod archivebox;
mod database;
mod egress;
use database::Retry;
mod error;
pub use error::DaemonError;
mod export;
mod fleet;
mod handlers;
mod heartbeat;
mod install;
mod reload;
mod schedules;
mod stale;
mod started;
mod startup;
mod state;

use state::State;

use crate::config::Config;
use crate::control::server::Server;
use crate::domain::EndReason;
use crate::liveness;
use crate::lock::DataDirLock;
use crate::notify::Notifier;
use crate::pool::WorkerEnd;
use crate::signal::Signal;
use crate::store::{Store, StoreError};
use crate::supervisor::{DaemonChild, Event, Supervisor};
use crate::teardown::Report;
use crate::verbs::crawl::Admitted;
use mio::Token;
use std::time::{Duration, Instant};

const CONTROL: Token = Token(1);

/// How a run of the daemon ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shutdown {
    /// What `abxd` exits with.
    pub exit_code: i32,
    /// The signal (SIGTERM, SIGINT) that asked for it, if one did.
    pub signal: Option<Signal>,
}

pub struct Daemon {
    state: State,
    supervisor: Supervisor<DaemonChild>,
    server: Server,
    notifier: Notifier,
    /// Recovery is over and the start-up's code was given back (see `memory`).
    started: bool,
    _lock: DataDirLock,
}

impl Daemon {
    pub fn config(&self) -> &Config {
        &self.state.config
    }

    /// Why `crawl` may not run here, if it may not: it must be restricted and the kernel cannot
    /// (`abxd run` asks before it enqueues, as `add` does).
    pub fn egress_refusal(&self, crawl: &Admitted) -> Option<String> {
        egress::refusal(&crawl.spec().rules, &self.state.egress)
    }

    /// Enqueues a crawl from inside the daemon's process and claims no other (`abxd run`).
    pub fn add_own_crawl(&mut self, crawl: &Admitted) -> Result<i64, StoreError> {
        let id = crate::verbs::crawl::enqueue(&self.state.store, &self.state.config, crawl)?;
        self.state.wake = true;
        self.state.crawls.claim_only(id);
        self.state.fleet.lend_nothing();
        Ok(id)
    }

    /// Runs until a clean shutdown has torn every child down. Returns the exit code.
    pub fn run(self) -> Result<i32, DaemonError> {
        Ok(self.run_until(None, |_| false)?.exit_code)
    }

    /// Runs until shutdown, or until `done` says so (then shuts down); `tick` wakes the loop
    /// at least that often to ask `done`.
    pub fn run_until(
        mut self,
        tick: Option<Duration>,
        mut done: impl FnMut(&Store) -> bool,
    ) -> Result<Shutdown, DaemonError> {
        loop {
            self.state.check_database();
            if !self.state.stopping && self.state.orphans.is_empty() {
                if done(&self.state.store) {
                    self.stop();
                } else if std::mem::take(&mut self.state.wake) && self.state.claiming() {
                    self.fill_crawl_workers();
                }
            }
            if self.state.stopping
                && !self.supervisor.has_work()
                && self.supervisor.escapees_settled(&self.state.store)
            {
                break;
            }
            let just_started = self.tell_systemd();
            let due = self.next_timer();
            let tick_at = tick.map(|t| Instant::now() + t);
            let timer = [due, tick_at, self.notifier.next_deadline()]
                .into_iter()
                .flatten()
                .min();
            self.before_sleep(timer, just_started);
            let events = self.supervisor.wait(&self.state.store, timer)?;
            self.notifier.ping_if_due(Instant::now());
            self.state.fleet_turn(&mut self.supervisor);
            for event in events {
                // (A tick or the watchdog's ping only asks `done` again: no timer of the
                // daemon's own came due, so there is nothing to claim or retry.)
                if event == Event::Timer && due.is_none_or(|at| at > Instant::now()) {
                    continue;
                }
                self.on_event(event);
            }
            for (token, answer) in handlers::retry_parked(&mut self.state, &mut self.supervisor) {
                self.server.reply(token, &answer);
            }
            self.state.truncate_wal_at = self.state.keep_wal_small();
            handlers::prune_if_due(&mut self.state);
            self.look_at_disk();
        }
        for event in self.supervisor.reap_now(&self.state.store) {
            if let Event::Exited {
                row_id, outcome, ..
            } = event
            {
                log::debug!("at exit: row {row_id} ended: {outcome}");
            }
        }
        self.supervisor.settle_before_exit(&self.state.store);
        let own = self.state.orchestrator_id;
        if let Err(err) = liveness::finish_own(&self.state.store, own, "clean shutdown") {
            log::error!("cannot record the orchestrator's end: {err}");
        }
        if let Some(lost) = &self.state.database_lost {
            self.state.save_database(lost);
        }
        self.state.containment.leave();
        log::info!("abxd stopped");
        Ok(Shutdown {
            exit_code: self.state.exit_code,
            signal: self.state.stopped_by,
        })
    }

    fn on_event(&mut self, event: Event<DaemonChild>) {
        match event {
            Event::Exited {
                row_id,
                owner,
                outcome,
                leaked,
                ..
            } => match owner {
                DaemonChild::CrawlWorkers => self.crawl_worker_ended(row_id, leaked),
                DaemonChild::LentSnapshotWorkers => self.state.lent_worker_ended(row_id, leaked),
                DaemonChild::Installer => {
                    if self.state.installer_ended(row_id, outcome) {
                        self.continue_install();
                    }
                }
                DaemonChild::Exporter => {
                    self.state
                        .export_ended(&mut self.supervisor, row_id, outcome);
                }
                DaemonChild::QueueServer => {
                    self.state
                        .queue_turn_ended(&mut self.supervisor, row_id, outcome);
                }
                // A child of `abxctl spawn` (debug only): nobody's work.
                DaemonChild::Operator => {}
            },
            Event::TornDown { report, owner } => self.torn_down(report, owner),
            Event::Signal(signal @ (Signal::TERM | Signal::INT)) => {
                self.state.stopped_by.get_or_insert(signal);
                self.stop()
            }
            Event::Signal(Signal::HUP) => self.reload(),
            Event::Signal(_) | Event::LeaseLost => {}
            Event::Ready(crate::store::listen::WORK_CHANGED) => {
                self.state.wake |= self.state.fleet.woken();
                // (Another host may have added, changed or fired a schedule.)
                self.state.look_at_schedules();
            }
            Event::Ready(stale::STALE_CGROUPS) => self.state.stale_cgroups_changed(),
            Event::Ready(token) => self.on_control(token),
            Event::Timer => {
                self.state.retry_claims_at = None;
                if std::mem::take(&mut self.state.retry_recovery) {
                    self.state.recover(None, true);
                }
                self.state.wake = true;
            }
        }
    }

    /// When the loop must wake without an event: a backed-off crawl becoming due, a schedule's
    /// next occurrence, a retry after a store failure.
    fn next_timer(&self) -> Option<Instant> {
        let state = &self.state;
        // (Only while a claim could follow: while binaries are installed or hooks have no user
        // to run as, a due crawl is no reason to wake — that ends with an event of its own.)
        let due = (state.claiming() && !state.installer.busy() && state.hooks.is_ok())
            .then(|| state.crawls.next_due(&state.config, &state.store))
            .flatten();
        let parked = (!state.parked_requests.is_empty()).then(|| state.store.outbox().next_try());
        let schedule = state
            .claiming()
            .then(|| state.next_schedule_due())
            .flatten();
        [
            due,
            schedule,
            state.retry_claims_at,
            parked,
            state.truncate_wal_at,
            state.prune_more_at,
            state.fleet.next_due(&state.config, &state.store),
            state.next_queue_turn(),
            state
                .disk
                .next_due(self.supervisor.has_work(), Instant::now()),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Looks at free space where abxd writes when a look is due (while crawls run, or space is
    /// short): says once when it runs short and once when it is back, and claims again then.
    fn look_at_disk(&mut self) {
        let now = Instant::now();
        if !self.state.disk.is_due(self.supervisor.has_work(), now) {
            return;
        }
        let was_short = self.state.disk.short().is_some();
        let disk = crate::pool::free_space(&self.state.config);
        let min = self.state.config.limits.min_free_space;
        if self.state.disk.look(disk, min, now).is_none() && was_short {
            self.state.wake = true;
        }
    }

    /// Claims due crawls and starts a worker for each, up to the limit — none while hooks
    /// would run as root unasked (`hook_user`; `status` says why).
    fn fill_crawl_workers(&mut self) {
        let state = &mut self.state;
        state.fire_schedules();
        state.export_next(&mut self.supervisor);
        state.serve_queue(&mut self.supervisor);
        if state.hooks.is_err() || state.provision_due_crawls(&mut self.supervisor) {
            return;
        }
        let filled = state
            .crawls
            .fill(&state.config, &mut self.supervisor, &state.store);
        state.retry_later_on(filled, Retry::Claims);
    }

    fn crawl_worker_ended(&mut self, row_id: i64, leaked: bool) {
        let state = &mut self.state;
        let ended = state
            .crawls
            .on_exit(&state.config, &state.store, row_id, leaked, true);
        match ended {
            Ok(None) => log::error!("row {row_id}: no crawl worker of the daemon's pool"),
            Ok(Some(end)) => {
                state.crawls.log_end(row_id, end);
                if let WorkerEnd::Sealed { .. } = end {
                    handlers::apply_retention(state);
                }
            }
            Err(err) => {
                state.crawls.give_up_on(row_id, leaked);
                state.retry_later_on(Err(err), Retry::Recovery)
            }
        }
        state.wake = true;
    }

    /// SIGTERM or SIGINT: tear every child down, then exit; a second one kills at once.
    fn stop(&mut self) {
        if self.state.stopping {
            log::warn!("signalled again while stopping: killing every child now");
            self.supervisor.hurry(&self.state.store);
            return;
        }
        log::info!(
            "stopping: {} children to tear down",
            self.supervisor.child_count()
        );
        self.state.stopping = true;
        self.notifier.stopping();
        self.supervisor
            .stop_all(&self.state.store, EndReason::Killed);
    }

    fn on_control(&mut self, token: Token) {
        if !self.server.owns(token) {
            return;
        }
        let Daemon {
            server,
            supervisor,
            state,
            ..
        } = self;
        server.on_event(token, &mut |token, request| {
            handlers::handle(state, supervisor, token, request)
        });
    }

    /// A teardown finished: its owner recovers the work it held up (`owner`: whose child its
    /// root row was; none for recovery's orphan trees), and whoever waits for it is answered.
    fn torn_down(&mut self, report: Report, owner: Option<DaemonChild>) {
        let state = &mut self.state;
        match owner {
            None => {
                if state.orphans.remove(&report.root_row) && state.orphans.is_empty() {
                    log::info!("recovery: every orphan tree is gone");
                    state.clear_stale_cgroups(self.supervisor.registry());
                    state.recover(None, false);
                    state.wake = true;
                }
            }
            Some(DaemonChild::CrawlWorkers) => {
                let recovered =
                    state
                        .crawls
                        .on_torn_down(&state.config, &state.store, report.root_row);
                match recovered {
                    Ok(Some(_)) => state.wake = true,
                    Ok(None) => {}
                    Err(err) => {
                        state.crawls.give_up_on(report.root_row, false);
                        state.retry_later_on(Err(err), Retry::Recovery)
                    }
                }
            }
            Some(DaemonChild::LentSnapshotWorkers) => state.lent_torn_down(report.root_row),
            // Installs, exports and `abxctl spawn`: their exits say what became of them.
            Some(
                DaemonChild::Installer
                | DaemonChild::Exporter
                | DaemonChild::QueueServer
                | DaemonChild::Operator,
            ) => {}
        }
        log::info!(
            "teardown of row {} finished{}",
            report.root_row,
            if report.complete {
                ""
            } else {
                " incomplete: processes survived SIGKILL"
            }
        );
        let response = handlers::torn_down(&report);
        for token in state.waiting.remove(&report.root_row).unwrap_or_default() {
            self.server.reply(token, &response);
        }
    }
}
