//! Workers: `abxd worker crawl ID` and `abxd worker snapshot ID`, each a process of its own.
//!
//! A crawl worker runs its crawl's hooks, creates the depth-0 snapshots, keeps up to
//! `max_snapshot_workers` snapshot workers running, seals the crawl when every snapshot is sealed
//! and then tears its background crawl hooks down. A snapshot worker runs the snapshot's hooks,
//! turns discovered URLs into snapshots at depth+1, tears its background hooks down when the
//! foreground ones are done, and seals the snapshot.
//!
//! Invariants: a worker works only on what its parent claimed for it and hands over (the lease
//! names its process row as owner) and renews that lease while it works; it reaps its own
//! children; on SIGTERM it tears its children down and exits without sealing, so the work is
//! requeued; it seals only work that is really finished.

use crate::config::Config;
use crate::hooks::{HookRunner, Scope};
use crate::plugins::{self, HookEvent};
use crate::recovery;
use crate::spawn::{Logs, SpawnRequest, PROCESS_ID_ENV};
use crate::store::{
    now_ms, EndReason, ExitOutcome, Kind, Lease, NewProcess, Queue, ResultStatus, Store, StoreError,
};
use crate::supervisor::{ChildPolicy, Event, Supervisor};
use signal_hook::consts::{SIGINT, SIGTERM};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How a worker process exits.
pub const EXIT_DONE: i32 = 0;
pub const EXIT_INTERRUPTED: i32 = 75; // EX_TEMPFAIL: the work goes back to the queue

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
struct Context {
    config: Config,
    store: Store,
    row_id: i64,
    supervisor: Supervisor,
    /// Set once SIGTERM/SIGINT arrived: tear down, do not seal.
    interrupted: bool,
    /// Rows whose teardown finished since the caller last looked.
    torn_down: Vec<i64>,
}

/// A child that ended, as a worker acts on it.
#[derive(Debug, Clone, Copy)]
struct Exit {
    row: i64,
    outcome: ExitOutcome,
    reason: EndReason,
    leaked: bool,
}

impl Context {
    fn open(config: Config, queue: Queue, id: i64) -> Result<Context, WorkerError> {
        let row_id: i64 = std::env::var(PROCESS_ID_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                WorkerError::Setup(format!(
                    "{PROCESS_ID_ENV} is not set: workers are started by abxd, not by hand"
                ))
            })?;
        if let Err(err) = nix::sys::prctl::set_child_subreaper(true) {
            log::warn!("cannot become a child subreaper: {err}");
        }
        let store = Store::open(&config.database)?;
        let mut supervisor =
            Supervisor::new(config.timing(), store.marker_namespace()?, Some(row_id))?;
        supervisor.hold_lease(Lease {
            queue,
            id,
            owner: row_id,
            duration: config.timeouts.lease,
        });
        Ok(Context {
            config,
            store,
            row_id,
            supervisor,
            interrupted: false,
            torn_down: Vec::new(),
        })
    }

    /// Handles the events every worker handles alike; returns the exits for the caller.
    fn triage(&mut self, events: Vec<Event>) -> Vec<Exit> {
        let mut exits = Vec::new();
        for event in events {
            match event {
                Event::Exited {
                    row_id,
                    outcome,
                    reason,
                    leaked,
                    ..
                } => exits.push(Exit {
                    row: row_id,
                    outcome,
                    reason,
                    leaked,
                }),
                Event::Signal(SIGTERM | SIGINT) | Event::LeaseLost => self.interrupt(),
                Event::TornDown(report) => self.torn_down.push(report.root_row),
                Event::Signal(_) | Event::Ready(_) | Event::Timer => {}
            }
        }
        exits
    }

    fn interrupt(&mut self) {
        // A worker hears SIGTERM from each supervisor above it (its parent and the daemon), so a
        // repeated one is not an escalation here: the daemon escalates by killing the tree itself.
        if self.interrupted {
            return;
        }
        log::info!("interrupted: tearing down and leaving the work to be requeued");
        self.interrupted = true;
        self.supervisor.stop_all(&mut self.store, EndReason::Killed);
    }

    /// Tears every remaining child (and leftover) down, each until its own deadline but at least
    /// `min_grace`, and waits until all are gone, recording each exit through `on_exit`.
    fn drain(
        &mut self,
        mut on_exit: impl FnMut(&mut Context, Exit) -> Result<(), StoreError>,
    ) -> Result<(), WorkerError> {
        self.supervisor.stop_all(&mut self.store, EndReason::Killed);
        while self.supervisor.has_work() {
            let events = self.supervisor.wait(&mut self.store, None)?;
            for exit in self.triage(events) {
                on_exit(self, exit)?;
            }
        }
        self.supervisor.reap_now(&mut self.store);
        let patience = self.config.timeouts.lease;
        self.supervisor
            .settle_before_exit(&mut self.store, patience);
        Ok(())
    }
}

