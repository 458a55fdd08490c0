//! The daemon: start-up, the orchestrator's event loop, and shutdown.
//!
//! Invariants: one thread, one [`Supervisor`] loop. Signals arrive as events; SIGCHLD reaps
//! through the supervisor, the only place the daemon waits on a child. With nothing to do the loop
//! sleeps in `poll` with no timeout; its timers are real deadlines only (a SIGKILL deadline, the
//! moment a backed-off crawl becomes due). The daemon is a child subreaper, so whatever its
//! children leave behind is re-parented to it and reaped here too. It claims crawls and starts
//! one crawl worker per crawl, at most `limits.max_crawl_workers` at once, whenever something may
//! have made room or work: start, an `abxctl add` (a `wake` request), a worker's exit, a timer.

use crate::config::Config;
use crate::control::access::Policy;
use crate::control::protocol::{ErrorCode, Request, Response, StatusInfo};
use crate::control::server::Server;
use crate::identity;
use crate::lock::{DataDirLock, LockError};
use crate::notify::Notifier;
use crate::recovery;
use crate::spawn::{Logs, SpawnRequest};
use crate::store::{now_ms, EndReason, ExitOutcome, Kind, NewProcess, Queue, Store, StoreError};
use crate::supervisor::{ChildPolicy, Event, Supervisor};
use crate::worker;
use mio::Token;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const CONTROL: Token = Token(1);

/// How long the daemon waits before it claims again after the store failed (e.g. a full disk).
const STORE_RETRY: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("database {path}: {cause}")]
    Store { path: PathBuf, cause: StoreError },
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot listen on control socket {path}: {cause}")]
    Socket {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("event loop: {0}")]
    Io(#[from] std::io::Error),
}

/// The daemon's own state, apart from the loop and the socket.
struct State {
    config: Config,
    store: Store,
    orchestrator_id: i64,
    started_at_ms: i64,
    stopping: bool,
    /// Crawl workers by row id → the crawl each works on.
    crawl_workers: HashMap<i64, i64>,
    /// Spawned through `abxctl spawn` (debug only).
    debug_children: usize,
    /// Set by a `wake` request: look for due crawls.
    wake: bool,
    /// After the store failed a claim or a recovery: when to try again.
    retry_claims_at: Option<Instant>,
    /// A recovery failed: recover all ownerless work at the next retry.
    retry_recovery: bool,
    /// Connections waiting for the teardown of a row to finish.
    waiting: HashMap<i64, Vec<Token>>,
    /// Orphan trees of a previous incarnation still being torn down: no work is claimed until
    /// they are gone, then ownerless work is recovered.
    orphans: BTreeSet<i64>,
    /// Crawls whose dead worker left processes: recovered once that teardown (by worker row)
    /// has finished.
    recover_after_teardown: HashMap<i64, i64>,
}

pub struct Daemon {
    state: State,
    supervisor: Supervisor,
    server: Server,
    notifier: Notifier,
    _lock: DataDirLock,
}

