//! The process table: one row per OS process abxd started or found, linked to its parent row.
//!
//! Invariants: a row with a pid always carries that process's identity (boot id and start time);
//! a row becomes final (`exited`, `lost`) exactly once and never changes status after that;
//! sending a signal only records the signal and moves a row to `stopping`, never to `exited`.

mod found;
mod notes;
mod queries;
mod retention;
mod watched;

pub use queries::{BrowsersAlive, LiveRow, ProcessFilter};
pub use retention::Compact;
pub use watched::{EndedRow, Moment, QueueDepth, StartedHook};

pub use crate::domain::ProcessRow;

use crate::domain::{EndReason, ExitOutcome, Kind, Status};
use crate::identity::Identity;
use crate::store::engine::sql::{args, column_text, columns, Column, Row, SqlError};
use crate::store::ProcessTable;
use crate::store::{now_ms, StoreError};

/// The statuses of a row that claims a live process, as an SQL list: the one SQL form of
/// [`Status::is_live`] (a test keeps the two equal).
pub(crate) const LIVE_STATUSES: &str = "('starting', 'running', 'stopping')";

/// A process about to be started.
#[derive(Debug, Clone)]
pub struct NewProcess {
    pub parent_id: Option<i64>,
    pub kind: Kind,
    pub crawl_id: Option<i64>,
    pub snapshot_id: Option<i64>,
    pub result_id: Option<i64>,
    pub argv: Vec<String>,
    pub cwd: String,
    pub timeout_ms: Option<i64>,
}

columns! {
    /// A process row's columns, as [`process_from_row`] reads them.
    pub(in crate::store) enum ProcessColumn {
        id, parent_id, kind, crawl_id, snapshot_id, result_id, pid, boot_id, start_ticks, pgid, argv, cwd, stdout_path, stderr_path, timeout_ms, deadline_at, status, created_at, started_at, sigterm_at, sigkill_at, exit_code, exit_signal, ended_at, end_reason, end_detail, leaking, kill_at, escaped, pidfd_ino, cgroup, cpu_usec, memory_peak, unkillable, deadline_clock, uid, machine_id, uuid,
    }
}

/// The SELECT list of a whole process row (named to be written inline in `format!`).
pub(in crate::store) const COLUMNS: &str = ProcessColumn::LIST;

/// Reads a row selected with [`ProcessColumn::LIST`].
pub(in crate::store) fn process_from_row(row: &Row) -> Result<ProcessRow, SqlError> {
    use ProcessColumn as C;
    let pid: Option<i32> = row.get(C::pid)?;
    let identity = identity_at(row, [C::pid, C::boot_id, C::start_ticks, C::pidfd_ino])?;
    let argv: String = row.get(C::argv)?;
    let argv = serde_json::from_str(&argv).map_err(|e| SqlError::Type {
        column: column_text(C::argv),
        expected: "a JSON list of strings",
        found: format!("text that is not one ({e})"),
    })?;
    Ok(ProcessRow {
        id: row.get(C::id)?,
        parent_id: row.get(C::parent_id)?,
        kind: row.get(C::kind)?,
        crawl_id: row.get(C::crawl_id)?,
        snapshot_id: row.get(C::snapshot_id)?,
        result_id: row.get(C::result_id)?,
        pid,
        identity,
        pgid: row.get(C::pgid)?,
        argv,
        cwd: row.get(C::cwd)?,
        stdout_path: row.get(C::stdout_path)?,
        stderr_path: row.get(C::stderr_path)?,
        timeout_ms: row.get(C::timeout_ms)?,
        deadline_at: row.get(C::deadline_at)?,
        status: row.get(C::status)?,
        created_at: row.get(C::created_at)?,
        started_at: row.get(C::started_at)?,
        sigterm_at: row.get(C::sigterm_at)?,
        sigkill_at: row.get(C::sigkill_at)?,
        exit_code: row.get(C::exit_code)?,
        exit_signal: row.get(C::exit_signal)?,
        ended_at: row.get(C::ended_at)?,
        end_reason: row.get(C::end_reason)?,
        end_detail: row.get(C::end_detail)?,
        leaking: row.get(C::leaking)?,
        kill_at: row.get(C::kill_at)?,
        escaped: row.get(C::escaped)?,
        cgroup: row.get(C::cgroup)?,
        cpu_usec: row.get(C::cpu_usec)?,
        memory_peak: row.get(C::memory_peak)?,
        unkillable: row.get(C::unkillable)?,
        deadline_clock: row.get(C::deadline_clock)?,
        uid: row.get(C::uid)?,
        machine_id: row.get(C::machine_id)?,
        uuid: row.get(C::uuid)?,
    })
}

