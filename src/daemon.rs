//! The daemon: start-up, the event loop, and shutdown of the orchestrator process.
//!
//! Invariants: one thread, one `mio` loop. Signals (SIGCHLD, SIGTERM, SIGINT, SIGHUP) arrive as
//! events through signal-hook-mio; SIGCHLD drains every ended child through the reaper, the only
//! place abxd waits on a child. With nothing to do the loop sleeps in `poll` with no timeout; the
//! only timer is the teardown's next deadline. The daemon is a child subreaper, so whatever its
//! children leave behind is re-parented to it and reaped here too.

use crate::config::Config;
use crate::control::protocol::{ErrorCode, Request, Response, StatusInfo};
use crate::control::server::Server;
use crate::identity;
use crate::lock::{DataDirLock, LockError};
use crate::reaper;
use crate::spawn::{self, Logs, SpawnRequest};
use crate::store::{EndReason, ExitOutcome, Kind, NewProcess, Store, StoreError};
use crate::teardown::{DeadlineMap, Target};
use mio::{Events, Interest, Poll, Token};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
use signal_hook_mio::v1_0::Signals;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

const SIGNALS: Token = Token(0);
const CONTROL: Token = Token(1);

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("database {path}: {cause}")]
    Store { path: PathBuf, cause: StoreError },
    #[error("cannot create data dir {path}: {cause}")]
    DataDir {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot listen on control socket {path}: {cause}")]
    Socket {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("event loop: {0}")]
    Io(#[from] std::io::Error),
}

/// A live child of the daemon, as the reaper will find it.
struct Child {
    target: Target,
}

pub struct Daemon {
    config: Config,
    store: Store,
    poll: Poll,
    signals: Signals,
    server: Server,
    children: HashMap<i32, Child>,
    teardown: DeadlineMap,
    orchestrator_id: i64,
    started_at_ms: i64,
    stopping: bool,
    _lock: DataDirLock,
}

impl Daemon {
    /// Takes the data dir, opens the store, records the orchestrator and listens. Errors leave
    /// nothing running.
    pub fn start(config: Config) -> Result<Daemon, DaemonError> {
        std::fs::create_dir_all(&config.data_dir).map_err(|cause| DaemonError::DataDir {
            path: config.data_dir.clone(),
            cause,
        })?;
        let lock = DataDirLock::acquire(&config.data_dir)?;
        mark_inherited_fds_close_on_exec();
        if let Err(err) = nix::sys::prctl::set_child_subreaper(true) {
            log::warn!("cannot become a child subreaper ({err}): orphans will escape to init");
        }
        let poll = Poll::new()?;
        let mut signals = Signals::new([SIGCHLD, SIGTERM, SIGINT, SIGHUP])?;
        poll.registry()
            .register(&mut signals, SIGNALS, Interest::READABLE)?;

        let store_err = |cause| DaemonError::Store {
            path: config.database.clone(),
            cause,
        };
        let mut store = Store::open(&config.database).map_err(store_err)?;
        let orchestrator_id = record_self(&mut store).map_err(store_err)?;
        let server = Server::bind(
            &config.control.socket,
            poll.registry(),
            CONTROL,
            config.control.max_frame_bytes,
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
        Ok(Daemon {
            started_at_ms: crate::store::now_ms(),
            config,
            store,
            poll,
            signals,
            server,
            children: HashMap::new(),
            teardown: DeadlineMap::default(),
            orchestrator_id,
            stopping: false,
            _lock: lock,
        })
    }

    /// Runs until a clean shutdown has torn down every child. Returns the exit code.
    pub fn run(mut self) -> Result<i32, DaemonError> {
        let mut events = Events::with_capacity(256);
        while !(self.stopping && self.children.is_empty()) {
            let timeout = self
                .teardown
                .next_deadline()
                .map(|deadline| deadline.saturating_duration_since(Instant::now()));
            if let Err(err) = self.poll.poll(&mut events, timeout) {
                if err.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(err.into());
            }
            for event in events.iter() {
                match event.token() {
                    SIGNALS => self.on_signals(),
                    token => self.on_control(token),
                }
            }
            self.teardown.expire(&mut self.store, Instant::now());
        }
        if let Err(err) = self.store.record_end(
            self.orchestrator_id,
            Some(ExitOutcome::Code(0)),
            EndReason::Exited,
            Some("clean shutdown"),
        ) {
            log::error!("cannot record the orchestrator's end: {err}");
        }
        log::info!("abxd stopped");
        Ok(0)
    }

    fn on_signals(&mut self) {
        let pending: Vec<i32> = self.signals.pending().collect();
        for signal in pending {
            match signal {
                SIGCHLD => self.reap(),
                SIGTERM | SIGINT => self.stop(signal),
                SIGHUP => self.reload(),
                _ => {}
            }
        }
    }

    fn reap(&mut self) {
        for reaped in reaper::reap_ready() {
            let Some(child) = self.children.remove(&reaped.pid) else {
                log::debug!(
                    "reaped pid {} (re-parented, not a recorded child)",
                    reaped.pid
                );
                continue;
            };
            let row_id = child.target.row_id;
            let reason = self.teardown.finished(row_id).unwrap_or(EndReason::Exited);
            log::info!(
                "row {row_id} (pid {}) ended: {:?}",
                reaped.pid,
                reaped.outcome
            );
            if let Err(err) = self
                .store
                .record_end(row_id, Some(reaped.outcome), reason, None)
            {
                log::error!("row {row_id}: cannot record its end: {err}");
            }
        }
    }

    fn stop(&mut self, signal: i32) {
        if self.stopping {
            log::warn!("signal {signal} while stopping: killing every child now");
            self.teardown.hurry(&mut self.store);
            return;
        }
        log::info!(
            "signal {signal}: stopping, {} children to tear down",
            self.children.len()
        );
        self.stopping = true;
        let grace = self.config.timeouts.kill_grace;
        for child in self.children.values() {
            self.teardown.begin(
                &mut self.store,
                child.target.clone(),
                grace,
                EndReason::Killed,
            );
        }
    }

    fn reload(&mut self) {
        match Config::load(&self.config.source) {
            Err(err) => log::error!("reload refused, keeping the running config: {err}"),
            Ok(new) => {
                let changes = new.changes_from(&self.config);
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
                self.config = Config {
                    data_dir: self.config.data_dir.clone(),
                    database: self.config.database.clone(),
                    control: crate::config::Control {
                        socket: self.config.control.socket.clone(),
                        ..new.control.clone()
                    },
                    ..new
                };
            }
        }
    }

    fn on_control(&mut self, token: Token) {
        if !self.server.owns(token) {
            return;
        }
        // Split the borrows: the server drives the connection, the context answers requests.
        let Daemon {
            server,
            poll,
            config,
            store,
            children,
            orchestrator_id,
            started_at_ms,
            stopping,
            ..
        } = self;
        let mut state = RequestContext {
            config,
            store,
            children,
            orchestrator_id: *orchestrator_id,
            started_at_ms: *started_at_ms,
            stopping: *stopping,
        };
        server.on_event(poll.registry(), token, &mut |request| state.handle(request));
    }
}

/// What answering a request may see and change.
struct RequestContext<'a> {
    config: &'a Config,
    store: &'a mut Store,
    children: &'a mut HashMap<i32, Child>,
    orchestrator_id: i64,
    started_at_ms: i64,
    stopping: bool,
}

impl RequestContext<'_> {
    fn handle(&mut self, request: Request) -> Response {
        match request {
            Request::Status => self.status(),
            Request::Spawn {
                argv,
                cwd,
                timeout_ms,
            } => self.spawn(argv, cwd, timeout_ms),
        }
    }

    fn failed(message: impl std::fmt::Display) -> Response {
        Response::Error {
            code: ErrorCode::Failed,
            message: message.to_string(),
        }
    }

    fn status(&mut self) -> Response {
        let live = match self.store.live_counts_by_kind() {
            Ok(counts) => counts
                .into_iter()
                .map(|(kind, n)| (kind.to_string(), n))
                .collect(),
            Err(err) => return Self::failed(err),
        };
        let now = crate::store::now_ms();
        Response::Status(StatusInfo {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            started_at_ms: self.started_at_ms,
            uptime_ms: now - self.started_at_ms,
            database: self.config.database.display().to_string(),
            socket: self.config.control.socket.display().to_string(),
            live,
        })
    }

    fn spawn(
        &mut self,
        argv: Vec<String>,
        cwd: Option<String>,
        timeout_ms: Option<u64>,
    ) -> Response {
        if !self.config.control.allow_debug_spawn {
            return Response::Error {
                code: ErrorCode::NotAllowed,
                message: format!(
                    "spawn is a debugging aid and is disabled; set control.allow_debug_spawn = \
                     true in {} to enable it",
                    self.config.source.display()
                ),
            };
        }
        if self.stopping {
            return Self::failed("abxd is stopping and starts nothing new");
        }
        let request = SpawnRequest {
            process: NewProcess {
                parent_id: Some(self.orchestrator_id),
                kind: Kind::Hook,
                crawl_id: None,
                snapshot_id: None,
                result_id: None,
                argv,
                cwd: cwd.unwrap_or_else(|| self.config.data_dir.display().to_string()),
                timeout_ms: timeout_ms.map(|ms| ms.min(i64::MAX as u64) as i64),
            },
            env: Vec::new(),
            logs: Logs::InDir(self.config.data_dir.join("logs")),
        };
        match spawn::spawn(self.store, &request) {
            Ok(spawned) => {
                let pid = spawned.identity.pid;
                self.children.insert(
                    pid,
                    Child {
                        target: Target {
                            row_id: spawned.row_id,
                            identity: spawned.identity,
                            pgid: pid,
                        },
                    },
                );
                Response::Spawned {
                    id: spawned.row_id,
                    pid,
                }
            }
            Err(err) => Self::failed(err),
        }
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
