//! What a hook's end means beyond what it reported: an exit from the SIGTERM of its scope's end
//! is a polite one, and a kill its supervisor noted (its memory limit, unkillable) decides its
//! result.

use super::result;
use crate::domain::{EndDetail, ExitOutcome};
use crate::signal::Signal;
use crate::store::Store;

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
