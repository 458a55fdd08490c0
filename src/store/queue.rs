//! The leased queues: claiming a crawl or snapshot, owning and renewing it, putting it back,
//! sealing it.
//!
//! Invariants: a claim is one atomic compare-and-set (inside `BEGIN IMMEDIATE`) that moves
//! `retry_at` into the future; a future `retry_at` means owned and is never claimed by anyone
//! else; only the owner renews it; a sealed row is never claimed, requeued or sealed again.

use super::sql::args;
use super::work::{millis, Lease, Queue};
use super::{now_ms, queue_clock_ms, Store, StoreError};
use std::time::Duration;

impl Store {
    /// Claims the next due, queued row of `queue` within `crawl_id` (for crawls: that crawl
    /// only, if given; for snapshots: that crawl's) for `lease`: one compare-and-set on
    /// `retry_at`. Returns the claimed row's id.
    pub fn claim(
        &mut self,
        queue: Queue,
        crawl_id: Option<i64>,
        lease: Duration,
    ) -> Result<Option<i64>, StoreError> {
        let table = queue.table();
        let scope = match queue {
            Queue::Crawls => "AND (CAST(?3 AS BIGINT) IS NULL OR id = ?3) AND paused_at IS NULL",
            Queue::Snapshots => "AND crawl_id = ?3",
        };
        let (now, wall) = (queue_clock_ms(), now_ms());
        self.write(|tx| {
            let sql = format!(
                "UPDATE {table} SET status = 'started', retry_at = CAST(?1 AS BIGINT) + ?2, \
                 started_at = COALESCE(started_at, ?4) \
                 WHERE id = (SELECT id FROM {table} WHERE status = 'queued' AND retry_at <= ?1 \
                             {scope} ORDER BY retry_at, id LIMIT 1{}) \
                   AND status = 'queued' AND retry_at <= ?1 \
                 RETURNING id",
                tx.dialect().skip_locked()
            );
            let lease = millis(lease);
            let id = tx.query_opt(&sql, &args![now, lease, crawl_id, wall])?;
            Ok(id.map(|row| row.get(0)).transpose()?)
        })
    }

    /// Makes `retry_at` (boot-clock ms, see [`queue_clock_ms`]) mean this boot: after a
    /// reboot (or an upgrade from wall-clock times) every unsealed row is due now; a started
    /// row's owner is judged by its identity, which a reboot ended anyway.
    pub fn rebase_queue_clock(&mut self) -> Result<(), StoreError> {
        let boot = crate::identity::boot_id();
        self.write(|tx| {
            let recorded = tx.query_opt("SELECT value FROM meta WHERE key = 'queue_boot'", &[])?;
            let recorded: Option<String> = recorded.map(|row| row.get(0)).transpose()?;
            if recorded.as_deref() != Some(boot) {
                for table in ["crawls", "snapshots"] {
                    tx.execute(
                        &format!("UPDATE {table} SET retry_at = 0 WHERE status != 'sealed'"),
                        &[],
                    )?;
                }
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('queue_boot', ?1) \
                     ON CONFLICT(key) DO UPDATE SET value = ?1",
                    &args![boot],
                )?;
            }
            Ok(())
        })
    }

    /// Hands a claimed row to the process that works on it.
    pub fn set_owner(&mut self, queue: Queue, id: i64, owner: i64) -> Result<(), StoreError> {
        let table = queue.table();
        self.write(|tx| {
            tx.execute(
                &format!("UPDATE {table} SET owner_id = ?2 WHERE id = ?1"),
                &args![id, owner],
            )?;
            Ok(())
        })
    }

    /// Extends `lease` from now. Returns false when the lease is no longer this owner's.
    pub fn renew(&mut self, lease: &Lease) -> Result<bool, StoreError> {
        let table = lease.queue.table();
        let now = queue_clock_ms();
        self.write(|tx| {
            let changed = tx.execute(
                &format!(
                    "UPDATE {table} SET retry_at = ?3 WHERE id = ?1 AND owner_id = ?2 \
                     AND status = 'started'"
                ),
                &args![lease.id, lease.owner, now + millis(lease.duration)],
            )?;
            Ok(changed == 1)
        })
    }

    /// Puts a started row back in the queue, due at `retry_at`, counting the restart.
    pub fn requeue(&mut self, queue: Queue, id: i64, retry_at: i64) -> Result<(), StoreError> {
        let table = queue.table();
        self.write(|tx| {
            tx.execute(
                &format!(
                    "UPDATE {table} SET status = 'queued', retry_at = ?2, owner_id = NULL, \
                     restarts = restarts + 1 WHERE id = ?1 AND status = 'started'"
                ),
                &args![id, retry_at],
            )?;
            Ok(())
        })
    }

    /// Ids, owners and lease ends of the rows of `queue` that are `started`.
    pub fn started(&self, queue: Queue) -> Result<Vec<(i64, Option<i64>, i64)>, StoreError> {
        let table = queue.table();
        let rows = self.db().query(
            &format!(
                "SELECT id, owner_id, retry_at FROM {table} WHERE status = 'started' ORDER BY id"
            ),
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .collect::<Result<_, super::sql::SqlError>>()?)
    }

    /// Seals a row: its work is done for good.
    pub fn seal(&mut self, queue: Queue, id: i64) -> Result<(), StoreError> {
        let table = queue.table();
        let now = now_ms();
        self.write(|tx| {
            tx.execute(
                &format!(
                    "UPDATE {table} SET status = 'sealed', sealed_at = ?2 \
                     WHERE id = ?1 AND status != 'sealed'"
                ),
                &args![id, now],
            )?;
            if queue == Queue::Crawls {
                tx.execute(
                    "UPDATE crawls SET outcome = COALESCE(outcome, 'finished') WHERE id = ?1",
                    &args![id],
                )?;
            }
            Ok(())
        })
    }

    /// How many rows of `queue` wait to be claimed.
    pub fn queued_count(&self, queue: Queue) -> Result<u64, StoreError> {
        let table = queue.table();
        let sql = format!("SELECT count(*) FROM {table} WHERE status = 'queued'");
        Ok(self.db().query_one(&sql, &[])?.get(0)?)
    }

    /// When the next queued row of `queue` becomes due (within `crawl_id` if given, as for
    /// [`Store::claim`]), if one is waiting.
    pub fn next_retry_at(
        &self,
        queue: Queue,
        crawl_id: Option<i64>,
    ) -> Result<Option<i64>, StoreError> {
        let table = queue.table();
        let scope = match queue {
            Queue::Crawls => "(CAST(?1 AS BIGINT) IS NULL OR id = ?1) AND paused_at IS NULL",
            Queue::Snapshots => "CAST(?1 AS BIGINT) IS NULL OR crawl_id = ?1",
        };
        let sql =
            format!("SELECT min(retry_at) FROM {table} WHERE status = 'queued' AND ({scope})");
        Ok(self.db().query_one(&sql, &args![crawl_id])?.get(0)?)
    }
}
