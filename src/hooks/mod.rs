//! Hooks: running one scope's hooks — a crawl's, or one snapshot's — by abx-dl's lifecycle (this
//! file), the environment each gets (`request`), and turning each run into a result (`result`).
//!
//! The lifecycle (`abxd-hooks(7)`, HOW A HOOK RUNS; abx-dl 1.12.183's `snapshot_service` / `crawl_service`): hooks start
//! in (NN, stem) order; a foreground hook runs alone until it exits or its timeout; after a
//! background hook starts, the next hook waits until it has written its first stdout byte or
//! exited, bounded by its timeout; background hooks have no lifetime limit while their scope
//! runs. When the scope ends, each background hook still alive gets SIGTERM with its timeout as
//! grace, then SIGKILL, with all its descendants (a scope of background hooks only first waits
//! for them, up to their timeout). One that exits from that SIGTERM ended as if it exited 0.
//!
//! Invariants: a hook whose result is already final (succeeded, noresults, failed or skipped) is
//! never started again — only interrupted ones are; every run that ends gets its result recorded
//! from its exit, its records and its deadline, by the rules of [`interpret`].

mod request;
mod result;

pub use request::{crawl_dir, snapshot_dir, Scope};
pub use result::{interpret, last_line_of, output_files, Outcome};

use crate::domain::EndDetail;
use crate::domain::{EndReason, ExitOutcome, ResultStatus};
use crate::logs::Logs;
use crate::plugins::Prepared;
use crate::signal::Signal;
use crate::spawn::SpawnError;
use crate::store::{Store, StoreError, BUSY_RETRY};
use crate::supervisor::{ChildPolicy, Owner, Supervisor};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often the first output of a background hook is looked for (abx-dl looks every 50 ms).
const READY_POLL: Duration = Duration::from_millis(50);

/// How often a worker of a paused crawl (`abxctl pause`) looks whether it was resumed.
pub const PAUSE_POLL: Duration = Duration::from_secs(1);

struct Running {
    prepared: Prepared,
    result_id: i64,
    stdout: PathBuf,
    stderr: PathBuf,
    cwd: PathBuf,
}

/// What keeps the next hook from starting.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Waiting {
    /// Nothing: the next hook may start.
    Nothing,
    /// A foreground hook runs.
    Foreground(i64),
    /// A background hook has not written its first stdout byte yet.
    FirstOutput { row: i64, until: Instant },
}

/// Where the scope's end is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    /// Hooks still run in order.
    NotYet,
    /// Every hook started; background hooks are stopped at this moment.
    StopAt(Instant),
    /// Background hooks were sent SIGTERM.
    Stopped,
}

/// Runs one scope's hooks through a [`Supervisor`].
pub struct HookRunner {
    scope: Scope,
    pending: VecDeque<Prepared>,
    waiting: Waiting,
    ending: Ending,
    running: HashMap<i64, Running>,
    /// Whether any foreground hook belongs to the scope.
    has_foreground: bool,
    /// Background hooks sent SIGTERM at the end of their scope.
    stopped_at_end: HashSet<i64>,
    /// The crawl was paused when the next hook was due: it waits (see [`PAUSE_POLL`]).
    paused: bool,
}

impl HookRunner {
    /// Prepares to run `hooks`, recording a result row for each one up front: a scope whose
    /// results are all final has run every hook (which is how recovery tells a finished snapshot
    /// from an interrupted one).
    pub fn new(
        store: &mut Store,
        scope: Scope,
        hooks: Vec<Prepared>,
    ) -> Result<HookRunner, StoreError> {
        for prepared in &hooks {
            let hook = &prepared.hook;
            store.result_for(
                scope.crawl.id,
                scope.snapshot_id(),
                &hook.plugin,
                &hook.file_name,
            )?;
        }
        Ok(HookRunner {
            has_foreground: hooks.iter().any(|p| !p.hook.background),
            scope,
            pending: hooks.into(),
            waiting: Waiting::Nothing,
            ending: Ending::NotYet,
            running: HashMap::new(),
            stopped_at_end: HashSet::new(),
            paused: false,
        })
    }