impl Daemon {
    /// Takes the data dir, opens the store, records the orchestrator and listens. Errors leave
    /// nothing running.
    pub fn start(config: Config) -> Result<Daemon, DaemonError> {
        config.check_for_daemon()?;
        let lock = DataDirLock::acquire(&config.data_dir)?;
        mark_inherited_fds_close_on_exec();
        if let Err(err) = nix::sys::prctl::set_child_subreaper(true) {
            log::warn!("cannot become a child subreaper ({err}): orphans will escape to init");
        }
        let store_err = |cause| DaemonError::Store {
            path: config.database.clone(),
            cause,
        };
        let mut store = Store::open(&config.database).map_err(store_err)?;
        let instance = store.marker_namespace().map_err(store_err)?;
        let orchestrator_id = record_self(&mut store).map_err(store_err)?;
        let supervisor = Supervisor::new(config.timing(), instance.clone(), Some(orchestrator_id))?;
        let reconciliation =
            recovery::reconcile(&store, &instance, Some(orchestrator_id)).map_err(store_err)?;
        for line in recovery::describe(&reconciliation, &recovery::WorkPlan::default()) {
            log::info!("recovery: {line}");
        }
        recovery::apply_lost(&mut store, &reconciliation.lost).map_err(store_err)?;
        let policy = Policy::new(config.control.group.as_deref(), config.control.public_read)
            .map_err(|cause| DaemonError::Socket {
                path: config.control.socket.clone(),
                cause: std::io::Error::other(format!("control.group: {cause}")),
            })?;
        let server = Server::bind(
            &config.control.socket,
            supervisor.registry(),
            CONTROL,
            config.control.max_frame_bytes,
            policy,
        )
        .map_err(|cause| DaemonError::Socket {
            path: config.control.socket.clone(),
            cause,
        })?;
        log::info!(
            "abxd {} ready: pid {}, database {}, socket {}",
            env!("CARGO_PKG_VERSION"),
            std::process::id(),
            config.database.display(),
            config.control.socket.display()
        );
        let mut daemon = Daemon {
            state: State {
                started_at_ms: now_ms(),
                config,
                store,
                orchestrator_id,
                stopping: false,
                crawl_workers: HashMap::new(),
                debug_children: 0,
                wake: true,
                retry_claims_at: None,
                retry_recovery: false,
                waiting: HashMap::new(),
                orphans: BTreeSet::new(),
                recover_after_teardown: HashMap::new(),
            },
            supervisor,
            server,
            notifier: Notifier::from_env(),
            _lock: lock,
        };
        let orphan_rows: Vec<i64> = reconciliation.orphans.iter().map(|o| o.row).collect();
        daemon.state.orphans.extend(&orphan_rows);
        daemon
            .supervisor
            .stop_orphans(&mut daemon.state.store, &orphan_rows);
        if reconciliation.orphans.is_empty() {
            recover_work(&mut daemon.state, None, false);
        }
        Ok(daemon)
    }

    pub fn config(&self) -> &Config {
        &self.state.config
    }

    /// Enqueues a crawl from inside the daemon's process (`abxd run`).
    pub fn add_crawl(
        &mut self,
        urls: &[String],
        depth: u32,
        plugins: Option<&[String]>,
    ) -> Result<i64, StoreError> {
        self.state.wake = true;
        self.state.store.add_crawl(urls, depth, plugins)
    }

    /// Runs until a clean shutdown has torn every child down. Returns the exit code.
    pub fn run(self) -> Result<i32, DaemonError> {
        self.run_until(None, |_| false)
    }

    /// Runs until shutdown, or until `done` says so (then shuts down); `tick` wakes the loop
    /// at least that often to ask `done`.
    pub fn run_until(
        mut self,
        tick: Option<Duration>,
        mut done: impl FnMut(&Store) -> bool,
    ) -> Result<i32, DaemonError> {
        loop {
            if !self.state.stopping && self.state.orphans.is_empty() {
                if done(&self.state.store) {
                    self.stop(SIGTERM);
                } else if std::mem::take(&mut self.state.wake) {
                    self.fill_crawl_workers();
                }
            }
            if self.state.stopping && !self.supervisor.has_work() {
                break;
            }
            if self.state.orphans.is_empty() && !self.notifier.is_ready() {
                let status = self.status_line();
                self.notifier.ready(status);
            } else if self.notifier.enabled() {
                let status = self.status_line();
                self.notifier.status(status);
            }
            let timer = [self.next_timer(tick), self.notifier.next_deadline()]
                .into_iter()
                .flatten()
                .min();
            let events = self.supervisor.wait(&mut self.state.store, timer)?;
            self.notifier.ping_if_due(Instant::now());
            for event in events {
                match event {
                    Event::Exited {
                        row_id,
                        outcome,
                        leaked,
                        ..
                    } => self.child_ended(row_id, outcome, leaked),
                    Event::TornDown(report) => self.torn_down(report),
                    Event::Signal(SIGTERM | SIGINT) => self.stop(SIGTERM),
                    Event::Signal(SIGHUP) => self.reload(),
                    Event::Signal(_) | Event::LeaseLost => {}
                    Event::Ready(token) => self.on_control(token),
                    Event::Timer => {
                        self.state.retry_claims_at = None;
                        if std::mem::take(&mut self.state.retry_recovery) {
                            recover_work(&mut self.state, None, true);
                        }
                        self.state.wake = true;
                    }
                }
            }
        }
        for event in self.supervisor.reap_now(&mut self.state.store) {
            log::debug!("at exit: {event:?}");
        }
        if let Err(err) = self.state.store.record_end(
            self.state.orchestrator_id,
            Some(ExitOutcome::Code(0)),
            EndReason::Exited,
            Some("clean shutdown"),
        ) {
            log::error!("cannot record the orchestrator's end: {err}");
        }
        log::info!("abxd stopped");
        Ok(0)
    }