/// The hooks to run for `event` in `scope`. A file that looks like a hook of a selected plugin
/// but cannot run is reported as a skipped result with the reason, so the operator sees it.
fn hooks_for(
    store: &mut Store,
    config: &Config,
    event: HookEvent,
    crawl: &crate::store::Crawl,
    snapshot_id: Option<i64>,
) -> Result<Vec<plugins::Hook>, StoreError> {
    let crawl_plugins = crawl.plugins.as_deref();
    let (found, rejected) = plugins::discover(&config.plugins_dirs, event);
    for reject in rejected {
        let ours = reject.event == Some(event) || (reject.event.is_none() && snapshot_id.is_some());
        if !ours || !plugins::selected(&reject.plugin, config, crawl_plugins) {
            continue;
        }
        log::warn!("hook {} rejected: {}", reject.path.display(), reject.reason);
        let result =
            store.result_for(crawl.id, snapshot_id, &reject.plugin, &reject.file_name())?;
        if !result.is_final() {
            let reason = format!("not run: {}", reject.reason);
            store.finish_result(result.id, ResultStatus::Skipped, Some(&reason), &[], 0)?;
        }
    }
    Ok(plugins::select(found, config, crawl_plugins))
}

/// `abxd worker snapshot ID`.
pub fn run_snapshot_worker(config: Config, snapshot_id: i64) -> Result<i32, WorkerError> {
    let mut cx = Context::open(config, Queue::Snapshots, snapshot_id)?;
    let snapshot = cx
        .store
        .snapshot(snapshot_id)?
        .ok_or_else(|| WorkerError::Setup(format!("no snapshot {snapshot_id}")))?;
    let crawl = cx
        .store
        .crawl(snapshot.crawl_id)?
        .ok_or_else(|| WorkerError::Setup(format!("no crawl {}", snapshot.crawl_id)))?;
    let hooks = hooks_for(
        &mut cx.store,
        &cx.config,
        HookEvent::Snapshot,
        &crawl,
        Some(snapshot_id),
    )?;
    log::info!(
        "snapshot {snapshot_id} ({}): {} hooks",
        snapshot.url,
        hooks.len()
    );
    let (max_depth, depth, crawl_id) = (crawl.max_depth, snapshot.depth, crawl.id);
    let mut runner = HookRunner::new(
        &mut cx.store,
        Scope {
            crawl,
            snapshot: Some(snapshot),
            parent_row: cx.row_id,
        },
        hooks,
    )?;
    let record =
        |cx: &mut Context, runner: &mut HookRunner, exit: Exit| -> Result<(), StoreError> {
            let Context {
                config,
                store,
                supervisor,
                interrupted,
                ..
            } = cx;
            let Exit {
                row,
                outcome,
                reason,
                ..
            } = exit;
            if *interrupted {
                // Torn down by our own interruption: leave the result to be run again.
                return Ok(());
            }
            let discovered = runner.on_exit(config, supervisor, store, row, outcome, reason)?;
            for url in discovered.unwrap_or_default() {
                if depth < max_depth {
                    if let Some(id) = store.add_snapshot(crawl_id, &url, depth + 1)? {
                        log::info!("discovered {url} (snapshot {id}, depth {})", depth + 1);
                    }
                }
            }
            Ok(())
        };
    runner.start_next(&cx.config, &mut cx.supervisor, &mut cx.store)?;
    while !cx.interrupted && !runner.foreground_done() {
        let events = cx.supervisor.wait(&mut cx.store, None)?;
        for exit in cx.triage(events) {
            record(&mut cx, &mut runner, exit)?;
        }
    }
    cx.drain(|cx, exit| record(cx, &mut runner, exit))?;
    if cx.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    cx.store.seal(Queue::Snapshots, snapshot_id)?;
    log::info!("snapshot {snapshot_id} sealed");
    Ok(EXIT_DONE)
}

