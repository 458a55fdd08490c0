//! Processes found in procfs below a row (a hook's descendants, what a teardown finds) recorded
//! as `child` rows of it.
//!
//! Invariant: a process is recorded once — by whichever abxd process sees it first — under its
//! identity (boot id, pid, start time, pidfd inode); whoever finds it again gets that row. What
//! is recorded of it was read when it was found (pinned), not inside the write lock.

use crate::store::engine::sql::args;
use crate::store::ProcessTable;
use crate::store::{now_ms, StoreError};

impl ProcessTable<'_> {
    /// Records a process found in procfs below row `parent_id` as a `child` row (once: a process
    /// already recorded keeps its row). Returns its row id.
    pub fn record_descendant(
        &self,
        parent_id: i64,
        found: &crate::proctree::Found,
    ) -> Result<i64, StoreError> {
        Ok(self.record_found(parent_id, found, None)?.0)
    }

    /// [`ProcessTable::record_descendant`] of a process about to be sent `signal.0` (at wall-clock ms
    /// `signal.1`, SIGKILL due at `signal.2`): a row it makes is `stopping` with the signal
    /// recorded, in the same statement. Returns its row id, and whether the signal is recorded
    /// (not when the process had a row already: that is for [`ProcessTable::record_signal`]).
    pub fn record_descendant_signalled(
        &self,
        parent_id: i64,
        found: &crate::proctree::Found,
        signal: (crate::signal::Signal, i64, Option<i64>),
    ) -> Result<(i64, bool), StoreError> {
        self.record_found(parent_id, found, Some(signal))
    }

    fn record_found(
        &self,
        parent_id: i64,
        found: &crate::proctree::Found,
        signal: Option<(crate::signal::Signal, i64, Option<i64>)>,
    ) -> Result<(i64, bool), StoreError> {
        // (As `record_signal` writes them: SIGKILL in its column, any other in SIGTERM's.)
        let (sigterm_at, sigkill_at, kill_at) = match signal {
            None => (None, None, None),
            Some((sent, at, kill_at)) if sent == crate::signal::Signal::KILL => {
                (None, Some(at), kill_at)
            }
            Some((_, at, kill_at)) => (Some(at), None, kill_at),
        };
        let argv = serde_json::to_string(&found.argv).expect("strings serialize");
        let identity = &found.identity;
        let now = now_ms();
        // (Read before the write lock, unless the caller read it when it pinned the process.)
        let uid = (found.uid).or_else(|| crate::procstat::real_uid(identity.pid));
        self.store.write(|tx| {
            let inserted = tx.query_opt(
                "INSERT INTO processes (parent_id, kind, crawl_id, snapshot_id, result_id, pid, \
                 boot_id, start_ticks, pgid, argv, cwd, status, created_at, started_at, \
                 pidfd_ino, uid, machine_id, sigterm_at, sigkill_at, kill_at, uuid) \
                 SELECT id, 'child', crawl_id, snapshot_id, result_id, ?2, ?3, ?4, ?5, ?6, '', \
                 CASE WHEN CAST(?10 AS BIGINT) IS NULL AND CAST(?11 AS BIGINT) IS NULL \
                 THEN 'running' ELSE 'stopping' END, \
                 ?7, ?7, ?8, ?9, machine_id, ?10, ?11, ?12, ?13 FROM processes WHERE id = ?1 \
                 ON CONFLICT DO NOTHING RETURNING id",
                &args![
                    parent_id,
                    identity.pid,
                    &identity.boot_id,
                    identity.start_ticks,
                    found.pgid,
                    argv,
                    now,
                    identity.pidfd_ino,
                    uid,
                    sigterm_at,
                    sigkill_at,
                    kill_at,
                    crate::uuid7::new()
                ],
            )?;
            if let Some(inserted) = inserted {
                return Ok((inserted.get(0)?, signal.is_some()));
            }
            // (Recorded before, by this process or another: its row is the one.)
            Ok(tx
                .query_one(
                    "SELECT id FROM processes WHERE boot_id = ?1 AND pid = ?2 AND start_ticks = ?3 \
                     AND COALESCE(pidfd_ino, 0) = COALESCE(CAST(?4 AS BIGINT), 0)",
                    &args![
                        &identity.boot_id,
                        identity.pid,
                        identity.start_ticks,
                        identity.pidfd_ino
                    ],
                )?
                .get(0)
                .map(|id| (id, false))?)
        })
    }
}