    /// The STATUS= line for systemd: what runs and what waits.
    fn status_line(&self) -> String {
        let queued = self.state.store.queued_count(Queue::Crawls).unwrap_or(0);
        format!(
            "{} crawl workers, {queued} crawls queued",
            self.state.crawl_workers.len()
        )
    }

    /// When the loop must wake without an event: a backed-off crawl becoming due, or `tick`.
    fn next_timer(&self, tick: Option<Duration>) -> Option<Instant> {
        let now = Instant::now();
        let due = (!self.state.stopping)
            .then(|| self.state.store.next_retry_at(Queue::Crawls).ok().flatten())
            .flatten()
            .filter(|_| {
                self.state.crawl_workers.len() < self.state.config.limits.max_crawl_workers as usize
            })
            .map(|at| now + Duration::from_millis((at - now_ms()).max(0) as u64));
        [due, tick.map(|t| now + t), self.state.retry_claims_at]
            .into_iter()
            .flatten()
            .min()
    }

    /// Claims due crawls and starts a worker for each, up to the limit.
    fn fill_crawl_workers(&mut self) {
        let state = &mut self.state;
        while state.crawl_workers.len() < state.config.limits.max_crawl_workers as usize {
            let crawl_id = match state
                .store
                .claim(Queue::Crawls, None, state.config.timeouts.lease)
            {
                Ok(Some(id)) => id,
                Ok(None) => return,
                Err(err) => {
                    // E.g. the disk is full: claim nothing now, and look again a little later
                    // (an idle daemon otherwise waits for an event that may not come).
                    log::error!(
                        "cannot claim a crawl: {err}; trying again in {}s",
                        STORE_RETRY.as_secs()
                    );
                    state.retry_claims_at = Some(Instant::now() + STORE_RETRY);
                    return;
                }
            };
            let request = worker::worker_request(
                &state.config,
                Kind::CrawlWorker,
                state.orchestrator_id,
                crawl_id,
                None,
            );
            match self
                .supervisor
                .spawn(&mut state.store, &request, ChildPolicy::WORKER)
            {
                Ok(spawned) => {
                    log::info!("crawl {crawl_id}: worker row {} started", spawned.row_id);
                    if let Err(err) = state
                        .store
                        .set_owner(Queue::Crawls, crawl_id, spawned.row_id)
                    {
                        log::error!("crawl {crawl_id}: cannot record its owner: {err}");
                    }
                    state.crawl_workers.insert(spawned.row_id, crawl_id);
                }
                Err(err) => {
                    log::error!("crawl {crawl_id}: cannot start its worker: {err}");
                    requeue_crawl(state, crawl_id);
                    return;
                }
            }
        }
    }

    fn child_ended(&mut self, row_id: i64, outcome: ExitOutcome, leaked: bool) {
        let state = &mut self.state;
        let Some(crawl_id) = state.crawl_workers.remove(&row_id) else {
            state.debug_children = state.debug_children.saturating_sub(1);
            return;
        };
        let sealed = matches!(state.store.crawl(crawl_id), Ok(Some(c)) if c.status == "sealed");
        if sealed {
            log::info!("crawl {crawl_id} sealed; its worker exited ({outcome:?})");
        } else if leaked {
            log::warn!(
                "crawl {crawl_id}: worker ended ({outcome:?}) before sealing, leaving processes: \
                 recovering it once they are torn down"
            );
            state.recover_after_teardown.insert(row_id, crawl_id);
        } else {
            log::warn!(
                "crawl {crawl_id}: worker ended ({outcome:?}) before sealing: recovering it"
            );
            recover_work(state, Some(crawl_id), true);
        }
        state.wake = true;
    }

