//! Start-up: the data-dir lock, the store, the orchestrator's own row, reconciliation of what a
//! previous incarnation left, the control socket. Errors leave nothing running: every step that
//! can fail comes before the first process is signalled or started.

use super::{Daemon, DaemonError, State, CONTROL};
use crate::cgroup;
use crate::config::Config;
use crate::control::access::Policy;
use crate::control::server::Server;
use crate::domain::Kind;
use crate::identity;
use crate::lock::DataDirLock;
use crate::notify::Notifier;
use crate::pool::WorkerPool;
use crate::recovery;
use crate::store::{now_ms, Machine, NewProcess, Patience, Store, StoreError};
use crate::supervisor::{Supervisor, Timing};
use std::collections::{BTreeSet, HashMap};

impl Daemon {
    /// Takes the data dir, opens the store, records the orchestrator and listens. Errors leave
    /// nothing running.
    pub fn start(config: Config) -> Result<Daemon, DaemonError> {
        // Files 0640, directories 0750, whatever umask abxd was started with (the unit's, a
        // shell's): what it and its hooks write is not for every local user to read.
        rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o027));
        config.check_for_daemon()?;
        crate::plugins::check_settings(&config)?;
        let lock = DataDirLock::acquire(&config.data_dir)?;
        mark_inherited_fds_close_on_exec();
        if let Err(err) = nix::sys::prctl::set_child_subreaper(true) {
            log::warn!("cannot become a child subreaper ({err}): orphans will escape to init");
        }
        let store_err = |cause| DaemonError::Store {
            database: config.database.to_string(),
            cause,
        };
        let store = Store::open_at(&config.database).map_err(store_err)?;
        store.set_synchronous_commit(config.synchronous_commit);
        store.queue().rebase_queue_clock().map_err(store_err)?;
        // (Snapshots an abxd before politeness added are claimed by their host key too.)
        let keyed = store.queue().hosts().key_unkeyed().map_err(store_err)?;
        if keyed > 0 {
            log::info!("politeness: {keyed} snapshots given their host key");
        }
        let instance = store.marker_namespace().map_err(store_err)?;
        let machine = Machine::this_host(store.shared_now());
        store.machines().register(&machine).map_err(store_err)?;
        let orchestrator_id = record_self(&store).map_err(store_err)?;
        // The scope is named by the marker namespace (database and boot): a previous
        // incarnation of this boot is found again, never one of another boot or database.
        let containment = cgroup::establish(config.limits.containment, &instance)
            .map_err(DaemonError::Containment)?;
        log::info!("containment: {}", containment.describe());
        let egress = super::egress::can_restrict(&containment);
        let timing = Timing::from_config(&config);
        let mut supervisor = Supervisor::new(timing, instance.clone(), Some(orchestrator_id))?;
        if let Some(scope) = containment.scope() {
            supervisor.contain_in(scope.clone());
        }
        let reconciliation =
            recovery::reconcile(&store, &instance, Some(orchestrator_id)).map_err(store_err)?;
        for line in recovery::describe(&reconciliation, &recovery::WorkPlan::default()) {
            log::info!("recovery: {line}");
        }
        recovery::apply_lost(&store, &reconciliation.lost).map_err(store_err)?;
        let socket_err = |cause| DaemonError::Socket {
            path: config.control.socket.clone(),
            cause,
        };
        let policy = Policy::new(config.control.group.as_deref(), config.control.public_read)
            .map_err(|cause| {
                socket_err(std::io::Error::other(format!("control.group: {cause}")))
            })?;
        let server = Server::bind(
            &config.control.socket,
            supervisor.registry(),
            CONTROL,
            config.control.max_frame_bytes,
            policy,
        )
        .map_err(socket_err)?;
        log::info!(
            "abxd {} ready: pid {}, database {}, socket {}",
            env!("CARGO_PKG_VERSION"),
            std::process::id(),
            config.database,
            config.control.socket.display()
        );
        let hidden = recovery::adopt_hidden(&store, &reconciliation.hidden).map_err(store_err)?;
        let orphans: BTreeSet<i64> = reconciliation
            .orphans
            .iter()
            .map(|o| o.row)
            .chain(hidden)
            .collect();
        let orphan_rows: Vec<i64> = orphans.iter().copied().collect();
        supervisor.stop_orphans(&store, &orphan_rows);
        // From here on the loop runs deadlines: a write no longer waits long for another
        // process's lock (see `store::busy`); what it could not write is retried.
        store.set_patience(Patience::Loop).map_err(store_err)?;
        let fleet = super::fleet::Fleet::join(&config, &machine.id, orchestrator_id, &supervisor)?;
        let mut state = State {
            started_at_ms: now_ms(),
            config,
            containment,
            egress,
            store,
            orchestrator_id,
            stopping: false,
            // (A crawl whose hooks launch one browser for it waits at the browser cap.)
            crawls: WorkerPool::crawls(orchestrator_id).with_gate(crate::pool::Gate::new(
                crate::pool::Launches::PerCrawl(crate::worker::crawl_launches_browser),
            )),
            wake: true,
            retry_claims_at: None,
            retry_recovery: false,
            waiting: HashMap::new(),
            parked_requests: Vec::new(),
            truncate_wal_at: None,
            prune_more_at: None,
            disk: Default::default(),
            orphans,
            installer: Default::default(),
            exporter: Default::default(),
            queue_server: Default::default(),
            claims_off: false,
            database_lost: None,
            fleet,
            exit_code: 0,
            stopped_by: None,
            stale_cgroups: Default::default(),
            hooks: Ok(crate::hook_user::RunAs::Abxd),
            schedules_at: None,
        };
        state.settle_hook_user();
        if state.orphans.is_empty() {
            state.clear_stale_cgroups(supervisor.registry());
            state.recover(None, false);
        }
        super::handlers::apply_retention(&mut state);
        state.look_at_schedules();
        Ok(Daemon {
            state,
            supervisor,
            server,
            notifier: Notifier::from_env(),
            started: false,
            _lock: lock,
        })
    }
}

/// Records the daemon itself as the `orchestrator` row, running, and returns its id.
fn record_self(store: &Store) -> Result<i64, StoreError> {
    let pid = std::process::id() as i32;
    let id = store.processes().insert(&NewProcess {
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
    store.processes().record_spawned(
        id,
        &me,
        pgid,
        (None, None),
        rustix::process::getuid().as_raw(),
    )?;
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

impl State {
    /// Settles who hooks run as under the config (at start, at each reload), saying it once.
    pub(super) fn settle_hook_user(&mut self) {
        self.hooks = crate::hook_user::for_crawls(&self.config);
        match &self.hooks {
            Err(why) => log::error!("no crawl starts: {why}"),
            Ok(_) => log::info!("hooks {}", crate::hook_user::describe(&self.hooks)),
        }
    }
}
