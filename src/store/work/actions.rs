//! What an operator does to a crawl (`abxctl cancel`, `retry`, `pause`, `resume`), as the
//! daemon does it and as abxctl does it on the database while the daemon is down: one place,
//! so both refuse the same things with the same words.
//!
//! Invariants: each action is one transaction; what makes no sense for the crawl's state is
//! refused (`Err(why)`, naming the state) and changes nothing; `retry` reopens no success (the run
//! it causes starts the sessions it needs again: `hooks::sessions`).

use crate::domain::{Crawl, CrawlOutcome, RetryScope};
use crate::store::engine::sql::args;
use crate::store::Crawls;
use crate::store::{now_ms, StoreError};

/// The results a retry of one hook runs again with it: the crawl's sessions that failed — a
/// background crawl hook such as Chrome's launch — without which no snapshot of the crawl
/// starts (`hooks::resource::failed_before`), so the hook would fail again.
const FAILED_SESSION: &str = "snapshot_id IS NULL AND hook LIKE '%.bg.%' \
    AND status IN ('failed', 'cancelled')";

impl Crawls<'_> {
    /// Seals a crawl as cancelled, with every snapshot it has not finished; its open results
    /// (queued, started) become `cancelled`.
    pub fn cancel(&self, id: i64) -> Result<(), StoreError> {
        let now = now_ms();
        self.store.commits.durably(|| {
            self.store.write(|tx| {
                for sql in [
                    "UPDATE results SET status = 'cancelled', ended_at = ?2 \
                 WHERE crawl_id = ?1 AND status IN ('queued', 'started')",
                    "UPDATE snapshots SET status = 'sealed', sealed_at = ?2 \
                 WHERE crawl_id = ?1 AND status != 'sealed'",
                    "UPDATE crawls SET status = 'sealed', sealed_at = ?2, outcome = 'cancelled' \
                 WHERE id = ?1 AND status != 'sealed'",
                ] {
                    tx.execute(sql, &args![id, now])?;
                }
                Ok(())
            })
        })
    }

    /// Runs results of sealed crawl `crawl` again (judged by the caller: `verbs::work::retry`):
    /// those `which` names (of `hook` only, if given — with the crawl's failed sessions,
    /// [`FAILED_SESSION`]) go back to `queued` with no attempt counted
    /// (their interruption count reset); if that reopens the crawl
    /// ([`Crawl::retry_reopens`]), the snapshots they belong to — and those a cancel sealed
    /// before they ran — and the crawl are unsealed, due now, their restart counts reset.
    /// Returns how many results, or `None` when it reopened nothing (and changed nothing).
    pub fn retry_results(
        &self,
        crawl: &Crawl,
        which: RetryScope,
        hook: Option<&str>,
    ) -> Result<Option<u64>, StoreError> {
        let crawl_id = crawl.id;
        let statuses = match which {
            RetryScope::Failed => "('failed', 'cancelled')",
            RetryScope::All => "('failed', 'cancelled', 'noresults', 'skipped')",
        };
        let now = self.store.queue_now();
        self.store.commits.durably(|| {
            self.store.write(|tx| {
                let retried = tx.execute(
                    &format!(
                        "UPDATE results SET status = 'queued', attempts = 0, output = NULL, \
                     output_files = '[]', output_size = 0, started_at = NULL, ended_at = NULL, \
                     process_id = NULL WHERE crawl_id = ?1 AND status IN {statuses} \
                     AND (CAST(?2 AS TEXT) IS NULL OR hook = ?2 OR ({FAILED_SESSION}))"
                    ),
                    &args![crawl_id, hook],
                )?;
                if !crawl.retry_reopens(retried, hook) {
                    return Ok(None);
                }
                tx.execute(
                    "UPDATE snapshots SET status = 'queued', sealed_at = NULL, retry_at = ?2, \
                 ended_by = NULL, restarts = 0, owner_id = NULL, epoch = epoch + 1 \
                 WHERE crawl_id = ?1 AND status = 'sealed' AND (\
                   id IN (SELECT snapshot_id FROM results WHERE crawl_id = ?1 \
                          AND status = 'queued') \
                   OR (?3 AND NOT EXISTS (SELECT 1 FROM results r \
                                          WHERE r.snapshot_id = snapshots.id)))",
                    &args![
                        crawl_id,
                        now,
                        hook.is_none() && crawl.outcome == Some(CrawlOutcome::Cancelled)
                    ],
                )?;
                tx.execute(
                    "UPDATE crawls SET status = 'queued', sealed_at = NULL, outcome = NULL, \
                 ended_by = NULL, retry_at = ?2, restarts = 0, owner_id = NULL, \
                 epoch = epoch + 1 WHERE id = ?1",
                    &args![crawl_id, now],
                )?;
                Ok(Some(retried))
            })
        })
    }

    /// Pauses crawl `crawl_id` (no hook starts and no snapshot is claimed while it is paused;
    /// running hooks go on) or resumes it (judged by the caller: `verbs::work::pause`).
    pub fn set_paused(&self, crawl_id: i64, paused: bool) -> Result<(), StoreError> {
        let at = paused.then(now_ms);
        self.store.commits.durably(|| {
            self.store.write(|tx| {
                tx.execute(
                    "UPDATE crawls SET paused_at = ?2 WHERE id = ?1",
                    &args![crawl_id, at],
                )?;
                Ok(())
            })
        })
    }

    /// Whether crawl `crawl_id` is paused now.
    pub fn is_paused(&self, crawl_id: i64) -> Result<bool, StoreError> {
        let sql = "SELECT paused_at IS NOT NULL FROM crawls WHERE id = ?1";
        Ok(self.store.db().query_one(sql, &args![crawl_id])?.get(0)?)
    }
}
