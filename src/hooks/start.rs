//! Starting one hook: what it waits for first (`order`), its dirs (its user's, `hook_user`),
//! its result row's attempt and its process row, in one transaction with the spawn.

use super::{memory, order, request, resource, HookRunner, Running, Waiting, OTHERS_SLACK};
use crate::domain::{EndReason, ResultStatus};
use crate::logs::Logs;
use crate::plugins::Prepared;
use crate::signal::Signal;
use crate::spawn::SpawnError;
use crate::store::{Store, StoreError};
use crate::supervisor::{ChildPolicy, RunsHooks, Supervisor};
use std::path::{Path, PathBuf};
use std::time::Instant;

impl HookRunner {
    /// Until when `next` must wait for hooks that run (see `order`), stopping those it waits
    /// to see stopped; `None`: it may start now.
    pub(super) fn must_wait<O: RunsHooks>(
        &mut self,
        supervisor: &mut Supervisor<O>,
        store: &Store,
        next: &Prepared,
    ) -> Option<Instant> {
        let runs: Vec<order::Runs<'_>> = (self.running.iter())
            .map(|(&row, run)| order::Runs {
                row,
                plugin: &run.prepared.hook.plugin,
                background: run.prepared.hook.background,
            })
            .collect();
        let blocked = order::blockers(&next.waits_for, next.after_background, &runs);
        let longest = (blocked.until_ended.iter())
            .filter_map(|row| self.running.get(row))
            .map(|run| run.prepared.timeout)
            .max()?;
        for row in blocked.to_stop {
            if self.stopped_at_end.insert(row) {
                let grace = self.running[&row].prepared.timeout;
                supervisor.stop(store, row, Signal::TERM, grace, EndReason::Killed);
            }
        }
        log::info!(
            "{} waits for {} running hooks to end",
            next.hook.file_name,
            blocked.until_ended.len()
        );
        Some(Instant::now() + longest + OTHERS_SLACK)
    }

    /// Starts one hook unless its result is final; returns its row and what it runs as.
    pub(super) fn start<O: RunsHooks>(
        &mut self,
        supervisor: &mut Supervisor<O>,
        store: &Store,
        prepared: &Prepared,
    ) -> Result<Option<(i64, Running)>, StoreError> {
        let hook = &prepared.hook;
        let scope = &self.scope;
        let result = store.results().result_for(
            scope.crawl.id,
            scope.snapshot_id(),
            &hook.plugin,
            &hook.file_name,
        )?;
        if result.is_final() {
            log::info!(
                "{}: {} before, not run again",
                hook.file_name,
                result.status
            );
            let crawl_hook = scope.snapshot.is_none();
            if let Some(why) = resource::failed_before(crawl_hook, hook, result.status) {
                self.fatal.get_or_insert(why);
                self.pending.clear();
            }
            return Ok(None);
        }
        if let Some(ended) = self.take_over_ended(store, prepared, &result)? {
            return Ok(Some(ended));
        }
        let scope = &self.scope;
        let mut request = request::spawn_request(prepared, scope, result.id);
        if let Err(why) = with_persona(scope, &mut request.env) {
            let message = format!("could not start: {why}");
            log::error!("{}: {message}", hook.file_name);
            store
                .results()
                .finish(result.id, ResultStatus::Failed, Some(&message), &[], 0)?;
            return Ok(None);
        }
        if let Err(err) = std::fs::create_dir_all(&request.process.cwd) {
            log::error!("{}: cannot create its dir: {err}", hook.file_name);
        }
        if let Some(user) = &scope.run_as {
            // The hook writes below its crawl's or snapshot's dir: those are its user's.
            let crawls = scope.data_dir.join("crawls");
            // (What is in its own dir already — an earlier attempt's, or one made before an
            // upgrade changed who hooks run as — is given too.)
            let cwd = Path::new(&request.process.cwd);
            let given = (user.own_dirs(&crawls, cwd)).and_then(|()| user.own_tree(cwd));
            // (A crawl user's TMP_DIR is its own, below the shared one.)
            let tmp = super::request::tmp_dir(&scope.data_dir, Some(user));
            let given = given.and_then(|()| user.make_tmp(&tmp));
            if let Err(err) = given {
                log::error!(
                    "{}: cannot give its dirs to {}: {err}",
                    hook.file_name,
                    user.name
                );
            }
        }
        let policy = if hook.background {
            ChildPolicy::BACKGROUND_HOOK
        } else {
            ChildPolicy::FOREGROUND_HOOK
        };
        // The attempt counts with the hook's row, before it starts: a worker that dies while
        // starting the hook has interrupted it all the same.
        let result_id = result.id;
        let mut attempt = |store: &Store, row: i64| store.results().start(result_id, Some(row));
        let spawned = match supervisor.spawn(store, &request, (O::HOOKS, policy), &mut attempt) {
            Ok(spawned) => spawned,
            Err(SpawnError::Store(err)) => return Err(err),
            Err(err) => {
                let message = format!("could not start: {err}");
                store
                    .results()
                    .finish(result.id, ResultStatus::Failed, Some(&message), &[], 0)?;
                return Ok(None);
            }
        };
        log::info!("{} started (row {})", hook.file_name, spawned.row_id);
        let (stdout, stderr) = match &request.logs {
            Logs::Files { stdout, stderr, .. } => (stdout.clone(), stderr.clone()),
            Logs::InDir(_) => unreachable!("hooks log to named files"),
        };
        self.waiting = if hook.background {
            let until = Instant::now() + prepared.timeout;
            Waiting::FirstOutput {
                row: spawned.row_id,
                until,
            }
        } else {
            Waiting::Foreground(spawned.row_id)
        };
        let environ = crate::plugins::env::process_environ;
        let memory = memory::limit_of(prepared, environ).map(|limit| memory::Bounded {
            pid: spawned.identity.pid,
            cgroup: spawned.cgroup.as_ref().map(|c| c.dir.clone()),
            limit,
        });
        let running = Running {
            no_space_at_end: None,
            prepared: prepared.clone(),
            result_id: result.id,
            stdout,
            stderr,
            cwd: PathBuf::from(&request.process.cwd),
            memory,
            argv: request.process.argv.clone(),
            result_uuid: result.uuid.clone(),
            process_uuid: Some(spawned.uuid.clone()),
            started_at: crate::store::now_ms(),
        };
        Ok(Some((spawned.row_id, running)))
    }
}

/// Gives a hook of `scope` whose variables are `env` its crawl's persona (`--persona`), copied
/// into its runtime personas dir first (`persona`); nothing for a crawl that names none.
fn with_persona(scope: &super::Scope, env: &mut Vec<(String, String)>) -> Result<(), String> {
    let Some(name) = &scope.crawl.options.persona else {
        return Ok(());
    };
    // (Configured in abxd's own environment, it is not among the hook's variables.)
    let runtime = (env.iter().rev())
        .find(|(key, _)| key == "PERSONAS_DIR")
        .map(|(_, dir)| dir.clone())
        .or_else(|| crate::plugins::env::process_environ("PERSONAS_DIR"));
    let Some(runtime) = runtime.filter(|dir| !dir.is_empty()).map(PathBuf::from) else {
        return Ok(());
    };
    let user = scope.run_as.as_ref();
    super::persona::prepare(&scope.personas, name, &runtime, user)
        .map_err(|err| format!("cannot give it persona {name:?}: {err}"))?;
    super::persona::env_for(name, &runtime, env);
    Ok(())
}
