//! The leased queues: claiming a crawl or snapshot, owning and renewing it, putting it back,
//! sealing it.
//!
//! Invariants: a claim is one atomic compare-and-set (inside `BEGIN IMMEDIATE`, or past rows
//! other claimers hold with `SKIP LOCKED`) that moves `retry_at` into the future on the queue
//! clock and the epoch one on (the claim's fencing token, see `fence`); a future `retry_at`
//! means owned and is never claimed by anyone else; only the owner renews it, and only at its
//! claim's epoch; putting back and sealing are conditional on the epoch they were decided at
//! and move it on, so each happens once, by whoever still holds the claim; a sealed row is
//! never claimed, requeued or sealed again.

use crate::domain::{Claim, Lease, Queue};
use crate::store::engine::sql::{args, Db};
use crate::store::work::{millis, table};
use crate::store::WorkQueue;
use crate::store::{now_ms, StoreError};
use std::time::Duration;

impl WorkQueue<'_> {
    /// Claims the next due, queued row of `queue` within `crawl_id` (for crawls: that crawl
    /// only, if given; for snapshots: that crawl's, if given, else those of the running,
    /// unpaused crawls whose workers run on other machines and that run no crawl-scoped hook in
    /// the background — what a host of a fleet lends its free snapshot slots to) for `lease`: one compare-and-set on `retry_at`. The row is owned
    /// by process row `claimer` until it hands it to a worker ([`WorkQueue::set_owner`]), so work
    /// claimed by a process that died before it started the worker is recovered with the rest
    /// of that process's work (`None`: no process claims, for tools and tests). Worker pools
    /// claim snapshots through [`Hosts::claim_snapshot`](crate::store::Hosts::claim_snapshot)
    /// instead, which holds them to `[politeness]`; this one takes the next due whatever its site.
    pub fn claim(
        &self,
        queue: Queue,
        crawl_id: Option<i64>,
        lease: Duration,
        claimer: Option<i64>,
    ) -> Result<Option<Claim>, StoreError> {
        let table = table(queue);
        let next = next_due(queue, crawl_id, "?1", "?3", "?5");
        let (now, wall) = (self.store.queue_now(), now_ms());
        self.store.write_work(|tx| {
            let sql = format!(
                "UPDATE {table} SET status = 'started', retry_at = CAST(?1 AS BIGINT) + ?2, \
                 started_at = COALESCE(started_at, ?4), epoch = epoch + 1, owner_id = ?6 \
                 WHERE id = ({next}{}) \
                   AND status = 'queued' AND retry_at <= ?1 \
                 RETURNING id, epoch",
                tx.dialect().skip_locked()
            );
            let lease = millis(lease);
            let me = crate::identity::machine_id();
            let args = args![now, lease, crawl_id, wall, me, claimer];
            let claimed = tx.query_opt(&sql, &args)?;
            claimed
                .map(|row| {
                    Ok(Claim {
                        queue,
                        id: row.get(0)?,
                        epoch: row.get(1)?,
                    })
                })
                .transpose()
        })
    }

    /// Makes `retry_at` mean this boot on a store of one host, whose queue clock is its boot
    /// clock: after a reboot (or an upgrade from wall-clock times) every unsealed row is due
    /// now; a started row's owner is judged by its identity, which a reboot ended anyway. (A
    /// shared store's queue clock is the server's, which no host's reboot restarts.)
    pub fn rebase_queue_clock(&self) -> Result<(), StoreError> {
        if self.store.is_shared() {
            return Ok(());
        }
        let boot = crate::identity::boot_id();
        self.store.write(|tx| {
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

    /// Hands a claimed row to the process that works on it. Returns false when the claim no
    /// longer holds.
    pub fn set_owner(&self, claim: Claim, owner: i64) -> Result<bool, StoreError> {
        let table = table(claim.queue);
        self.store.write_work(|tx| {
            let changed = tx.execute(
                &format!("UPDATE {table} SET owner_id = ?3 WHERE id = ?1 AND epoch = ?2"),
                &args![claim.id, claim.epoch, owner],
            )?;
            Ok(changed == 1)
        })
    }

    /// Whether `claim` still holds and its `claimer` still owns it (its worker not started).
    pub fn still_claimed(&self, claim: Claim, claimer: i64) -> Result<bool, StoreError> {
        let sql = format!(
            "SELECT count(*) FROM {} WHERE id = ?1 AND epoch = ?2 AND status = 'started' \
             AND owner_id = ?3",
            table(claim.queue)
        );
        let args = args![claim.id, claim.epoch, claimer];
        let found: i64 = self.store.db().query_one(&sql, &args)?.get(0)?;
        Ok(found == 1)
    }

    /// The claim process row `owner` holds on row `id` of `queue`, if it holds one: what a
    /// worker fences its writes to when it starts.
    pub fn claim_of(&self, queue: Queue, id: i64, owner: i64) -> Result<Option<Claim>, StoreError> {
        let sql = format!(
            "SELECT epoch FROM {} WHERE id = ?1 AND owner_id = ?2 AND status = 'started'",
            table(queue)
        );
        let epoch: Option<i64> = self.store.db().query_value(&sql, &args![id, owner])?;
        Ok(epoch.map(|epoch| Claim { queue, id, epoch }))
    }

    /// Extends `lease` from now. Returns false when the lease is no longer this owner's.
    pub fn renew(&self, lease: &Lease) -> Result<bool, StoreError> {
        let table = table(lease.claim.queue);
        let until = self.store.queue_now() + millis(lease.duration);
        self.store.write(|tx| {
            let changed = tx.execute(
                &format!(
                    "UPDATE {table} SET retry_at = ?4 WHERE id = ?1 AND owner_id = ?2 \
                     AND epoch = ?3 AND status = 'started'"
                ),
                &args![lease.claim.id, lease.owner, lease.claim.epoch, until],
            )?;
            Ok(changed == 1)
        })
    }

    /// Puts a started row back in the queue, due at `retry_at` (queue clock), counting the
    /// restart — unless it changed hands since `claim`. Returns whether it did.
    pub fn requeue(&self, claim: Claim, retry_at: i64) -> Result<bool, StoreError> {
        let table = table(claim.queue);
        self.store.write_work(|tx| {
            let changed = tx.execute(
                &format!(
                    "UPDATE {table} SET status = 'queued', retry_at = ?3, owner_id = NULL, \
                     restarts = restarts + 1, epoch = epoch + 1 \
                     WHERE id = ?1 AND epoch = ?2 AND status = 'started'"
                ),
                &args![claim.id, claim.epoch, retry_at],
            )?;
            Ok(changed == 1)
        })
    }

    /// The claims on the rows of `queue` that are `started`, with their owners and lease ends.
    pub fn started(&self, queue: Queue) -> Result<Vec<(Claim, Option<i64>, i64)>, StoreError> {
        let table = table(queue);
        let rows = self.store.db().query(
            &format!(
                "SELECT id, epoch, owner_id, retry_at FROM {table} WHERE status = 'started' \
                 ORDER BY id"
            ),
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                let claim = Claim {
                    queue,
                    id: r.get(0)?,
                    epoch: r.get(1)?,
                };
                Ok((claim, r.get(2)?, r.get(3)?))
            })
            .collect::<Result<_, crate::store::engine::sql::SqlError>>()?)
    }

    /// Seals a row: its work is done for good — unless it changed hands since `claim`.
    /// Returns whether it did. A store fenced to this claim follows it to its new epoch.
    pub fn seal(&self, claim: Claim) -> Result<bool, StoreError> {
        self.seal_with(claim, |_| Ok(()))
    }

    /// [`WorkQueue::seal`], with what `first` writes in the same transaction (see `limits`).
    pub(in crate::store) fn seal_with(
        &self,
        claim: Claim,
        first: impl FnOnce(&Db) -> Result<(), StoreError>,
    ) -> Result<bool, StoreError> {
        let table = table(claim.queue);
        let now = now_ms();
        let sealed = self.store.commits.durably(|| {
            self.store.write_work(|tx| {
                first(tx)?;
                let changed = tx.execute(
                    &format!(
                        "UPDATE {table} SET status = 'sealed', sealed_at = ?3, epoch = epoch + 1 \
                     WHERE id = ?1 AND epoch = ?2 AND status != 'sealed'"
                    ),
                    &args![claim.id, claim.epoch, now],
                )?;
                if changed == 1 && claim.queue == Queue::Crawls {
                    tx.execute(
                        "UPDATE crawls SET outcome = COALESCE(outcome, 'finished') WHERE id = ?1",
                        &args![claim.id],
                    )?;
                }
                Ok(changed == 1)
            })
        })?;
        if sealed {
            self.store.follow_fence(claim, claim.epoch + 1);
        }
        Ok(sealed)
    }

    /// How many rows of `queue` wait to be claimed.
    pub fn queued_count(&self, queue: Queue) -> Result<u64, StoreError> {
        let table = table(queue);
        let sql = format!("SELECT count(*) FROM {table} WHERE status = 'queued'");
        Ok(self.store.db().query_one(&sql, &[])?.get(0)?)
    }

    /// When the next queued row of `queue` becomes due (queue clock; within `crawl_id` if
    /// given, as for [`WorkQueue::claim`]), if one is waiting.
    pub fn next_retry_at(
        &self,
        queue: Queue,
        crawl_id: Option<i64>,
    ) -> Result<Option<i64>, StoreError> {
        let table = table(queue);
        let scope = claim_scope(queue, crawl_id, "?1", "?2");
        let sql = format!("SELECT min(retry_at) FROM {table} WHERE status = 'queued' AND {scope}");
        let me = crate::identity::machine_id();
        Ok(self
            .store
            .db()
            .query_one(&sql, &args![crawl_id, me])?
            .get(0)?)
    }
}