    fn stop(&mut self, signal: i32) {
        if self.state.stopping {
            log::warn!("signal {signal} while stopping: killing every child now");
            self.supervisor.hurry(&mut self.state.store);
            return;
        }
        log::info!(
            "stopping: {} children to tear down",
            self.supervisor.child_count()
        );
        self.state.stopping = true;
        self.notifier.stopping();
        self.supervisor
            .stop_all(&mut self.state.store, EndReason::Killed);
    }

    fn reload(&mut self) {
        let state = &mut self.state;
        match Config::load(&state.config.source).and_then(|new| {
            new.check_for_daemon()?;
            Ok(new)
        }) {
            Err(err) => log::error!("reload refused, keeping the running config: {err}"),
            Ok(new) => {
                let changes = new.changes_from(&state.config);
                for restart_only in ["paths.data_dir", "paths.database", "control.socket"] {
                    if changes.iter().any(|c| c.starts_with(restart_only)) {
                        log::warn!("reload: {restart_only} changes only on restart");
                    }
                }
                if changes.is_empty() {
                    log::info!("reload: no changes");
                }
                for change in &changes {
                    log::info!("reload: {change}");
                }
                crate::logging::set_level(new.log.level);
                self.server.set_max_frame_bytes(new.control.max_frame_bytes);
                self.supervisor.set_timing(new.timing());
                state.config = Config {
                    data_dir: state.config.data_dir.clone(),
                    database: state.config.database.clone(),
                    control: crate::config::Control {
                        socket: state.config.control.socket.clone(),
                        ..new.control.clone()
                    },
                    ..new
                };
                state.wake = true;
            }
        }
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
            handle(state, supervisor, token, request)
        });
    }

    /// A teardown finished: answer whoever waits for it, and recover the work it held up.
    fn torn_down(&mut self, report: crate::teardown::Report) {
        let state = &mut self.state;
        if state.orphans.remove(&report.root_row) && state.orphans.is_empty() {
            log::info!("recovery: every orphan tree is gone");
            recover_work(state, None, false);
            state.wake = true;
        }
        if let Some(crawl_id) = state.recover_after_teardown.remove(&report.root_row) {
            recover_work(state, Some(crawl_id), true);
            state.wake = true;
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
        let response = Response::TornDown(report.clone());
        for token in self
            .state
            .waiting
            .remove(&report.root_row)
            .unwrap_or_default()
        {
            self.server.reply(token, &response);
        }
    }
}

fn requeue_crawl(state: &mut State, crawl_id: i64) {
    let restarts = state
        .store
        .crawl(crawl_id)
        .ok()
        .flatten()
        .map(|c| c.restarts);
    let wait = recovery::backoff(&state.config, restarts.unwrap_or(0));
    let retry_at = now_ms() + wait.as_millis() as i64;
    if let Err(err) = state.store.requeue(Queue::Crawls, crawl_id, retry_at) {
        log::error!("crawl {crawl_id}: cannot requeue: {err}");
    }
}

/// Recovers ownerless work (of one crawl, or all), logging each action.
fn recover_work(state: &mut State, crawl: Option<i64>, back_off: bool) {
    let result = recovery::plan_work(&state.store, &state.config, crawl, &BTreeSet::new())
        .and_then(|plan| {
            for line in recovery::describe(&recovery::Reconciliation::default(), &plan) {
                log::info!("recovery: {line}");
            }
            recovery::apply_work(&mut state.store, &state.config, &plan, back_off)
        });
    if let Err(err) = result {
        // E.g. the disk is full: recover everything ownerless again a little later.
        log::error!(
            "recovery failed: {err}; trying again in {}s",
            STORE_RETRY.as_secs()
        );
        state.retry_recovery = true;
        state.retry_claims_at = Some(Instant::now() + STORE_RETRY);
    }
}

fn failed(message: impl std::fmt::Display) -> Response {
    Response::Error {
        code: ErrorCode::Failed,
        message: message.to_string(),
    }
}

