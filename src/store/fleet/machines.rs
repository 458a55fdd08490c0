//! Machines: the hosts whose daemons write to this store, each registered by its daemon at
//! start and, on a shared store, kept fresh by a heartbeat.
//!
//! Invariants: a machine's row is keyed by its stable id (`identity::machine_id`) and rewritten
//! whole at each daemon start (a new boot, version or hostname replaces the old); only its own
//! daemon writes it; a heartbeat moves `heartbeat_at` forward, never back. Its times are on the
//! clock every host sharing the store reads ([`Store::shared_now`](crate::store::Store::shared_now)), so one host's clock being
//! off never makes another look silent.

pub use crate::domain::Machine;

use crate::store::engine::sql::{args, columns, Row, SqlError};
use crate::store::Machines;
use crate::store::StoreError;

impl Machines<'_> {
    /// Registers `machine` (replacing what an earlier start of it registered).
    pub fn register(&self, machine: &Machine) -> Result<(), StoreError> {
        self.store.write(|tx| {
            tx.execute(
                "INSERT INTO machines (id, hostname, boot_id, version, started_at, heartbeat_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (id) DO UPDATE SET hostname = ?2, boot_id = ?3, version = ?4, \
                 started_at = ?5, heartbeat_at = ?6",
                &args![
                    &machine.id,
                    &machine.hostname,
                    &machine.boot_id,
                    &machine.version,
                    machine.started_at,
                    machine.heartbeat_at
                ],
            )?;
            Ok(())
        })
    }

    /// Says that machine `id` is alive now (on the clock the hosts share).
    pub fn heartbeat(&self, id: &str) -> Result<(), StoreError> {
        let now = self.store.shared_now();
        self.store.write(|tx| {
            tx.execute(
                "UPDATE machines SET heartbeat_at = ?2 WHERE id = ?1 AND heartbeat_at < ?2",
                &args![id, now],
            )?;
            Ok(())
        })
    }

    /// Whether machine `id` said it was alive at `since` (shared clock, ms) or later.
    pub fn machine_heard_since(&self, id: &str, since: i64) -> Result<bool, StoreError> {
        let sql = "SELECT count(*) FROM machines WHERE id = ?1 AND heartbeat_at >= ?2";
        let heard: i64 = self.store.db().query_one(sql, &args![id, since])?.get(0)?;
        Ok(heard == 1)
    }

    /// The live rows of the machines other than this one that were not heard from since
    /// `since` (shared clock, ms): presumed dead, their work is the others' to recover.
    pub fn rows_of_silent_machines(&self, since: i64) -> Result<Vec<i64>, StoreError> {
        let sql = format!(
            "SELECT p.id FROM processes p JOIN machines m ON m.id = p.machine_id \
             WHERE p.status IN {} AND m.id != ?1 AND m.heartbeat_at < ?2 ORDER BY p.id",
            crate::store::processes::LIVE_STATUSES
        );
        let me = crate::identity::machine_id();
        Ok(self
            .store
            .db()
            .query_map(&sql, &args![me, since], |r| r.get(0))?)
    }

    /// The live rows of machine `id`.
    pub fn live_rows_of_machine(&self, id: &str) -> Result<Vec<i64>, StoreError> {
        let sql = format!(
            "SELECT id FROM processes WHERE machine_id = ?1 AND status IN {} ORDER BY id",
            crate::store::processes::LIVE_STATUSES
        );
        Ok(self.store.db().query_map(&sql, &args![id], |r| r.get(0))?)
    }

    /// Removes machine `id`'s row if it was not heard from since `since` (shared clock, ms):
    /// whether it did. (A heartbeat of it that comes later changes nothing; its daemon
    /// registers it again when it starts.)
    pub fn remove_silent(&self, id: &str, since: i64) -> Result<bool, StoreError> {
        self.store.write(|tx| {
            let removed = tx.execute(
                "DELETE FROM machines WHERE id = ?1 AND heartbeat_at < ?2",
                &args![id, since],
            )?;
            Ok(removed == 1)
        })
    }

    /// Adds what a worker's writes found of a busy database — `busy` writes that waited, and
    /// `refused` ones refused at once (see `busy`) — to machine `id`'s counts.
    pub fn add_worker_write_counts(
        &self,
        id: &str,
        (busy, refused): (u64, u64),
    ) -> Result<(), StoreError> {
        self.store.write(|tx| {
            tx.execute(
                "UPDATE machines SET worker_busy_writes = worker_busy_writes + ?2, \
                 worker_refused_writes = worker_refused_writes + ?3 WHERE id = ?1",
                &args![id, busy as i64, refused as i64],
            )?;
            Ok(())
        })
    }

    /// What the workers of machine `id` that exited found of a busy database: writes that
    /// waited, and writes refused at once.
    pub fn worker_write_counts(&self, id: &str) -> Result<(u64, u64), StoreError> {
        let row = self.store.db().query_opt(
            "SELECT worker_busy_writes, worker_refused_writes FROM machines WHERE id = ?1",
            &args![id],
        )?;
        let Some(row) = row else {
            return Ok((0, 0));
        };
        let count = |column| row.get::<i64>(column).map(|n| n.max(0) as u64);
        Ok((count(0)?, count(1)?))
    }

    /// Every registered machine, by id.
    pub fn all(&self) -> Result<Vec<Machine>, StoreError> {
        Ok(self.store.db().query_map(
            &format!("SELECT {} FROM machines ORDER BY id", MachineColumn::LIST),
            &[],
            machine_from_row,
        )?)
    }
}

columns! {
    /// A machine's columns, as [`machine_from_row`] reads them.
    enum MachineColumn { id, hostname, boot_id, version, started_at, heartbeat_at }
}

/// Reads a row selected with [`MachineColumn::LIST`].
fn machine_from_row(row: &Row) -> Result<Machine, SqlError> {
    use MachineColumn as C;
    Ok(Machine {
        id: row.get(C::id)?,
        hostname: row.get(C::hostname)?,
        boot_id: row.get(C::boot_id)?,
        version: row.get(C::version)?,
        started_at: row.get(C::started_at)?,
        heartbeat_at: row.get(C::heartbeat_at)?,
    })
}
