//! Hooks: running a set of hooks for one snapshot or crawl (this file), and turning each run into
//! a result (`result`).
//!
//! The contract is SPEC §4: argv `--url=… --snapshot-id=… --crawl-id=…`, cwd
//! `<snapshot dir>/<plugin>/`, the merged config and the ids as environment, stdout and stderr
//! to log files, JSON records on stdout. Invariants: foreground hooks run one at a time in order,
//! background hooks are started in order and run alongside; a hook whose result is already final
//! (succeeded, failed or skipped) is never started again — only interrupted ones are; every run
//! that ends gets its result recorded from its exit, its records and its deadline, by the rules
//! of [`interpret`].

mod result;

pub use result::{interpret, output_files};

use crate::config::Config;
use crate::plugins::Hook;
use crate::spawn::{Logs, SpawnRequest};
use crate::store::{
    Crawl, EndReason, ExitOutcome, Kind, NewProcess, ResultStatus, Snapshot, Store, StoreError,
};
use crate::supervisor::{ChildPolicy, Supervisor};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub fn crawl_dir(config: &Config, crawl_id: i64) -> PathBuf {
    config.data_dir.join("crawls").join(crawl_id.to_string())
}

pub fn snapshot_dir(config: &Config, crawl_id: i64, snapshot_id: i64) -> PathBuf {
    crawl_dir(config, crawl_id)
        .join("snapshots")
        .join(snapshot_id.to_string())
}

/// What a set of hooks runs for: a crawl (crawl hooks) or one of its snapshots.
#[derive(Debug, Clone)]
pub struct Scope {
    pub crawl: Crawl,
    pub snapshot: Option<Snapshot>,
    /// The process row of the worker running the hooks.
    pub parent_row: i64,
}

impl Scope {
    fn dir(&self, config: &Config) -> PathBuf {
        match &self.snapshot {
            Some(s) => snapshot_dir(config, self.crawl.id, s.id),
            None => crawl_dir(config, self.crawl.id),
        }
    }

    fn url(&self) -> &str {
        match &self.snapshot {
            Some(s) => &s.url,
            None => self.crawl.urls.first().map(String::as_str).unwrap_or(""),
        }
    }
}

pub fn hook_timeout(config: &Config, hook: &Hook) -> Duration {
    config
        .plugins
        .get(&hook.plugin)
        .and_then(|p| p.timeout)
        .unwrap_or(config.timeouts.hook_timeout)
}

