//! Notes on a process row that never make it final: the signals sent to it (a running row
//! becomes `stopping`), it leaked, it escaped its hook's tree, its cgroup and what that measured,
//! it survived SIGKILL, something an operator must know about its end.

use crate::domain::EndDetail;
use crate::store::engine::sql::{args, Value};
use crate::store::ProcessTable;
use crate::store::StoreError;

impl ProcessTable<'_> {
    /// Records that `signal` was sent to row `id` at `at` (the first SIGTERM and the first SIGKILL
    /// are kept) and, for the first signal of a teardown, when SIGKILL is due; a running row
    /// becomes `stopping`.
    pub fn record_signal(
        &self,
        id: i64,
        signal: crate::signal::Signal,
        at: i64,
        kill_at: Option<i64>,
    ) -> Result<(), StoreError> {
        // (Two fixed statements, each parsed once.)
        let sql = if signal == crate::signal::Signal::KILL {
            "UPDATE processes SET sigkill_at = COALESCE(sigkill_at, ?2), \
             kill_at = COALESCE(?3, kill_at), \
             status = CASE status WHEN 'running' THEN 'stopping' ELSE status END WHERE id = ?1"
        } else {
            "UPDATE processes SET sigterm_at = COALESCE(sigterm_at, ?2), \
             kill_at = COALESCE(?3, kill_at), \
             status = CASE status WHEN 'running' THEN 'stopping' ELSE status END WHERE id = ?1"
        };
        self.update_row(sql, &args![id, at, kill_at])
    }

    /// Flags row `id` as leaking: it exited while processes it started lived on.
    pub fn set_leaking(&self, id: i64) -> Result<(), StoreError> {
        self.update_row("UPDATE processes SET leaking = 1 WHERE id = ?1", &args![id])
    }

    /// Flags row `id` as escaped: found as an unknown child of a supervising process.
    pub fn set_escaped(&self, id: i64) -> Result<(), StoreError> {
        self.update_row("UPDATE processes SET escaped = 1 WHERE id = ?1", &args![id])
    }

    /// Records the cgroup row `id`'s process runs in.
    pub fn set_cgroup(&self, id: i64, cgroup: &str) -> Result<(), StoreError> {
        self.update_row(
            "UPDATE processes SET cgroup = ?2 WHERE id = ?1",
            &args![id, cgroup],
        )
    }

    /// Records what row `id`'s cgroup measured of it and its descendants.
    pub fn record_usage(
        &self,
        id: i64,
        cpu_usec: Option<u64>,
        memory_peak: Option<u64>,
    ) -> Result<(), StoreError> {
        self.update_row(
            "UPDATE processes SET cpu_usec = ?2, memory_peak = ?3 WHERE id = ?1",
            &args![id, cpu_usec, memory_peak],
        )
    }

    /// Flags row `id` unkillable, saying why: its scope goes on without it, its row stays live.
    pub fn set_unkillable(&self, id: i64, detail: &EndDetail) -> Result<(), StoreError> {
        self.update_row(
            "UPDATE processes SET unkillable = 1, end_detail = ?2 WHERE id = ?1",
            &args![id, detail],
        )
    }

    /// Notes something an operator must know on row `id`, without changing its status.
    pub fn set_end_detail(&self, id: i64, detail: &EndDetail) -> Result<(), StoreError> {
        self.update_row(
            "UPDATE processes SET end_detail = ?2 WHERE id = ?1",
            &args![id, detail],
        )
    }

    /// One statement on one row, in its own write.
    fn update_row(&self, sql: &str, args: &[Value]) -> Result<(), StoreError> {
        self.store.write(|tx| {
            tx.execute(sql, args)?;
            Ok(())
        })
    }
}
