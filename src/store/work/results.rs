//! Results: one row per hook and snapshot (or crawl), recorded before the hook first runs.
//!
//! Invariants: every write here is a write of work, fenced to a worker's claim (see `fence`);
//! a result that succeeded is never reset nor overwritten; a cancelled one is
//! overwritten only by the success of a hook that finished all the same.

use crate::domain::ResultStatus;
use crate::store::engine::sql::args;
use crate::store::work::{result_from_row, HookResult, ResultColumn};
use crate::store::Results;
use crate::store::{now_ms, StoreError};

/// What makes a result queued again as if it had never run (its `WHERE` is the caller's): a
/// session a new run needs (`reopen_successes`), or a snapshot put back because its site said
/// 429 or 503 (`Hosts::back_off`).
pub(in crate::store) const REOPEN: &str = "UPDATE results SET status = 'queued', attempts = 0, \
    output = NULL, output_files = '[]', output_size = 0, started_at = NULL, ended_at = NULL, \
    session = 0, process_id = NULL";

impl Results<'_> {
    /// Puts an interrupted result back to `queued`, so that it runs again.
    pub fn retry(&self, id: i64) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "UPDATE results SET status = 'queued', ended_at = NULL \
                 WHERE id = ?1 AND status = 'started'",
                &args![id],
            )?;
            Ok(())
        })
    }

    /// The result row of `hook` for this snapshot (or the crawl itself when `snapshot_id` is
    /// `None`), created `queued` if it does not exist yet.
    pub fn result_for(
        &self,
        crawl_id: i64,
        snapshot_id: Option<i64>,
        plugin: &str,
        hook: &str,
    ) -> Result<HookResult, StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "INSERT INTO results (crawl_id, snapshot_id, plugin, hook, status, uuid) \
                 VALUES (?1, ?2, ?3, ?4, 'queued', ?5) ON CONFLICT DO NOTHING",
                &args![crawl_id, snapshot_id, plugin, hook, crate::uuid7::new()],
            )?;
            let sql = format!(
                "SELECT {} FROM results WHERE crawl_id = ?1 \
                 AND COALESCE(snapshot_id, 0) = COALESCE(CAST(?2 AS BIGINT), 0) AND hook = ?3",
                ResultColumn::LIST
            );
            let row = tx.query_one(&sql, &args![crawl_id, snapshot_id, hook])?;
            Ok(result_from_row(&row)?)
        })
    }

    /// Marks a result started by process row `process_id` (one more attempt).
    pub fn start(&self, id: i64, process_id: Option<i64>) -> Result<(), StoreError> {
        let now = now_ms();
        self.store.write_work(|tx| {
            tx.execute(
                "UPDATE results SET status = 'started', process_id = ?2, attempts = attempts + 1, \
                 started_at = ?3, ended_at = NULL \
                 WHERE id = ?1 AND status NOT IN ('succeeded', 'cancelled')",
                &args![id, process_id, now],
            )?;
            Ok(())
        })
    }

    /// Makes the successes `ids` queued again, as if they had never run (`hooks::sessions`: a
    /// session a new run needs); a result that is no longer a success is left as it is.
    pub fn reopen_successes(&self, ids: &[i64]) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            for &id in ids {
                tx.execute(
                    &format!("{REOPEN} WHERE id = ?1 AND status = 'succeeded'"),
                    &args![id],
                )?;
            }
            Ok(())
        })
    }

    /// Records that the success `id` was a session (`hooks::sessions`).
    pub fn note_session(&self, id: i64) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "UPDATE results SET session = 1 WHERE id = ?1 AND status = 'succeeded'",
                &args![id],
            )?;
            Ok(())
        })
    }

    /// Records which process row runs a started result.
    pub fn set_process(&self, id: i64, process_id: i64) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "UPDATE results SET process_id = ?2 WHERE id = ?1",
                &args![id, process_id],
            )?;
            Ok(())
        })
    }

    /// Records a result's final status and output.
    pub fn finish(
        &self,
        id: i64,
        status: ResultStatus,
        output: Option<&str>,
        output_files: &[String],
        output_size: u64,
    ) -> Result<(), StoreError> {
        let files = serde_json::to_string(output_files).expect("strings serialize");
        let now = now_ms();
        self.store.commits.durably(|| {
            self.store.write_work(|tx| {
                tx.execute(
                    "UPDATE results SET status = ?2, output = ?3, output_files = ?4, \
                 output_size = ?5, ended_at = ?6 WHERE id = ?1 AND status != 'succeeded' \
                 AND (status != 'cancelled' OR ?2 = 'succeeded')",
                    &args![id, status, output, files, output_size, now],
                )?;
                Ok(())
            })
        })
    }

    /// The results of one snapshot, by hook.
    pub fn snapshot_results(&self, snapshot_id: i64) -> Result<Vec<HookResult>, StoreError> {
        let sql = format!(
            "SELECT {} FROM results WHERE snapshot_id = ?1 ORDER BY hook",
            ResultColumn::LIST
        );
        Ok(self
            .store
            .db()
            .query_map(&sql, &args![snapshot_id], result_from_row)?)
    }

    /// The results of the snapshots `ids`, by snapshot and in hook order: a page's, in one read
    /// (a read per snapshot is a round trip each to a server).
    pub fn of_snapshots(&self, ids: &[i64]) -> Result<Vec<HookResult>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let db = self.store.db();
        let sql = format!(
            "SELECT {} FROM results WHERE snapshot_id IN {} ORDER BY snapshot_id, hook",
            ResultColumn::LIST,
            db.dialect().integers_of_json("?1")
        );
        let ids = serde_json::to_string(ids).expect("numbers serialize");
        Ok(db.query_map(&sql, &args![ids], result_from_row)?)
    }

    /// The results of crawl `crawl_id` that may have changed since `since_ms` (wall clock, as
    /// `started_at` and `ended_at` are written): those running, and those that started or ended
    /// since; ordered as [`Results::of_crawl`]. (A follower's view, read often: what did not
    /// change is not read.)
    pub fn results_since(
        &self,
        crawl_id: i64,
        since_ms: i64,
    ) -> Result<Vec<HookResult>, StoreError> {
        let sql = format!(
            "SELECT {} FROM results WHERE crawl_id = ?1 AND status != 'queued' \
             AND (status = 'started' OR COALESCE(ended_at, started_at, ?2) >= ?2) \
             ORDER BY COALESCE(snapshot_id, 0), hook",
            ResultColumn::LIST
        );
        Ok(self
            .store
            .db()
            .query_map(&sql, &args![crawl_id, since_ms], result_from_row)?)
    }

    /// How many results crawl `crawl_id` has, and how many of them are final.
    pub fn counts(&self, crawl_id: i64) -> Result<(u64, u64), StoreError> {
        let row = self.store.db().query_one(
            "SELECT count(*), COALESCE(sum(CASE WHEN status IN ('queued', 'started') \
             THEN 0 ELSE 1 END), 0) FROM results WHERE crawl_id = ?1",
            &args![crawl_id],
        )?;
        Ok((row.get(0)?, row.get(1)?))
    }

    /// The results of crawl `crawl_id`'s crawl hooks, by hook.
    pub fn of_crawl_hooks(&self, crawl_id: i64) -> Result<Vec<HookResult>, StoreError> {
        // (The expression its index `results_per_hook` has: the crawl's other results unread.)
        let sql = format!(
            "SELECT {} FROM results WHERE crawl_id = ?1 AND COALESCE(snapshot_id, 0) = 0 \
             ORDER BY hook",
            ResultColumn::LIST
        );
        let db = self.store.db();
        Ok(db.query_map(&sql, &args![crawl_id], result_from_row)?)
    }

    /// The first `limit` failed results of crawl `crawl_id`, in id order.
    pub fn failed_of_crawl(
        &self,
        crawl_id: i64,
        limit: u32,
    ) -> Result<Vec<HookResult>, StoreError> {
        let sql = format!(
            "SELECT {} FROM results WHERE crawl_id = ?1 AND status = 'failed' \
             ORDER BY id LIMIT ?2",
            ResultColumn::LIST
        );
        let db = self.store.db();
        Ok(db.query_map(&sql, &args![crawl_id, i64::from(limit)], result_from_row)?)
    }

    /// Every result of a crawl (crawl hooks first, then by snapshot and hook).
    pub fn of_crawl(&self, crawl_id: i64) -> Result<Vec<HookResult>, StoreError> {
        let sql = format!(
            "SELECT {} FROM results WHERE crawl_id = ?1 \
             ORDER BY COALESCE(snapshot_id, 0), hook",
            ResultColumn::LIST
        );
        Ok(self
            .store
            .db()
            .query_map(&sql, &args![crawl_id], result_from_row)?)
    }
}