/// The spawn request of `hook` in `scope`, for result `result_id`.
fn spawn_request(config: &Config, hook: &Hook, scope: &Scope, result_id: i64) -> SpawnRequest {
    let dir = scope.dir(config);
    let cwd = dir.join(&hook.plugin);
    let timeout = hook_timeout(config, hook);
    let mut argv = vec![
        hook.path.display().to_string(),
        format!("--url={}", scope.url()),
    ];
    if let Some(snapshot) = &scope.snapshot {
        argv.push(format!("--snapshot-id={}", snapshot.id));
    }
    argv.push(format!("--crawl-id={}", scope.crawl.id));

    let crawl_dir = crawl_dir(config, scope.crawl.id);
    let mut env: Vec<(String, String)> = vec![
        ("DATA_DIR".into(), config.data_dir.display().to_string()),
        ("TIMEOUT".into(), timeout.as_secs().max(1).to_string()),
        ("CRAWL_ID".into(), scope.crawl.id.to_string()),
        ("CRAWL_DIR".into(), crawl_dir.display().to_string()),
        ("URL".into(), scope.url().to_string()),
        ("PLUGIN".into(), hook.plugin.clone()),
    ];
    if let Some(snapshot) = &scope.snapshot {
        env.push(("SNAPSHOT_ID".into(), snapshot.id.to_string()));
        env.push(("SNAPSHOT_DIR".into(), dir.display().to_string()));
        env.push(("SNAPSHOT_DEPTH".into(), snapshot.depth.to_string()));
    }
    if let Some(plugin) = config.plugins.get(&hook.plugin) {
        env.extend(plugin.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let logs = dir.join("logs");
    SpawnRequest {
        process: NewProcess {
            parent_id: Some(scope.parent_row),
            kind: Kind::Hook,
            crawl_id: Some(scope.crawl.id),
            snapshot_id: scope.snapshot.as_ref().map(|s| s.id),
            result_id: Some(result_id),
            argv,
            cwd: cwd.display().to_string(),
            timeout_ms: Some(timeout.as_millis() as i64),
        },
        env,
        logs: Logs::Files {
            stdout: logs.join(format!("{}.stdout.log", hook.file_name)),
            stderr: logs.join(format!("{}.stderr.log", hook.file_name)),
        },
    }
}

struct Running {
    hook: Hook,
    result_id: i64,
    request: SpawnRequest,
}

/// Runs one scope's hooks through a [`Supervisor`]: foreground in order, background alongside.
pub struct HookRunner {
    scope: Scope,
    pending: VecDeque<Hook>,
    foreground: Option<i64>,
    running: HashMap<i64, Running>,
}

impl HookRunner {
    /// Prepares to run `hooks`, recording a result row for each one up front: a scope whose
    /// results are all final has run every hook (which is how recovery tells a finished snapshot
    /// from an interrupted one).
    pub fn new(
        store: &mut Store,
        scope: Scope,
        hooks: Vec<Hook>,
    ) -> Result<HookRunner, StoreError> {
        for hook in &hooks {
            store.result_for(
                scope.crawl.id,
                scope.snapshot.as_ref().map(|s| s.id),
                &hook.plugin,
                &hook.file_name,
            )?;
        }
        Ok(HookRunner {
            scope,
            pending: hooks.into(),
            foreground: None,
            running: HashMap::new(),
        })
    }

    /// Starts hooks in order until a foreground hook is running or none is left. Hooks whose
    /// result is final already (succeeded, failed or skipped) are passed over.
    pub fn start_next(
        &mut self,
        config: &Config,
        supervisor: &mut Supervisor,
        store: &mut Store,
    ) -> Result<(), StoreError> {
        while self.foreground.is_none() {
            let Some(hook) = self.pending.pop_front() else {
                return Ok(());
            };
            let scope = &self.scope;
            let result = store.result_for(
                scope.crawl.id,
                scope.snapshot.as_ref().map(|s| s.id),
                &hook.plugin,
                &hook.file_name,
            )?;
            if result.is_final() {
                log::info!(
                    "{}: {} before, not run again",
                    hook.file_name,
                    result.status
                );
                continue;
            }
            let request = spawn_request(config, &hook, scope, result.id);
            if let Err(err) = std::fs::create_dir_all(&request.process.cwd) {
                log::error!("{}: cannot create its dir: {err}", hook.file_name);
            }
            let policy = if hook.background {
                ChildPolicy::BACKGROUND_HOOK
            } else {
                ChildPolicy::FOREGROUND_HOOK
            };
            // The attempt counts from here: a worker that dies while starting the hook has
            // interrupted it all the same.
            store.start_result(result.id, None)?;
            match supervisor.spawn(store, &request, policy) {
                Ok(spawned) => {
                    store.set_result_process(result.id, spawned.row_id)?;
                    log::info!("{} started (row {})", hook.file_name, spawned.row_id);
                    if !hook.background {
                        self.foreground = Some(spawned.row_id);
                    }
                    self.running.insert(
                        spawned.row_id,
                        Running {
                            hook,
                            result_id: result.id,
                            request,
                        },
                    );
                }
                Err(err) => {
                    let message = format!("could not start: {err}");
                    store.finish_result(result.id, ResultStatus::Failed, Some(&message), &[], 0)?;
                }
            }
        }
        Ok(())
    }

    /// Records the result of hook row `row_id` if it is one of ours; returns the URLs it
    /// discovered. Starts the next hook when a foreground one ended.
    pub fn on_exit(
        &mut self,
        config: &Config,
        supervisor: &mut Supervisor,
        store: &mut Store,
        row_id: i64,
        outcome: ExitOutcome,
        reason: EndReason,
    ) -> Result<Option<Vec<String>>, StoreError> {
        let Some(run) = self.running.remove(&row_id) else {
            return Ok(None);
        };
        let (stdout, stderr) = match &run.request.logs {
            Logs::Files { stdout, stderr } => (stdout.clone(), stderr.clone()),
            Logs::InDir(_) => unreachable!("hooks log to named files"),
        };
        let timeout = hook_timeout(config, &run.hook);
        let result = interpret(&stdout, &stderr, outcome, reason, timeout);
        let (files, size) = output_files(Path::new(&run.request.process.cwd));
        store.finish_result(
            run.result_id,
            result.status,
            result.output.as_deref(),
            &files,
            size,
        )?;
        log::info!(
            "{} {}: {}",
            run.hook.file_name,
            result.status,
            result.output.as_deref().unwrap_or("")
        );
        if self.foreground == Some(row_id) {
            self.foreground = None;
            self.start_next(config, supervisor, store)?;
        }
        Ok(Some(result.discovered))
    }

    /// Whether every foreground hook has run (background ones may still be up).
    pub fn foreground_done(&self) -> bool {
        self.foreground.is_none() && self.pending.is_empty()
    }
}