impl WorkQueue<'_> {
    /// The row of `queue` a claim within crawl `crawl_id` would take now, if one is due.
    pub fn next_due_id(
        &self,
        queue: Queue,
        crawl_id: Option<i64>,
    ) -> Result<Option<i64>, StoreError> {
        let sql = next_due(queue, crawl_id, "?1", "?2", "?3");
        let me = crate::identity::machine_id();
        let now = self.store.queue_now();
        Ok(self
            .store
            .db()
            .query_value(&sql, &args![now, crawl_id, me])?)
    }
}

/// The query for the row of `queue` a claim within crawl `crawl_id` takes: the first due at
/// `now` (a placeholder), as [`claim_scope`] scopes it.
fn next_due(queue: Queue, crawl_id: Option<i64>, now: &str, crawl: &str, machine: &str) -> String {
    // (Crawls by their `--priority` first.)
    let order = match queue {
        Queue::Crawls => "priority DESC, retry_at, id",
        Queue::Snapshots => "retry_at, id",
    };
    format!(
        "SELECT id FROM {} WHERE status = 'queued' AND retry_at <= {now} AND {} \
         ORDER BY {order} LIMIT 1",
        table(queue),
        claim_scope(queue, crawl_id, crawl, machine)
    )
}

/// Which queued rows of `queue` a claim within crawl `crawl_id` may take, as [`WorkQueue::claim`]
/// says, as a condition on the placeholders `crawl` (the crawl's id) and `machine` (this
/// machine's id). One text per case, so the queue's index on unsealed rows serves each (its
/// `status != 'sealed'` is repeated for SQLite to see that it applies); a placeholder a case
/// does not need still appears, in a term that is always true, as PostgreSQL wants every
/// parameter typed.
fn claim_scope(queue: Queue, crawl_id: Option<i64>, crawl: &str, machine: &str) -> String {
    let unsealed = "status != 'sealed'";
    match (queue, crawl_id) {
        (Queue::Crawls, Some(_)) => format!(
            "{unsealed} AND id = {crawl} AND paused_at IS NULL \
             AND CAST({machine} AS TEXT) IS NOT NULL"
        ),
        (Queue::Crawls, None) => format!(
            "{unsealed} AND CAST({crawl} AS BIGINT) IS NULL AND paused_at IS NULL \
             AND CAST({machine} AS TEXT) IS NOT NULL"
        ),
        (Queue::Snapshots, Some(_)) => {
            format!("{unsealed} AND crawl_id = {crawl} AND CAST({machine} AS TEXT) IS NOT NULL")
        }
        // (A crawl whose crawl-scoped hook still runs in the background — Chrome launched for
        // the crawl, reached by its snapshots' hooks on the loopback of its host — keeps its
        // snapshots on that host: elsewhere they would not find it.)
        (Queue::Snapshots, None) => format!(
            "{unsealed} AND CAST({crawl} AS BIGINT) IS NULL AND crawl_id IN ({})",
            lendable_crawls(machine)
        ),
    }
}