    /// Starts hooks in order until one must be waited for or none is left. Hooks whose result
    /// is final already are passed over. If the database is busy (another process holds its
    /// lock), the hook waits at the head of the line and [`HookRunner::after_turn`] tries again.
    pub fn start_next(
        &mut self,
        supervisor: &mut Supervisor,
        store: &mut Store,
    ) -> Result<(), StoreError> {
        while self.waiting == Waiting::Nothing && !self.pending.is_empty() {
            // A paused crawl starts no hook; those running go on.
            self.paused = store.is_paused(self.scope.crawl.id)?;
            if self.paused {
                return Ok(());
            }
            let Some(prepared) = self.pending.pop_front() else {
                return Ok(());
            };
            match self.start(supervisor, store, &prepared) {
                Ok(Some(running)) => {
                    self.running.insert(running.0, running.1);
                }
                Ok(None) => {}
                Err(err) if err.is_busy() => {
                    log::warn!("{}: not started yet: {err}", prepared.hook.file_name);
                    self.pending.push_front(prepared);
                    return Ok(());
                }
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Starts one hook unless its result is final; returns its row and what it runs as.
    fn start(
        &mut self,
        supervisor: &mut Supervisor,
        store: &mut Store,
        prepared: &Prepared,
    ) -> Result<Option<(i64, Running)>, StoreError> {
        let hook = &prepared.hook;
        let scope = &self.scope;
        let result = store.result_for(
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
            return Ok(None);
        }
        let request = request::spawn_request(prepared, scope, result.id);
        if let Err(err) = std::fs::create_dir_all(&request.process.cwd) {
            log::error!("{}: cannot create its dir: {err}", hook.file_name);
        }
        if let Some(user) = &scope.run_as {
            // The hook writes below its crawl's or snapshot's dir: those are its user's.
            let crawls = scope.data_dir.join("crawls");
            if let Err(err) = user.own_dirs(&crawls, Path::new(&request.process.cwd)) {
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
        let mut attempt = |store: &mut Store, row: i64| store.start_result(result_id, Some(row));
        let spawned = match supervisor.spawn(store, &request, (Owner::Hooks, policy), &mut attempt)
        {
            Ok(spawned) => spawned,
            Err(SpawnError::Store(err)) => return Err(err),
            Err(err) => {
                let message = format!("could not start: {err}");
                store.finish_result(result.id, ResultStatus::Failed, Some(&message), &[], 0)?;
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
        let running = Running {
            prepared: prepared.clone(),
            result_id: result.id,
            stdout,
            stderr,
            cwd: PathBuf::from(&request.process.cwd),
        };
        Ok(Some((spawned.row_id, running)))
    }

    /// When the loop must wake for this runner: to look for a background hook's first output,
    /// or to stop background hooks at the end of a scope of background hooks only.
    pub fn next_timer(&self) -> Option<Instant> {
        match (self.waiting, self.ending) {
            (Waiting::FirstOutput { until, .. }, _) => {
                Some((Instant::now() + READY_POLL).min(until))
            }
            (_, Ending::StopAt(at)) => Some(at),
            (Waiting::Nothing, _) if self.paused => Some(Instant::now() + PAUSE_POLL),
            (Waiting::Nothing, _) if !self.pending.is_empty() => Some(Instant::now() + BUSY_RETRY),
            _ => None,
        }
    }

    /// After a turn of the loop: moves on when the awaited background hook has written its
    /// first output (or its wait is over), and stops background hooks when their end is due.
    pub fn after_turn(
        &mut self,
        supervisor: &mut Supervisor,
        store: &mut Store,
    ) -> Result<(), StoreError> {
        let now = Instant::now();
        if let Waiting::FirstOutput { row, until } = self.waiting {
            let wrote = self
                .running
                .get(&row)
                .is_some_and(|r| std::fs::metadata(&r.stdout).is_ok_and(|m| m.len() > 0));
            if wrote || now >= until {
                if !wrote {
                    log::warn!("background hook row {row} wrote nothing before its timeout");
                }
                self.waiting = Waiting::Nothing;
                self.start_next(supervisor, store)?;
            }
        }
        if self.waiting == Waiting::Nothing && !self.pending.is_empty() {
            // A start the busy database refused, or one a pause held back.
            self.start_next(supervisor, store)?;
        }
        if matches!(self.ending, Ending::StopAt(at) if at <= now) {
            self.stop_background(supervisor, store);
        }
        Ok(())
    }

    /// Whether every hook has started and no foreground hook runs.
    pub fn foreground_done(&self) -> bool {
        self.waiting == Waiting::Nothing && self.pending.is_empty()
    }

    /// Ends the scope: background hooks still alive get SIGTERM with their timeout as grace —
    /// at once, or, in a scope of background hooks only, once each had its timeout to finish.
    pub fn end_scope(&mut self, supervisor: &mut Supervisor, store: &mut Store) {
        if self.ending != Ending::NotYet {
            return;
        }
        let longest = self
            .running
            .values()
            .map(|r| r.prepared.timeout)
            .max()
            .unwrap_or_default();
        // abx-dl waits so only at the end of a snapshot; a crawl's end stops its hooks at once.
        let crawl_scope = self.scope.snapshot.is_none();
        if self.has_foreground || self.running.is_empty() || crawl_scope {
            self.stop_background(supervisor, store);
        } else {
            self.ending = Ending::StopAt(Instant::now() + longest);
        }
    }

    fn stop_background(&mut self, supervisor: &mut Supervisor, store: &mut Store) {
        self.ending = Ending::Stopped;
        for (&row, running) in &self.running {
            log::info!(
                "{}: its scope ended, stopping it",
                running.prepared.hook.file_name
            );
            self.stopped_at_end.insert(row);
            let grace = running.prepared.timeout;
            supervisor.stop(store, row, Signal::TERM, grace, EndReason::Killed);
        }
    }

    /// Whether the scope is over: every hook started and ended, the background ones stopped.
    pub fn done(&self) -> bool {
        self.foreground_done() && self.ending == Ending::Stopped && self.running.is_empty()
    }

    /// Records the result of hook row `row_id` if it is one of ours, and what `also` writes of
    /// it, in one transaction; returns what it reported (discovered URLs, tags). Starts the next
    /// hook when the one waited for ended. If the transaction fails (e.g. the database is busy)
    /// nothing changed: the same exit may be given again.
    pub fn on_exit(
        &mut self,
        supervisor: &mut Supervisor,
        store: &mut Store,
        exit: (i64, ExitOutcome, EndReason),
        also: impl FnOnce(&mut Store, &Outcome) -> Result<(), StoreError>,
    ) -> Result<Option<Outcome>, StoreError> {
        let (row_id, outcome, reason) = exit;
        let Some(run) = self.running.get(&row_id) else {
            return Ok(None);
        };
        let stopped_at_end = self.stopped_at_end.contains(&row_id);
        let (outcome, reason) = if stopped_at_end && polite_exit(outcome) {
            // abx-dl: a background hook that exits from the scope-end SIGTERM completed its
            // intended lifecycle.
            (ExitOutcome::Code(0), EndReason::Exited)
        } else {
            (outcome, reason)
        };
        let ending = result::Ending {
            outcome,
            reason,
            timeout: run.prepared.timeout,
            // (Killed, and not by its own scope's end: an operator's `abxctl kill`.)
            stopped: reason == EndReason::Killed && !stopped_at_end,
            crawl_hook: self.scope.snapshot.is_none(),
        };
        let mut result = interpret(&run.stdout, &run.stderr, &ending);
        if let Some(overridden) = ended_by_its_limits(store, row_id, outcome) {
            result = overridden;
        }
        let (files, size) = output_files(Path::new(&run.cwd));
        store.all_or_nothing(|store| {
            let output = result.output.as_deref();
            store.finish_result(run.result_id, result.status, output, &files, size)?;
            also(store, &result)
        })?;
        self.stopped_at_end.remove(&row_id);
        let run = self.running.remove(&row_id).expect("looked up above");
        log::info!(
            "{} {}: {}",
            run.prepared.hook.file_name,
            result.status,
            result.output.as_deref().unwrap_or("")
        );
        let waited_for = match self.waiting {
            Waiting::Foreground(row) | Waiting::FirstOutput { row, .. } => row == row_id,
            Waiting::Nothing => false,
        };
        if waited_for {
            self.waiting = Waiting::Nothing;
            self.start_next(supervisor, store)?;
        }
        Ok(Some(result))
    }
}

/// An exit from SIGTERM or SIGINT, as a signal or as a shell reports it (128 + n).
fn polite_exit(outcome: ExitOutcome) -> bool {
    let polite = [Signal::TERM.as_raw(), Signal::INT.as_raw()];
    match outcome {
        ExitOutcome::Signal(signal) => polite.contains(&signal),
        ExitOutcome::Code(code) => polite.iter().any(|s| code == 128 + s),
    }
}

/// The result of hook row `row_id` when something beyond the hook decided it (noted on its row
/// by its supervisor): the kernel killed it for going over its cgroup's `memory.max`, or it
/// survived SIGKILL (unkillable) and its snapshot went on without it.
fn ended_by_its_limits(
    store: &Store,
    row_id: i64,
    outcome: ExitOutcome,
) -> Option<result::Outcome> {
    if outcome != ExitOutcome::Signal(crate::signal::Signal::KILL.as_raw()) {
        return None;
    }
    let row = store.process(row_id).ok()??;
    match row.end_detail {
        Some(detail @ EndDetail::MemoryLimit) => Some(result::failed(&detail.to_string())),
        Some(detail) if row.unkillable => Some(result::failed(&detail.to_string())),
        None if row.unkillable => Some(result::failed("unkillable")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polite_exits_are_sigterm_and_sigint_however_reported() {
        assert!(polite_exit(ExitOutcome::Signal(15)));
        assert!(polite_exit(ExitOutcome::Code(143)));
        assert!(polite_exit(ExitOutcome::Code(130)));
        assert!(!polite_exit(ExitOutcome::Signal(9)));
        assert!(!polite_exit(ExitOutcome::Code(1)));
    }

    #[test]
    fn a_hook_killed_by_its_memory_limit_or_unkillable_is_told_apart_by_its_row() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
        let row = store.insert_process(&crate::store::test_hook()).unwrap();
        let killed = ExitOutcome::Signal(9);
        assert!(ended_by_its_limits(&store, row, killed).is_none());
        store.set_end_detail(row, &EndDetail::MemoryLimit).unwrap();
        assert!(ended_by_its_limits(&store, row, ExitOutcome::Code(0)).is_none());
        let result = ended_by_its_limits(&store, row, killed).unwrap();
        assert_eq!(result.status, crate::domain::ResultStatus::Failed);
        assert_eq!(result.output.as_deref(), Some("memory limit"));
        let unkillable = "unkillable: alive 10 s after SIGKILL (state D, waiting in x)";
        let detail = EndDetail::Unkillable {
            after_secs: 10,
            state: 'D',
            wchan: "x".into(),
        };
        store.set_unkillable(row, &detail).unwrap();
        let result = ended_by_its_limits(&store, row, killed).unwrap();
        assert_eq!(result.output.as_deref(), Some(unkillable));
    }
}
