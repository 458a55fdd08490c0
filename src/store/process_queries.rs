//! Reading the process table: one row, a live subtree, the live row of a pid, filtered lists,
//! counts. (Writes are in `processes`.)

use super::processes::{Kind, ProcessRow, COLUMNS, LIVE_STATUSES};
use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};
use std::collections::BTreeMap;

/// Which rows [`Store::processes`] returns.
#[derive(Debug, Clone, Default)]
pub struct ProcessFilter {
    /// Only rows that still claim a live process (starting, running, stopping).
    pub live_only: bool,
    pub kind: Option<Kind>,
    /// Only rows of this crawl.
    pub crawl_id: Option<i64>,
    /// Only rows started (or created, if never started) at or after this time (unix ms).
    pub since_ms: Option<i64>,
}

impl Store {
    /// Row `id` and every live row below it, parents before children.
    pub fn live_subtree(&self, id: i64) -> Result<Vec<ProcessRow>, StoreError> {
        let mut statement = self.conn().prepare_cached(&format!(
            "WITH RECURSIVE subtree(id, depth) AS ( \
                 SELECT ?1, 0 \
                 UNION SELECT p.id, s.depth + 1 FROM processes p \
                       JOIN subtree s ON p.parent_id = s.id \
             ) \
             SELECT {COLUMNS} FROM processes JOIN subtree USING (id) \
             WHERE status IN {LIVE_STATUSES} ORDER BY depth, id"
        ))?;
        let rows = statement.query_map([id], ProcessRow::from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The live row recorded for `pid` in this boot, newest first, if any.
    pub fn live_row_by_pid(&self, pid: i32) -> Result<Option<ProcessRow>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM processes WHERE pid = ?1 AND boot_id = ?2 \
                     AND status IN {LIVE_STATUSES} ORDER BY id DESC LIMIT 1"
            ))?
            .query_row(
                params![pid, crate::identity::boot_id()],
                ProcessRow::from_row,
            )
            .optional()?)
    }

    /// The newest hook row of this boot whose process group is `pgid` (a hook leads its own).
    pub fn hook_row_by_group(&self, pgid: i32) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached(
                "SELECT id FROM processes WHERE pgid = ?1 AND boot_id = ?2 AND kind = 'hook' \
                 ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![pgid, crate::identity::boot_id()], |r| r.get(0))
            .optional()?)
    }

    pub fn process(&self, id: i64) -> Result<Option<ProcessRow>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached(&format!("SELECT {COLUMNS} FROM processes WHERE id = ?1"))?
            .query_row([id], ProcessRow::from_row)
            .optional()?)
    }

    /// The latest process row that ran result `result_id` (its last attempt), if one did.
    pub fn result_run(&self, result_id: i64) -> Result<Option<ProcessRow>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM processes WHERE result_id = ?1 AND kind = 'hook' \
                 ORDER BY id DESC LIMIT 1"
            ))?
            .query_row([result_id], ProcessRow::from_row)
            .optional()?)
    }

    /// Rows matching `filter`, oldest first.
    ///
    /// Sorted here, not by SQL: live rows come from the index of live statuses, one run of ids
    /// per status, and SQLite would copy every row into a sorter to merge those runs.
    pub fn processes(&self, filter: &ProcessFilter) -> Result<Vec<ProcessRow>, StoreError> {
        let live = if filter.live_only {
            format!("status IN {LIVE_STATUSES}")
        } else {
            "1".to_string()
        };
        let mut statement = self.conn().prepare_cached(&format!(
            "SELECT {COLUMNS} FROM processes WHERE {live} AND (?1 IS NULL OR kind = ?1) \
             AND (?2 IS NULL OR crawl_id = ?2) \
             AND (?3 IS NULL OR COALESCE(started_at, created_at) >= ?3)"
        ))?;
        let params = params![filter.kind, filter.crawl_id, filter.since_ms];
        let mut rows = statement
            .query_map(params, ProcessRow::from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.sort_by_key(|row| row.id);
        Ok(rows)
    }

    /// Every row of crawl `crawl_id`, by id.
    pub fn crawl_processes(&self, crawl_id: i64) -> Result<Vec<ProcessRow>, StoreError> {
        let mut statement = self.conn().prepare_cached(&format!(
            "SELECT {COLUMNS} FROM processes WHERE crawl_id = ?1 ORDER BY id"
        ))?;
        let rows = statement
            .query_map([crawl_id], ProcessRow::from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// How many rows of each kind claim a live process.
    pub fn live_counts_by_kind(&self) -> Result<BTreeMap<Kind, u64>, StoreError> {
        let mut statement = self.conn().prepare_cached(&format!(
            "SELECT kind, count(*) FROM processes \
             WHERE status IN {LIVE_STATUSES} GROUP BY kind"
        ))?;
        let counts = statement
            .query_map([], |row| {
                Ok((row.get::<_, Kind>(0)?, row.get::<_, u64>(1)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(counts)
    }
}