impl Results<'_> {
    /// Tags snapshot `snapshot_id` with `names` (each once).
    pub fn add_tags(&self, snapshot_id: i64, names: &[String]) -> Result<(), StoreError> {
        if names.is_empty() {
            return Ok(());
        }
        self.store.write_work(|tx| {
            for name in names {
                tx.execute(
                    "INSERT INTO tags (snapshot_id, name) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                    &args![snapshot_id, name],
                )?;
            }
            Ok(())
        })
    }

    /// The tags of a snapshot, sorted.
    /// The tags the hooks of the snapshots `ids` reported, as (snapshot, name) in name order:
    /// a page's, in one read.
    pub fn tags_of_snapshots(&self, ids: &[i64]) -> Result<Vec<(i64, String)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let db = self.store.db();
        let sql = format!(
            "SELECT snapshot_id, name FROM tags WHERE snapshot_id IN {} ORDER BY snapshot_id, name",
            db.dialect().integers_of_json("?1")
        );
        let ids = serde_json::to_string(ids).expect("numbers serialize");
        Ok(db.query_map(&sql, &args![ids], |r| Ok((r.get(0)?, r.get(1)?)))?)
    }

    pub fn tags(&self, snapshot_id: i64) -> Result<Vec<String>, StoreError> {
        Ok(self.store.db().query_map(
            "SELECT name FROM tags WHERE snapshot_id = ?1 ORDER BY name",
            &args![snapshot_id],
            |r| r.get(0),
        )?)
    }
}
