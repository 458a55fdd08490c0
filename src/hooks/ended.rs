//! A hook's end: its result recorded from its exit, its records and its deadline (with what
//! the worker writes of it, in one transaction), its run appended to the snapshot's index; and
//! what that end means beyond what the hook reported: an exit from the SIGTERM of its scope's
//! end is a polite one, and a kill its supervisor noted (its memory limit, unkillable) decides
//! its result.

use super::{
    index, interpret, output_files, resource, result, HookRunner, Outcome, Running, Waiting,
};
use crate::domain::{EndDetail, EndReason, ExitOutcome, ResultStatus};
use crate::signal::Signal;
use crate::store::{Store, StoreError};
use crate::supervisor::{RunsHooks, Supervisor};
use std::path::Path;

impl HookRunner {
    /// Records the result of hook row `row_id` if it is one of ours, and what `also` writes of
    /// it, in one transaction; returns what it reported (discovered URLs, tags). Starts the next
    /// hook when the one waited for ended. If the transaction fails (e.g. the database is busy)
    /// nothing changed: the same exit may be given again.
    pub fn on_exit<O: RunsHooks>(
        &mut self,
        supervisor: &mut Supervisor<O>,
        store: &Store,
        exit: (i64, ExitOutcome, EndReason),
        also: impl FnOnce(&Store, &Outcome) -> Result<(), StoreError>,
    ) -> Result<Option<Outcome>, StoreError> {
        let (row_id, outcome, reason) = exit;
        let Some(run) = self.running.get_mut(&row_id) else {
            return Ok(None);
        };
        let no_space =
            *(run.no_space_at_end).get_or_insert_with(|| result::no_space_left(&run.stderr));
        let run = &*run;
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
            no_space,
        };
        let mut result = interpret(&run.stdout, &run.stderr, &ending);
        if let Some(overridden) = by_its_limits(store, row_id, outcome) {
            result = overridden;
        }
        let hook_end = resource::HookEnd {
            crawl_hook: ending.crawl_hook,
            background: run.prepared.hook.background,
            ready: !matches!(self.waiting, Waiting::FirstOutput { row, .. } if row == row_id),
            required: run.prepared.required,
            failed: result.status == ResultStatus::Failed,
            stopped: stopped_at_end || ending.stopped,
        };
        if let Some(why) = resource::fatal_to_crawl(hook_end, &run.prepared.hook.file_name) {
            log::error!("{why}");
            self.fatal.get_or_insert(why);
            // (No crawl hook starts after it: their results are cancelled when the crawl seals.)
            self.pending.clear();
        }
        let files = output_files(Path::new(&run.cwd));
        let names: Vec<String> = files.iter().map(|(name, _)| name.clone()).collect();
        let size = files.iter().map(|(_, size)| size).sum();
        store.all_or_nothing(|store| {
            let output = result.output.as_deref();
            store
                .results()
                .finish(run.result_id, result.status, output, &names, size)?;
            if stopped_at_end && run.prepared.hook.background {
                store.results().note_session(run.result_id)?;
            }
            also(store, &result)
        })?;
        self.stopped_at_end.remove(&row_id);
        let run = self.running.remove(&row_id).expect("looked up above");
        self.index_run(&run, &ending, &result, &files);
        log::info!(
            "{} {}: {}",
            run.prepared.hook.file_name,
            result.status,
            result.output.as_deref().unwrap_or("")
        );
        let waited_for = match self.waiting {
            Waiting::Foreground(row) | Waiting::FirstOutput { row, .. } => row == row_id,
            // (Whether the next hook may start now is decided again.)
            Waiting::Others { .. } => true,
            Waiting::Nothing => false,
        };
        if waited_for {
            self.waiting = Waiting::Nothing;
            self.start_next(supervisor, store)?;
        }
        Ok(Some(result))
    }

    /// Appends the Process and ArchiveResult records of `run` to its snapshot's `index.jsonl`
    /// (crawl hooks have none); a write that fails is logged, never the run's failure.
    fn index_run(
        &self,
        run: &Running,
        ending: &result::Ending,
        result: &Outcome,
        files: &[(String, u64)],
    ) {
        let Some(snapshot) = &self.scope.snapshot else {
            return;
        };
        let hook = &run.prepared.hook;
        let process = index::process_record(&index::Run {
            uuid: run.process_uuid.as_deref(),
            argv: &run.argv,
            plugin: &hook.plugin,
            hook_name: &hook.stem,
            pwd: &run.cwd.to_string_lossy(),
            timeout_secs: run.prepared.timeout.as_secs(),
            started_at: run.started_at,
            ended_at: crate::store::now_ms(),
            outcome: ending.outcome,
        });
        let reported = index::result_record(&index::Reported {
            uuid: run.result_uuid.as_deref(),
            process_uuid: run.process_uuid.as_deref(),
            snapshot_uuid: snapshot.uuid.as_deref(),
            plugin: &hook.plugin,
            hook_name: &hook.stem,
            status: result.status,
            output: result.output.as_deref(),
            files,
        });
        if let Err(err) = index::append(
            &self.scope.data_dir,
            &self.scope.dir(),
            &[process, reported],
        ) {
            log::warn!("{}: not in {}: {err}", hook.file_name, index::FILE);
        }
    }
}

/// An exit from SIGTERM or SIGINT, as a signal or as a shell reports it (128 + n).
pub(super) fn polite_exit(outcome: ExitOutcome) -> bool {
    let polite = [Signal::TERM.as_raw(), Signal::INT.as_raw()];
    match outcome {
        ExitOutcome::Signal(signal) => polite.contains(&signal),
        ExitOutcome::Code(code) => polite.iter().any(|s| code == 128 + s),
    }
}

/// The result of hook row `row_id` when something beyond the hook decided it (noted on its row
/// by its supervisor): the kernel killed it for going over its cgroup's `memory.max`, or it
/// survived SIGKILL (unkillable) and its snapshot went on without it.
pub(super) fn by_its_limits(
    store: &Store,
    row_id: i64,
    outcome: ExitOutcome,
) -> Option<result::Outcome> {
    // (SIGKILL, as a signal or as a shell reports it when it was its child that was killed.)
    let kill = Signal::KILL.as_raw();
    if outcome != ExitOutcome::Signal(kill) && outcome != ExitOutcome::Code(128 + kill) {
        return None;
    }
    let row = store.processes().get(row_id).ok()??;
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
        let store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
        let row = store
            .processes()
            .insert(&crate::store::test_hook())
            .unwrap();
        let killed = ExitOutcome::Signal(9);
        assert!(by_its_limits(&store, row, killed).is_none());
        store
            .processes()
            .set_end_detail(row, &EndDetail::MemoryLimit)
            .unwrap();
        assert!(by_its_limits(&store, row, ExitOutcome::Code(0)).is_none());
        let result = by_its_limits(&store, row, killed).unwrap();
        assert_eq!(result.status, crate::domain::ResultStatus::Failed);
        assert_eq!(result.output.as_deref(), Some("memory limit"));
        let unkillable = "unkillable: alive 10 s after SIGKILL (state D, waiting in x)";
        let detail = EndDetail::Unkillable {
            after_secs: 10,
            state: 'D',
            wchan: "x".into(),
        };
        store.processes().set_unkillable(row, &detail).unwrap();
        let result = by_its_limits(&store, row, killed).unwrap();
        assert_eq!(result.output.as_deref(), Some(unkillable));
    }
}