/// The crawls whose snapshots a host lends its free slots to: running, unpaused, on another
/// machine than `machine` (a placeholder), running no crawl-scoped hook in the background.
pub(super) fn lendable_crawls(machine: &str) -> String {
    format!(
        "SELECT c.id FROM crawls c JOIN processes w ON w.id = c.owner_id \
         WHERE c.status = 'started' AND c.paused_at IS NULL \
         AND w.machine_id != {machine} \
         AND NOT EXISTS (SELECT 1 FROM processes h \
                         WHERE h.crawl_id = c.id AND h.kind = 'hook' \
                         AND h.snapshot_id IS NULL \
                         AND h.status IN {live})",
        live = crate::store::processes::LIVE_STATUSES
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// On SQLite, every kind of claim finds its row through an index (the queue's index of
    /// unsealed rows, or the crawl's id), never by reading the whole table: a crawl of 10 000
    /// snapshots claims its last as fast as its first.
    #[test]
    fn every_claim_finds_its_row_by_an_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let db = store.sqlite().unwrap();
        for queue in [Queue::Crawls, Queue::Snapshots] {
            for crawl_id in [Some(1), None] {
                let sql = next_due(queue, crawl_id, "?1", "?2", "?3");
                let steps = crate::store::sql::sqlite_plan(db, &sql, 3);
                assert!(
                    crate::store::sql::searches_by_index(&steps, table(queue)),
                    "{queue:?} within {crawl_id:?}: {steps:?}"
                );
            }
        }
    }
}