/// `abxd worker crawl ID`.
pub fn run_crawl_worker(config: Config, crawl_id: i64) -> Result<i32, WorkerError> {
    let mut cx = Context::open(config, Queue::Crawls, crawl_id)?;
    let crawl = cx
        .store
        .crawl(crawl_id)?
        .ok_or_else(|| WorkerError::Setup(format!("no crawl {crawl_id}")))?;
    let hooks = hooks_for(&mut cx.store, &cx.config, HookEvent::Crawl, &crawl, None)?;
    log::info!("crawl {crawl_id}: {} crawl hooks", hooks.len());
    let urls = crawl.urls.clone();
    let mut runner = HookRunner::new(
        &mut cx.store,
        Scope {
            crawl,
            snapshot: None,
            parent_row: cx.row_id,
        },
        hooks,
    )?;
    // Snapshot workers by row id → the snapshot each works on; and dead ones whose leftovers
    // are still being torn down, by row → their snapshot, recovered once they are gone.
    let mut workers: HashMap<i64, i64> = HashMap::new();
    let mut awaiting_teardown: HashMap<i64, i64> = HashMap::new();
    let record = |cx: &mut Context,
                  runner: &mut HookRunner,
                  workers: &mut HashMap<i64, i64>,
                  awaiting_teardown: &mut HashMap<i64, i64>,
                  exit: Exit|
     -> Result<(), StoreError> {
        if let Some(snapshot_id) = workers.remove(&exit.row) {
            let sealed = cx
                .store
                .snapshot(snapshot_id)?
                .is_some_and(|s| s.status == "sealed");
            if !sealed {
                log::warn!(
                    "snapshot worker row {} for snapshot {snapshot_id} ended ({:?}) before \
                     sealing it",
                    exit.row,
                    exit.outcome
                );
                // An interrupted crawl worker leaves the recovery of its work to the daemon,
                // which recovers the whole crawl once this worker is gone.
                if !cx.interrupted && exit.leaked {
                    awaiting_teardown.insert(exit.row, snapshot_id);
                } else if !cx.interrupted {
                    recover_snapshot(cx, crawl_id, snapshot_id)?;
                }
            }
            return Ok(());
        }
        let Context {
            config,
            store,
            supervisor,
            interrupted,
            ..
        } = cx;
        if !*interrupted {
            runner.on_exit(
                config,
                supervisor,
                store,
                exit.row,
                exit.outcome,
                exit.reason,
            )?;
        }
        Ok(())
    };

    runner.start_next(&cx.config, &mut cx.supervisor, &mut cx.store)?;
    while !cx.interrupted && !runner.foreground_done() {
        let events = cx.supervisor.wait(&mut cx.store, None)?;
        for exit in cx.triage(events) {
            record(
                &mut cx,
                &mut runner,
                &mut workers,
                &mut awaiting_teardown,
                exit,
            )?;
        }
    }
    for url in &urls {
        cx.store.add_snapshot(crawl_id, url, 0)?;
    }
    while !cx.interrupted {
        start_snapshot_workers(&mut cx, crawl_id, &mut workers)?;
        let snapshots = cx.store.snapshots(crawl_id)?;
        if workers.is_empty()
            && awaiting_teardown.is_empty()
            && snapshots.iter().all(|s| s.status == "sealed")
        {
            break;
        }
        // Wake for a snapshot that is waiting out a back-off, if nothing else wakes us first.
        let timer = workers
            .is_empty()
            .then(|| {
                snapshots
                    .iter()
                    .filter(|s| s.status == "queued")
                    .map(|s| s.retry_at)
                    .min()
            })
            .flatten()
            .map(|at| Instant::now() + Duration::from_millis((at - now_ms()).max(0) as u64));
        let events = cx.supervisor.wait(&mut cx.store, timer)?;
        // Exits first: a teardown reported in the same batch may be of a worker that just
        // exited leaving processes behind.
        let exits = cx.triage(events);
        for exit in exits {
            record(
                &mut cx,
                &mut runner,
                &mut workers,
                &mut awaiting_teardown,
                exit,
            )?;
        }
        record_teardowns(&mut cx, crawl_id, &mut awaiting_teardown)?;
    }
    cx.drain(|cx, exit| record(cx, &mut runner, &mut workers, &mut awaiting_teardown, exit))?;
    if cx.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    cx.store.seal(Queue::Crawls, crawl_id)?;
    log::info!("crawl {crawl_id} sealed");
    Ok(EXIT_DONE)
}

