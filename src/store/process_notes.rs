//! Notes on a process row that never change its status: it leaked, it escaped its hook's tree,
//! something an operator must know about its end.

use super::{Store, StoreError};
use rusqlite::params;

impl Store {
    /// Flags row `id` as leaking: it exited while processes it started lived on.
    pub fn set_leaking(&mut self, id: i64) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.prepare_cached("UPDATE processes SET leaking = 1 WHERE id = ?1")?
                .execute([id])?;
            Ok(())
        })
    }

    /// Flags row `id` as escaped: found as an unknown child of a supervising process.
    pub fn set_escaped(&mut self, id: i64) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.prepare_cached("UPDATE processes SET escaped = 1 WHERE id = ?1")?
                .execute([id])?;
            Ok(())
        })
    }

    /// Records the cgroup row `id`'s process runs in.
    pub fn set_cgroup(&mut self, id: i64, cgroup: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.prepare_cached("UPDATE processes SET cgroup = ?2 WHERE id = ?1")?
                .execute(params![id, cgroup])?;
            Ok(())
        })
    }

    /// Records what row `id`'s cgroup measured of it and its descendants.
    pub fn record_usage(
        &mut self,
        id: i64,
        cpu_usec: Option<u64>,
        memory_peak: Option<u64>,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.prepare_cached(
                "UPDATE processes SET cpu_usec = ?2, memory_peak = ?3 WHERE id = ?1",
            )?
            .execute(params![
                id,
                cpu_usec.map(|v| v as i64),
                memory_peak.map(|v| v as i64)
            ])?;
            Ok(())
        })
    }

    /// Flags row `id` unkillable, saying why: its scope goes on without it, its row stays live.
    pub fn set_unkillable(&mut self, id: i64, detail: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.prepare_cached(
                "UPDATE processes SET unkillable = 1, end_detail = ?2 WHERE id = ?1",
            )?
            .execute(params![id, detail])?;
            Ok(())
        })
    }

    /// Notes something an operator must know on row `id`, without changing its status.
    pub fn set_end_detail(&mut self, id: i64, detail: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.prepare_cached("UPDATE processes SET end_detail = ?2 WHERE id = ?1")?
                .execute(params![id, detail])?;
            Ok(())
        })
    }
}