fn handle(
    state: &mut State,
    supervisor: &mut Supervisor,
    token: Token,
    request: Request,
) -> Option<Response> {
    match request {
        Request::Status => Some(status(state)),
        Request::Wake => {
            state.wake = true;
            Some(Response::Woken)
        }
        Request::Add {
            urls,
            depth,
            plugins,
        } => Some(add(state, &urls, depth, plugins.as_deref())),
        Request::Spawn {
            argv,
            cwd,
            timeout_ms,
        } => Some(spawn(state, supervisor, argv, cwd, timeout_ms)),
        Request::Kill {
            row,
            pid,
            signal,
            grace_ms,
            wait,
        } => {
            let row = match resolve_live_row(state, row, pid) {
                Ok(row) => row,
                Err(refusal) => return Some(refusal),
            };
            let Some(signal) = rustix::process::Signal::from_named_raw(signal.unwrap_or(15)) else {
                return Some(refused(ErrorCode::Malformed, "not a signal number"));
            };
            let grace = grace_ms
                .map(Duration::from_millis)
                .unwrap_or(state.config.timeouts.kill_grace);
            log::info!(
                "kill request: row {row}, signal {}, grace {grace:?}",
                signal.as_raw()
            );
            supervisor.stop(&mut state.store, row, signal, grace, EndReason::Killed);
            if wait {
                state.waiting.entry(row).or_default().push(token);
                None
            } else {
                Some(Response::TeardownStarted { row })
            }
        }
        Request::Cancel { crawl_id } => cancel(state, supervisor, token, crawl_id),
    }
}

/// Enqueues a crawl a client asked for, and looks for due crawls at once.
fn add(state: &mut State, urls: &[String], depth: u32, plugins: Option<&[String]>) -> Response {
    if urls.is_empty() {
        return refused(ErrorCode::Malformed, "a crawl needs at least one URL");
    }
    if let Some(why) = urls.iter().find_map(|url| Store::invalid_url(url)) {
        return refused(ErrorCode::Malformed, why);
    }
    match state.store.add_crawl(urls, depth, plugins) {
        Ok(crawl_id) => {
            log::info!("crawl {crawl_id} added: {} URLs", urls.len());
            state.wake = true;
            Response::Added { crawl_id }
        }
        Err(err) => failed(format!("cannot enqueue the crawl: {err}")),
    }
}

fn refused(code: ErrorCode, message: impl Into<String>) -> Response {
    Response::Error {
        code,
        message: message.into(),
    }
}

/// The row a kill request names, if it is a live process of the table (and not abxd itself).
fn resolve_live_row(state: &State, row: Option<i64>, pid: Option<i32>) -> Result<i64, Response> {
    let found =
        match (row, pid) {
            (Some(id), None) => state.store.process(id).map_err(failed)?.ok_or_else(|| {
                refused(
                    ErrorCode::NotFound,
                    format!("no process row {id} (see abxctl ps --all)"),
                )
            })?,
            (None, Some(pid)) => state
                .store
                .live_row_by_pid(pid)
                .map_err(failed)?
                .ok_or_else(|| {
                    refused(
                ErrorCode::NotFound,
                format!("pid {pid} is not a live process of abxd's table: refusing to signal it"),
            )
                })?,
            _ => {
                return Err(refused(
                    ErrorCode::Malformed,
                    "name exactly one of a row id or a pid",
                ))
            }
        };
    let alive = found
        .identity
        .as_ref()
        .is_some_and(|id| identity::check(id).is_alive());
    if !found.status.is_live() || !alive {
        return Err(refused(
            ErrorCode::NotFound,
            format!(
                "row {} is not a live process (status {}{}): nothing to kill",
                found.id,
                found.status,
                if found.status.is_live() {
                    ", but its process is gone"
                } else {
                    ""
                }
            ),
        ));
    }
    if found.id == state.orchestrator_id {
        return Err(refused(
            ErrorCode::NotAllowed,
            format!(
                "row {} is abxd itself: stop it with SIGTERM (systemctl stop abxd)",
                found.id
            ),
        ));
    }
    Ok(found.id)
}