/// The identity a row records (`columns`: where its pid, boot id, start ticks and pidfd inode
/// are in `row`), if it records one.
pub(in crate::store) fn identity_at(
    row: &Row,
    columns: [impl Column; 4],
) -> Result<Option<Identity>, SqlError> {
    let [pid, boot_id, start_ticks, pidfd_ino] = columns;
    let found: (Option<i32>, Option<String>, Option<i64>) =
        (row.get(pid)?, row.get(boot_id)?, row.get(start_ticks)?);
    Ok(match found {
        (Some(pid), Some(boot_id), Some(ticks)) => Some(Identity {
            boot_id,
            pid,
            start_ticks: ticks as u64,
            pidfd_ino: row.get::<Option<i64>>(pidfd_ino)?.map(|ino| ino as u64),
        }),
        _ => None,
    })
}

impl ProcessTable<'_> {
    /// Records a process about to be spawned (status `starting`) and returns its row id.
    pub fn insert(&self, new: &NewProcess) -> Result<i64, StoreError> {
        self.insert_as(new, &crate::uuid7::new())
    }

    /// [`ProcessTable::insert`], its row's UUID being `uuid` (a fresh UUIDv7).
    pub fn insert_as(&self, new: &NewProcess, uuid: &str) -> Result<i64, StoreError> {
        let argv = serde_json::to_string(&new.argv).expect("strings serialize");
        self.store.write(|tx| {
            Ok(tx
                .query_one(
                    "INSERT INTO processes (parent_id, kind, crawl_id, snapshot_id, result_id, \
                     argv, cwd, timeout_ms, status, created_at, machine_id, uuid) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'starting', ?9, ?10, ?11) \
                     RETURNING id",
                    &args![
                        new.parent_id,
                        new.kind,
                        new.crawl_id,
                        new.snapshot_id,
                        new.result_id,
                        argv,
                        &new.cwd,
                        new.timeout_ms,
                        now_ms(),
                        crate::identity::machine_id(),
                        uuid
                    ],
                )?
                .get(0)?)
        })
    }

    /// Records that the process of row `id` exists: its identity, group and log files. The row
    /// becomes `running`; its deadline is its start plus its timeout. A `child` row another
    /// process recorded for the same process (caught between fork and exec) is merged into it.
    pub fn record_spawned(
        &self,
        id: i64,
        identity: &Identity,
        pgid: i32,
        (stdout_path, stderr_path): (Option<&str>, Option<&str>),
        uid: u32,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        self.store.write(|tx| {
            // Another abxd process enumerating a tree may have seen this process in the instant
            // between its fork and its exec, and recorded it as a `child`: that row is this one.
            let seen = tx.query_opt(
                "SELECT id FROM processes WHERE boot_id = ?1 AND pid = ?2 \
                 AND start_ticks = ?3 AND kind = 'child' AND id != ?4 \
                 AND (pidfd_ino IS NULL OR CAST(?5 AS BIGINT) IS NULL OR pidfd_ino = ?5)",
                &args![
                    &identity.boot_id,
                    identity.pid,
                    identity.start_ticks,
                    id,
                    identity.pidfd_ino
                ],
            )?;
            if let Some(seen) = seen {
                let seen: i64 = seen.get(0)?;
                tx.execute(
                    "UPDATE processes SET parent_id = ?2 WHERE parent_id = ?1",
                    &args![seen, id],
                )?;
                tx.execute("DELETE FROM processes WHERE id = ?1", &args![seen])?;
            }
            tx.execute(
                "UPDATE processes SET pid = ?2, boot_id = ?3, start_ticks = ?4, pgid = ?5, \
                 stdout_path = ?6, stderr_path = ?7, status = 'running', started_at = ?8, \
                 pidfd_ino = ?9, uid = ?11, \
                 deadline_at = CASE WHEN timeout_ms IS NULL THEN NULL ELSE ?8 + timeout_ms END, \
                 deadline_clock = CASE WHEN timeout_ms IS NULL THEN NULL ELSE ?10 + timeout_ms END \
                 WHERE id = ?1 AND status = 'starting'",
                &args![
                    id,
                    identity.pid,
                    &identity.boot_id,
                    identity.start_ticks,
                    pgid,
                    stdout_path,
                    stderr_path,
                    now,
                    identity.pidfd_ino,
                    crate::store::boot_clock_ms(),
                    uid
                ],
            )?;
            Ok(())
        })
    }

    /// Makes a live row final. Does nothing to a row that is final already. Without a `detail`
    /// of its own, a detail noted on the row before (why it was killed: its memory limit) stays.
    pub fn record_end(
        &self,
        id: i64,
        outcome: Option<ExitOutcome>,
        reason: EndReason,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        self.record_end_at(id, outcome, reason, detail, now_ms())
    }

    /// [`ProcessTable::record_end`] of an end seen at `ended_at` (wall-clock ms), written later.
    pub fn record_end_at(
        &self,
        id: i64,
        outcome: Option<ExitOutcome>,
        reason: EndReason,
        detail: Option<&str>,
        ended_at: i64,
    ) -> Result<(), StoreError> {
        let (code, signal) = match outcome {
            Some(ExitOutcome::Code(code)) => (Some(code), None),
            Some(ExitOutcome::Signal(signal)) => (None, Some(signal)),
            None => (None, None),
        };
        let status = if reason == EndReason::Lost {
            Status::Lost
        } else {
            Status::Exited
        };
        self.store.write(|tx| {
            tx.execute(
                &format!(
                    "UPDATE processes SET status = ?2, exit_code = ?3, exit_signal = ?4, \
                     ended_at = ?5, end_reason = ?6, end_detail = COALESCE(?7, end_detail) \
                     WHERE id = ?1 AND status IN {LIVE_STATUSES}"
                ),
                &args![id, status, code, signal, ended_at, reason, detail],
            )?;
            Ok(())
        })
    }

    /// Marks many live rows lost at once, each with its reason, in one transaction (recovery
    /// after a crash may find thousands).
    pub fn record_lost(&self, rows: &[(i64, &str)]) -> Result<(), StoreError> {
        let now = now_ms();
        // One statement per reason, for all its rows (recovery after a crash ends thousands of
        // rows, nearly all for the same reason: one execution each cost a third of READY).
        let mut by_detail: std::collections::BTreeMap<&str, Vec<i64>> = Default::default();
        for (id, detail) in rows {
            by_detail.entry(detail).or_default().push(*id);
        }
        self.store.write(|tx| {
            let sql = format!(
                "UPDATE processes SET status = 'lost', ended_at = ?2, end_reason = 'lost', \
                 end_detail = ?3 WHERE id IN {} AND status IN {LIVE_STATUSES}",
                tx.dialect().integers_of_json("?1")
            );
            for (detail, ids) in &by_detail {
                let ids = serde_json::to_string(ids).expect("numbers serialize");
                tx.execute(&sql, &args![ids, now, *detail])?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn the_sql_list_of_live_statuses_is_is_live() {
        let live: Vec<String> = Status::ALL
            .iter()
            .filter(|s| s.is_live())
            .map(|s| format!("'{s}'"))
            .collect();
        assert_eq!(LIVE_STATUSES, format!("({})", live.join(", ")));
    }

    fn new_hook(parent: Option<i64>) -> NewProcess {
        NewProcess {
            parent_id: parent,
            kind: Kind::Hook,
            crawl_id: None,
            snapshot_id: None,
            result_id: None,
            argv: vec!["sleep".into(), "1".into()],
            cwd: "/".into(),
            timeout_ms: Some(1000),
        }
    }

    fn identity() -> Identity {
        Identity {
            boot_id: "b".into(),
            pid: 42,
            start_ticks: 7,
            pidfd_ino: None,
        }
    }

    /// A row is read by the names of its columns: each name the enum gives is the column the
    /// database returns at that place.
    #[test]
    fn rows_are_read_by_the_names_of_their_columns() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let statement = store
            .sqlite()
            .unwrap()
            .prepare(&format!("SELECT {COLUMNS} FROM processes"))
            .unwrap();
        let names: Vec<&str> = ProcessColumn::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(statement.column_names(), names);
    }

    #[test]
    fn a_batch_commits_at_its_end_and_a_failed_write_in_it_undoes_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let store = Store::open(&path).unwrap();
        let reader = Store::open_read_only(&path).unwrap();
        let found = crate::proctree::Found {
            identity: identity(),
            ppid: 1,
            pgid: 42,
            argv: vec!["x".into()],
            state: 'S',
            uid: None,
        };
        let id = store.batch(|store| {
            let id = store.batch(|store| store.processes().insert(&new_hook(None)).unwrap());
            assert!(
                reader.processes().get(id).unwrap().is_none(),
                "not visible before the outermost batch ends"
            );
            // A descendant of a row that does not exist: the write fails, and only it.
            assert!(store
                .processes()
                .record_descendant(id + 100, &found)
                .is_err());
            store
                .processes()
                .record_spawned(id, &identity(), 42, (None, None), 0)
                .unwrap();
            id
        });
        let row = reader.processes().get(id).unwrap().unwrap();
        assert_eq!(row.status, Status::Running);
        assert_eq!(store.failed_writes(), 1);
        assert_eq!(
            reader.processes().list(&Default::default()).unwrap().len(),
            1
        );
    }

    #[test]
    fn row_lifecycle_is_recorded_and_final_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let id = store.processes().insert(&new_hook(None)).unwrap();
        assert_eq!(
            store.processes().get(id).unwrap().unwrap().status,
            Status::Starting
        );

        store
            .processes()
            .record_spawned(id, &identity(), 42, (Some("/o"), Some("/e")), 0)
            .unwrap();
        let row = store.processes().get(id).unwrap().unwrap();
        assert_eq!(row.status, Status::Running);
        assert_eq!(row.identity, Some(identity()));
        assert_eq!(row.deadline_at, Some(row.started_at.unwrap() + 1000));

        store
            .processes()
            .record_signal(id, crate::signal::Signal::TERM, now_ms(), None)
            .unwrap();
        let row = store.processes().get(id).unwrap().unwrap();
        assert_eq!(
            row.status,
            Status::Stopping,
            "a signal never makes a row exited"
        );
        assert!(row.sigterm_at.is_some());

        store
            .processes()
            .record_end(id, Some(ExitOutcome::Signal(15)), EndReason::Exited, None)
            .unwrap();
        store
            .processes()
            .record_end(id, Some(ExitOutcome::Code(0)), EndReason::Exited, None)
            .unwrap();
        let row = store.processes().get(id).unwrap().unwrap();
        assert_eq!(
            (row.status, row.exit_signal, row.exit_code),
            (Status::Exited, Some(15), None)
        );
    }

    #[test]
    fn live_filter_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let a = store.processes().insert(&new_hook(None)).unwrap();
        let b = store.processes().insert(&new_hook(Some(a))).unwrap();
        store
            .processes()
            .record_end(b, None, EndReason::Lost, Some("gone"))
            .unwrap();
        let live = store
            .processes()
            .list(&crate::store::ProcessFilter {
                live_only: true,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(live.iter().map(|r| r.id).collect::<Vec<_>>(), vec![a]);
        assert_eq!(
            store.processes().live_counts_by_kind().unwrap(),
            std::collections::BTreeMap::from([(Kind::Hook, 1)])
        );
        assert_eq!(
            store.processes().get(b).unwrap().unwrap().status,
            Status::Lost
        );
    }

    #[test]
    fn a_child_row_recorded_between_fork_and_exec_is_merged_into_the_spawned_row() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let parent = store.processes().insert(&new_hook(None)).unwrap();
        let id = store.processes().insert(&new_hook(Some(parent))).unwrap();
        // Someone else's tree walk saw the process first, and one of its children too.
        let found = crate::proctree::Found {
            identity: identity(),
            ppid: 1,
            pgid: 42,
            argv: vec!["abxd".into()],
            state: 'R',
            uid: None,
        };
        let seen = store.processes().record_descendant(parent, &found).unwrap();
        let grandchild = crate::proctree::Found {
            identity: Identity {
                pid: 43,
                ..identity()
            },
            ..found.clone()
        };
        let below = store
            .processes()
            .record_descendant(seen, &grandchild)
            .unwrap();
        store
            .processes()
            .record_spawned(id, &identity(), 42, (None, None), 0)
            .unwrap();
        assert!(store.processes().get(seen).unwrap().is_none());
        assert_eq!(
            store.processes().get(below).unwrap().unwrap().parent_id,
            Some(id)
        );
        assert_eq!(
            store.processes().get(id).unwrap().unwrap().status,
            Status::Running
        );
    }

    #[test]
    fn a_descendant_found_by_a_teardown_is_recorded_with_its_signal_in_one_statement() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let hook = store.processes().insert(&new_hook(None)).unwrap();
        let found = |pid| crate::proctree::Found {
            identity: Identity { pid, ..identity() },
            ppid: 1,
            pgid: 42,
            argv: vec!["sleep".into()],
            state: 'S',
            uid: None,
        };
        let term = (crate::signal::Signal::TERM, 1_000, Some(6_000));
        let (termed, noted) = store
            .processes()
            .record_descendant_signalled(hook, &found(50), term)
            .unwrap();
        assert!(noted);
        let row = store.processes().get(termed).unwrap().unwrap();
        assert_eq!(
            (row.status, row.sigterm_at, row.sigkill_at),
            (Status::Stopping, Some(1_000), None)
        );
        let kill = (crate::signal::Signal::KILL, 2_000, None);
        let (killed, _) = store
            .processes()
            .record_descendant_signalled(hook, &found(51), kill)
            .unwrap();
        let row = store.processes().get(killed).unwrap().unwrap();
        assert_eq!((row.sigterm_at, row.sigkill_at), (None, Some(2_000)));
        // Found again: its row is the one, and the signal is left to `record_signal`.
        assert_eq!(
            store
                .processes()
                .record_descendant_signalled(hook, &found(50), kill)
                .unwrap(),
            (termed, false)
        );
        let untouched = store
            .processes()
            .record_descendant(hook, &found(52))
            .unwrap();
        let row = store.processes().get(untouched).unwrap().unwrap();
        assert_eq!((row.status, row.sigterm_at), (Status::Running, None));
    }
}
