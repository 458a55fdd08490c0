//! A run that ended but whose result was never recorded: its supervisor wrote its row's end,
//! and its worker died before the result's own transaction (a SIGKILL of the service, a crash).
//! The run is not started again: the next worker records its result from its row's end and its
//! logs, as its own worker would have.
//!
//! Invariant: only a run that ended by itself (it exited, or its timeout ended it) is taken
//! over; one interrupted (killed with its worker, lost) runs again, as before, and so does one
//! whose work was in a session that starts again in this run (`sessions`: navigate in the old
//! tab).

use super::{HookRunner, Running, Waiting};
use crate::domain::{EndReason, ExitOutcome, HookResult, ProcessRow, Status};
use crate::plugins::Prepared;
use crate::signal::Signal;
use crate::store::{Store, StoreError};
use std::path::PathBuf;
use std::time::Instant;

/// How a run that ended unrecorded is handed to its worker: as an exit, at its next turn.
pub type Ended = (i64, ExitOutcome, EndReason);

/// The exit of `row`, if it is the end of a run of `result` that ended by itself: its timeout
/// ended it, or it exited with a code of its own and no signal sent to it. (A teardown from
/// above signals rows it does not end itself: they are recorded `exited`, with when it
/// signalled them. A death by a signal, or a shell's report of SIGTERM, SIGINT or SIGKILL, may
/// be a signal from outside — a service stopped, its cgroup killed — that interrupted its worker
/// too: it runs again.)
fn ended_by_itself(row: &ProcessRow, result: &HookResult) -> Option<Ended> {
    if row.result_id != Some(result.id) || row.status != Status::Exited {
        return None;
    }
    let reason = row.end_reason?;
    let outcome = match (row.exit_code, row.exit_signal) {
        (Some(code), _) => ExitOutcome::Code(code),
        (None, Some(signal)) => ExitOutcome::Signal(signal),
        (None, None) => return None,
    };
    let signalled = row.sigterm_at.is_some() || row.sigkill_at.is_some();
    let own_code = match outcome {
        ExitOutcome::Code(code) => {
            !super::ended::polite_exit(outcome) && code != 128 + Signal::KILL.as_raw()
        }
        ExitOutcome::Signal(_) => false,
    };
    match reason {
        EndReason::Timeout => Some((row.id, outcome, reason)),
        EndReason::Exited if own_code && !signalled => Some((row.id, outcome, reason)),
        _ => None,
    }
}

impl HookRunner {
    /// Takes over the last run of `result` if it ended by itself unrecorded: it runs as if it
    /// had just exited (the runner waits for it, and its exit is given at the next turn).
    /// Returns its row and run; `None`: the hook is to be started.
    pub(super) fn take_over_ended(
        &mut self,
        store: &Store,
        prepared: &Prepared,
        result: &HookResult,
    ) -> Result<Option<(i64, Running)>, StoreError> {
        let Some(row_id) = result.process_id else {
            return Ok(None);
        };
        if self.in_new_session.contains(&prepared.hook.file_name) {
            return Ok(None);
        }
        let Some(row) = store.processes().get(row_id)? else {
            return Ok(None);
        };
        let (Some(ended), Some(stdout), Some(stderr)) = (
            ended_by_itself(&row, result),
            row.stdout_path.as_ref(),
            row.stderr_path.as_ref(),
        ) else {
            return Ok(None);
        };
        log::info!(
            "{}: its run (row {row_id}) ended unrecorded: its result is recorded from its end, \
             not run again",
            prepared.hook.file_name
        );
        self.ended_unrecorded.push(ended);
        self.waiting = Waiting::Foreground(row_id);
        let running = Running {
            no_space_at_end: None,
            prepared: prepared.clone(),
            result_id: result.id,
            stdout: PathBuf::from(stdout),
            stderr: PathBuf::from(stderr),
            cwd: PathBuf::from(&row.cwd),
            memory: None,
            argv: row.argv.clone(),
            result_uuid: result.uuid.clone(),
            process_uuid: row.uuid.clone(),
            started_at: row.started_at.unwrap_or(row.created_at),
        };
        Ok(Some((row_id, running)))
    }

    /// The exits of runs taken over since the last call, for the worker to record as any.
    pub fn take_ended_unrecorded(&mut self) -> Vec<Ended> {
        std::mem::take(&mut self.ended_unrecorded)
    }

    /// When the loop must wake for a run taken over: at once.
    pub(super) fn next_unrecorded_timer(&self) -> Option<Instant> {
        (!self.ended_unrecorded.is_empty()).then(Instant::now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: Status, reason: Option<EndReason>, code: Option<i32>) -> ProcessRow {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
        let id = (store.processes())
            .insert(&crate::store::test_hook())
            .unwrap();
        let mut row = store.processes().get(id).unwrap().unwrap();
        row.result_id = Some(7);
        row.status = status;
        row.end_reason = reason;
        row.exit_code = code;
        row
    }

    fn result(id: i64) -> HookResult {
        HookResult::example(id, 1, "p", crate::domain::ResultStatus::Started)
    }

    #[test]
    fn only_a_run_that_ended_by_itself_is_taken_over() {
        let exited = row(Status::Exited, Some(EndReason::Exited), Some(0));
        assert_eq!(
            ended_by_itself(&exited, &result(7)),
            Some((exited.id, ExitOutcome::Code(0), EndReason::Exited))
        );
        let timed_out = row(Status::Exited, Some(EndReason::Timeout), Some(137));
        assert!(ended_by_itself(&timed_out, &result(7)).is_some());
        // Interrupted, lost, still running, or another result's: it runs again.
        let killed = row(Status::Exited, Some(EndReason::Killed), Some(143));
        assert_eq!(ended_by_itself(&killed, &result(7)), None);
        let lost = row(Status::Lost, Some(EndReason::Lost), None);
        assert_eq!(ended_by_itself(&lost, &result(7)), None);
        let running = row(Status::Running, None, None);
        assert_eq!(ended_by_itself(&running, &result(7)), None);
        assert_eq!(ended_by_itself(&exited, &result(8)), None);
        let failed = row(Status::Exited, Some(EndReason::Exited), Some(3));
        assert!(ended_by_itself(&failed, &result(7)).is_some());
        // Killed by a signal, or a shell's report of SIGTERM: maybe from outside.
        let mut signalled = row(Status::Exited, Some(EndReason::Exited), None);
        signalled.exit_signal = Some(9);
        assert_eq!(ended_by_itself(&signalled, &result(7)), None);
        let sigterm_said = row(Status::Exited, Some(EndReason::Exited), Some(143));
        assert_eq!(ended_by_itself(&sigterm_said, &result(7)), None);
        // (A shell whose child a service's stop SIGKILLed, the shell reaped before its own.)
        let sigkill_said = row(Status::Exited, Some(EndReason::Exited), Some(137));
        assert_eq!(ended_by_itself(&sigkill_said, &result(7)), None);
        let mut torn_down_from_above = exited.clone();
        torn_down_from_above.sigterm_at = Some(1);
        assert_eq!(ended_by_itself(&torn_down_from_above, &result(7)), None);
    }
}