/// Recovers the teardowns that finished: their snapshots are recovered now.
fn record_teardowns(
    cx: &mut Context,
    crawl_id: i64,
    awaiting_teardown: &mut HashMap<i64, i64>,
) -> Result<(), StoreError> {
    for row in std::mem::take(&mut cx.torn_down) {
        if let Some(snapshot_id) = awaiting_teardown.remove(&row) {
            recover_snapshot(cx, crawl_id, snapshot_id)?;
        }
    }
    Ok(())
}

/// Recovers a snapshot whose worker died, by the rules of `recovery`: sealed if all its results
/// are final, else requeued (backing off) with its interrupted results to run again.
fn recover_snapshot(cx: &mut Context, crawl_id: i64, snapshot_id: i64) -> Result<(), StoreError> {
    let plan = recovery::plan_work(&cx.store, &cx.config, Some(crawl_id), &Default::default())?;
    for line in recovery::describe(&Default::default(), &plan) {
        log::info!("recovery of snapshot {snapshot_id}: {line}");
    }
    recovery::apply_work(&mut cx.store, &cx.config, &plan, true)
}

fn start_snapshot_workers(
    cx: &mut Context,
    crawl_id: i64,
    workers: &mut HashMap<i64, i64>,
) -> Result<(), WorkerError> {
    while workers.len() < cx.config.limits.max_snapshot_workers as usize {
        let Some(snapshot_id) =
            cx.store
                .claim(Queue::Snapshots, Some(crawl_id), cx.config.timeouts.lease)?
        else {
            return Ok(());
        };
        let request = worker_request(
            &cx.config,
            Kind::SnapshotWorker,
            cx.row_id,
            crawl_id,
            Some(snapshot_id),
        );
        match cx
            .supervisor
            .spawn(&mut cx.store, &request, ChildPolicy::WORKER)
        {
            Ok(spawned) => {
                cx.store
                    .set_owner(Queue::Snapshots, snapshot_id, spawned.row_id)?;
                workers.insert(spawned.row_id, snapshot_id);
            }
            Err(err) => {
                log::error!("cannot start a snapshot worker: {err}");
                let restarts = cx.store.snapshot(snapshot_id)?.map(|s| s.restarts);
                let wait = recovery::backoff(&cx.config, restarts.unwrap_or(0));
                let retry_at = now_ms() + wait.as_millis() as i64;
                cx.store.requeue(Queue::Snapshots, snapshot_id, retry_at)?;
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The spawn request of a worker process: `abxd --config C worker crawl|snapshot ID`.
pub fn worker_request(
    config: &Config,
    kind: Kind,
    parent_row: i64,
    crawl_id: i64,
    snapshot_id: Option<i64>,
) -> SpawnRequest {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "abxd".into());
    let (what, id) = match snapshot_id {
        Some(id) => ("snapshot", id),
        None => ("crawl", crawl_id),
    };
    SpawnRequest {
        process: NewProcess {
            parent_id: Some(parent_row),
            kind,
            crawl_id: Some(crawl_id),
            snapshot_id,
            result_id: None,
            argv: vec![
                exe,
                "--config".into(),
                config.source.display().to_string(),
                "worker".into(),
                what.into(),
                id.to_string(),
            ],
            cwd: config.data_dir.display().to_string(),
            timeout_ms: None,
        },
        env: vec![(crate::config::CONFIG_TEXT_ENV.into(), config.text.clone())],
        logs: Logs::InDir(config.data_dir.join("logs")),
    }
}
