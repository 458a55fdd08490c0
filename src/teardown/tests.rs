//! The teardown against real processes where only a unit test can stage the case.

use super::*;
use crate::domain::Status;
use crate::identity::same_tick;
use crate::proctree;

#[test]
fn a_recorded_child_whose_pid_was_taken_within_its_tick_is_ended_and_the_taker_never_signalled() {
    let Some((stale, outsider)) = same_tick::staged_with_pidfs() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
    let hook = store
        .processes()
        .insert(&crate::store::test_hook())
        .unwrap();
    let found = Found {
        identity: stale.clone(),
        ppid: std::process::id() as i32,
        pgid: stale.pid,
        argv: vec!["sleep".into(), "60".into()],
        state: 'S',
        uid: None,
    };
    let child = store.processes().record_descendant(hook, &found).unwrap();
    // The unique index on identity tells the two apart: the taker is not the stale row.
    let (taker, _) = proctree::pin(stale.pid).unwrap();
    assert_eq!(taker.identity.start_ticks, stale.start_ticks);
    let taker_row = store.processes().record_descendant(hook, &taker).unwrap();
    assert_ne!(taker_row, child);

    let poll = mio::Poll::new().unwrap();
    let instance = store.marker_namespace().unwrap();
    let mut map = DeadlineMap::new(poll.registry().try_clone().unwrap(), instance, None);
    // Tear down the stale row alone (the taker's row stands for a process of another tree).
    map.begin_all(
        &store,
        vec![Request {
            root_row: child,
            signal: Signal::TERM,
            grace: Duration::from_secs(5),
            own_deadlines: false,
            reason: EndReason::Killed,
            recording: Recording::ChildRows,
        }],
    );

    let reports = map.take_completed();
    assert_eq!(
        reports.len(),
        1,
        "nothing of the tree is alive: it is done at once"
    );
    assert!(
        reports[0].processes.is_empty(),
        "{:?}",
        reports[0].processes.len()
    );
    let row = store.processes().get(child).unwrap().unwrap();
    assert!(
        !row.status.is_live(),
        "the stale row is final: {:?}",
        row.status
    );
    assert_ne!(row.status, Status::Running);
    let mut outsider = outsider;
    assert!(
        outsider.0.try_wait().unwrap().is_none(),
        "the process that took the pid was signalled"
    );
}