/// `abxctl cancel`: seal the crawl as cancelled first (so nothing requeues it), then tear its
/// worker's tree down and answer when it is gone.
fn cancel(
    state: &mut State,
    supervisor: &mut Supervisor,
    token: Token,
    crawl_id: i64,
) -> Option<Response> {
    let crawl = match state.store.crawl(crawl_id) {
        Ok(Some(crawl)) => crawl,
        Ok(None) => return Some(refused(ErrorCode::NotFound, format!("no crawl {crawl_id}"))),
        Err(err) => return Some(failed(err)),
    };
    if crawl.status == "sealed" {
        return Some(refused(
            ErrorCode::NotAllowed,
            format!(
                "crawl {crawl_id} is sealed already ({})",
                crawl.outcome.unwrap_or_default()
            ),
        ));
    }
    if let Err(err) = state.store.cancel_crawl(crawl_id) {
        return Some(failed(err));
    }
    let worker = state
        .crawl_workers
        .iter()
        .find(|(_, c)| **c == crawl_id)
        .map(|(row, _)| *row);
    log::info!("crawl {crawl_id} cancelled");
    match worker {
        Some(row) => {
            let grace = state.config.timeouts.kill_grace;
            supervisor.stop(
                &mut state.store,
                row,
                rustix::process::Signal::TERM,
                grace,
                EndReason::Killed,
            );
            state.waiting.entry(row).or_default().push(token);
            None
        }
        None => Some(Response::TornDown(crate::teardown::Report {
            root_row: 0,
            complete: true,
            processes: Vec::new(),
        })),
    }
}

fn status(state: &State) -> Response {
    let live = match state.store.live_counts_by_kind() {
        Ok(counts) => counts
            .into_iter()
            .map(|(kind, n)| (kind.to_string(), n))
            .collect(),
        Err(err) => return failed(err),
    };
    Response::Status(StatusInfo {
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        started_at_ms: state.started_at_ms,
        uptime_ms: now_ms() - state.started_at_ms,
        database: state.config.database.display().to_string(),
        socket: state.config.control.socket.display().to_string(),
        live,
        recovering: !state.orphans.is_empty(),
    })
}

fn spawn(
    state: &mut State,
    supervisor: &mut Supervisor,
    argv: Vec<String>,
    cwd: Option<String>,
    timeout_ms: Option<u64>,
) -> Response {
    if !state.config.control.allow_debug_spawn {
        return Response::Error {
            code: ErrorCode::NotAllowed,
            message: format!(
                "spawn is a debugging aid and is disabled; set control.allow_debug_spawn = \
                 true in {} to enable it",
                state.config.source.display()
            ),
        };
    }
    if state.stopping {
        return failed("abxd is stopping and starts nothing new");
    }
    let request = SpawnRequest {
        process: NewProcess {
            parent_id: Some(state.orchestrator_id),
            kind: Kind::Hook,
            crawl_id: None,
            snapshot_id: None,
            result_id: None,
            argv,
            cwd: cwd.unwrap_or_else(|| state.config.data_dir.display().to_string()),
            timeout_ms: timeout_ms.map(|ms| ms.min(i64::MAX as u64) as i64),
        },
        env: Vec::new(),
        logs: Logs::InDir(state.config.data_dir.join("logs")),
    };
    match supervisor.spawn(&mut state.store, &request, ChildPolicy::FOREGROUND_HOOK) {
        Ok(spawned) => {
            state.debug_children += 1;
            Response::Spawned {
                id: spawned.row_id,
                pid: spawned.identity.pid,
            }
        }
        Err(err) => failed(err),
    }
}

/// Records the daemon itself as the `orchestrator` row, running, and returns its id.
fn record_self(store: &mut Store) -> Result<i64, StoreError> {
    let pid = std::process::id() as i32;
    let id = store.insert_process(&NewProcess {
        parent_id: None,
        kind: Kind::Orchestrator,
        crawl_id: None,
        snapshot_id: None,
        result_id: None,
        argv: std::env::args().collect(),
        cwd: std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        timeout_ms: None,
    })?;
    let me = identity::of_pid(pid).expect("the running process has an identity");
    let pgid = nix::unistd::getpgrp().as_raw();
    store.record_spawned(id, &me, pgid, None, None)?;
    Ok(id)
}

/// Sets FD_CLOEXEC on every descriptor above stderr that the daemon inherited, so none of them
/// leaks into a hook.
fn mark_inherited_fds_close_on_exec() {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: the number is only passed to fcntl; if it was closed meanwhile, fcntl fails.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let _ = fcntl(borrowed, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
    }
}
