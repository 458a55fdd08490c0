//! Reading the process table: one row, a live subtree, the live row of a pid, filtered lists,
//! counts. (Writes are in `processes`.)

use crate::domain::Kind;
use crate::store::engine::sql::{args, columns, Value};
use crate::store::processes::{process_from_row, ProcessRow, COLUMNS, LIVE_STATUSES};
use crate::store::ProcessTable;
use crate::store::StoreError;
use std::collections::BTreeMap;

/// Which rows [`ProcessTable::list`] returns.
#[derive(Debug, Clone, Default)]
pub struct ProcessFilter {
    /// Only rows that still claim a live process (starting, running, stopping).
    pub live_only: bool,
    pub kind: Option<Kind>,
    /// Only rows of this crawl.
    pub crawl_id: Option<i64>,
    /// Only rows started (or created, if never started) at or after this time (unix ms).
    pub since_ms: Option<i64>,
    /// Only rows of this machine (its id; a row written before abxd knew machines is this
    /// host's).
    pub machine_id: Option<String>,
}

/// A live row as reconciliation sees it: where it sits in the tree and which process it claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRow {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub kind: Kind,
    pub identity: Option<crate::identity::Identity>,
}

columns! {
    /// What reconciliation reads of a live row, as [`LiveRow`] is read.
    enum LiveColumn { id, parent_id, kind, pid, boot_id, start_ticks, pidfd_ino }
}

impl ProcessTable<'_> {
    /// The rows `sql` (which selects [`COLUMNS`]) returns.
    fn process_rows(&self, sql: &str, args: &[Value]) -> Result<Vec<ProcessRow>, StoreError> {
        Ok(self.store.db().query_map(sql, args, process_from_row)?)
    }

    /// The first row `sql` (which selects [`COLUMNS`]) returns, if any.
    fn process_row(&self, sql: &str, args: &[Value]) -> Result<Option<ProcessRow>, StoreError> {
        let row = self.store.db().query_opt(sql, args)?;
        Ok(row.as_ref().map(process_from_row).transpose()?)
    }

    /// Row `id` and every live row below it, parents before children. (The subtree drives the
    /// join — `CROSS JOIN` fixes SQLite's order — or each call walked every live row: recovery
    /// of 100 orphan trees among 10 000 stale rows spent a quarter of its time here.)
    pub fn live_subtree(&self, id: i64) -> Result<Vec<ProcessRow>, StoreError> {
        self.process_rows(
            &format!(
                "WITH RECURSIVE subtree(row_id, depth) AS ( \
                     SELECT CAST(?1 AS BIGINT), 0 \
                     UNION SELECT p.id, s.depth + 1 FROM processes p \
                           JOIN subtree s ON p.parent_id = s.row_id \
                 ) \
                 SELECT {COLUMNS} FROM subtree CROSS JOIN processes \
                 WHERE id = row_id AND status IN {LIVE_STATUSES} \
                 ORDER BY depth, id"
            ),
            &args![id],
        )
    }

    /// The live row recorded for `pid` on this machine in this boot, newest first, if any.
    pub fn live_row_by_pid(&self, pid: i32) -> Result<Option<ProcessRow>, StoreError> {
        self.process_row(
            &format!(
                "SELECT {COLUMNS} FROM processes WHERE pid = ?1 AND boot_id = ?2 \
                 AND status IN {LIVE_STATUSES} AND COALESCE(machine_id, ?3) = ?3 \
                 ORDER BY id DESC LIMIT 1"
            ),
            &args![
                pid,
                crate::identity::boot_id(),
                crate::identity::machine_id()
            ],
        )
    }

    /// The newest hook row of this boot whose process group is `pgid` (a hook leads its own).
    pub fn hook_row_by_group(&self, pgid: i32) -> Result<Option<i64>, StoreError> {
        let row = self.store.db().query_opt(
            "SELECT id FROM processes WHERE pgid = ?1 AND boot_id = ?2 AND kind = 'hook' \
             ORDER BY id DESC LIMIT 1",
            &args![pgid, crate::identity::boot_id()],
        )?;
        Ok(row.map(|row| row.get(0)).transpose()?)
    }

    pub fn get(&self, id: i64) -> Result<Option<ProcessRow>, StoreError> {
        self.process_row(
            &format!("SELECT {COLUMNS} FROM processes WHERE id = ?1"),
            &args![id],
        )
    }

    /// The latest process row that ran result `result_id` (its last attempt), if one did.
    pub fn result_run(&self, result_id: i64) -> Result<Option<ProcessRow>, StoreError> {
        self.process_row(
            &format!(
                "SELECT {COLUMNS} FROM processes WHERE result_id = ?1 AND kind = 'hook' \
                 ORDER BY id DESC LIMIT 1"
            ),
            &args![result_id],
        )
    }

    /// Rows matching `filter`, oldest first.
    ///
    /// Sorted here, not by SQL: live rows come from the index of live statuses, one run of ids
    /// per status, and SQLite would copy every row into a sorter to merge those runs.
    pub fn list(&self, filter: &ProcessFilter) -> Result<Vec<ProcessRow>, StoreError> {
        let live = if filter.live_only {
            format!("status IN {LIVE_STATUSES}")
        } else {
            "1 = 1".to_string()
        };
        let mut rows = self.process_rows(
            &format!(
                "SELECT {COLUMNS} FROM processes WHERE {live} \
                 AND (CAST(?1 AS TEXT) IS NULL OR kind = ?1) \
                 AND (CAST(?2 AS BIGINT) IS NULL OR crawl_id = ?2) \
                 AND (CAST(?3 AS BIGINT) IS NULL OR COALESCE(started_at, created_at) >= ?3) \
                 AND (CAST(?4 AS TEXT) IS NULL OR COALESCE(machine_id, ?5) = ?4)"
            ),
            &args![
                filter.kind,
                filter.crawl_id,
                filter.since_ms,
                filter.machine_id.as_deref(),
                crate::identity::machine_id()
            ],
        )?;
        rows.sort_by_key(|row| row.id);
        Ok(rows)
    }

    /// Where every live row of this machine sits and which process it claims, by id: all that
    /// reconciliation reads of them (8 columns of 37: on 10 000 stale rows, reading whole rows
    /// was a quarter of the time to READY). Another machine's rows are never among them: its
    /// processes are not this one's to check, find gone, or signal.
    pub fn live_rows(&self) -> Result<Vec<LiveRow>, StoreError> {
        let rows = self.store.db().query(
            &format!(
                "SELECT {} FROM processes \
                 WHERE status IN {LIVE_STATUSES} AND COALESCE(machine_id, ?1) = ?1 ORDER BY id",
                LiveColumn::LIST
            ),
            &args![crate::identity::machine_id()],
        )?;
        let live = rows.iter().map(|row| {
            use LiveColumn as C;
            Ok(LiveRow {
                id: row.get(C::id)?,
                parent_id: row.get(C::parent_id)?,
                kind: row.get(C::kind)?,
                identity: crate::store::processes::identity_at(
                    row,
                    [C::pid, C::boot_id, C::start_ticks, C::pidfd_ino],
                )?,
            })
        });
        Ok(live.collect::<Result<_, crate::store::engine::sql::SqlError>>()?)
    }

    /// How many browsers (`admission::is_browser`) this machine's live rows claim, leaving out
    /// those of the snapshots of crawl `but_snapshots_of` (whose pool counts its own).
    pub fn browsers_alive(&self, but_snapshots_of: Option<i64>) -> Result<u32, StoreError> {
        let alive = self.browsers_alive_by_scope(but_snapshots_of)?;
        Ok(alive.crawl_wide + alive.per_snapshot)
    }

    /// [`ProcessTable::browsers_alive`], told apart by whose they are: a crawl's (launched by a crawl
    /// hook, shared by its snapshots) or one snapshot's.
    pub fn browsers_alive_by_scope(
        &self,
        but_snapshots_of: Option<i64>,
    ) -> Result<BrowsersAlive, StoreError> {
        let rows: Vec<(String, Option<i64>)> = self.store.db().query_map(
            &format!(
                "SELECT argv, snapshot_id FROM processes WHERE status IN {LIVE_STATUSES} \
                 AND kind = 'child' AND COALESCE(machine_id, ?1) = ?1 \
                 AND (argv LIKE '%chrom%' OR argv LIKE '%headless_shell%') \
                 AND NOT (COALESCE(crawl_id, 0) = COALESCE(CAST(?2 AS BIGINT), -1) \
                          AND snapshot_id IS NOT NULL)"
            ),
            &args![crate::identity::machine_id(), but_snapshots_of],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        let mut alive = BrowsersAlive::default();
        for (argv, snapshot) in rows {
            let Ok(argv) = serde_json::from_str::<Vec<String>>(&argv) else {
                continue;
            };
            if crate::admission::is_browser(&argv) {
                match snapshot {
                    Some(_) => alive.per_snapshot += 1,
                    None => alive.crawl_wide += 1,
                }
            }
        }
        Ok(alive)
    }

    /// Every row of crawl `crawl_id`, by id.
    pub fn crawl_processes(&self, crawl_id: i64) -> Result<Vec<ProcessRow>, StoreError> {
        self.process_rows(
            &format!("SELECT {COLUMNS} FROM processes WHERE crawl_id = ?1 ORDER BY id"),
            &args![crawl_id],
        )
    }

    /// The latest run of each of the results `ids` that has one: a page's, in one read.
    pub fn latest_runs(&self, ids: &[i64]) -> Result<Vec<ProcessRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM processes WHERE id IN (SELECT max(id) FROM processes \
             WHERE result_id IN {} GROUP BY result_id)",
            self.store.db().dialect().integers_of_json("?1")
        );
        let ids = serde_json::to_string(ids).expect("numbers serialize");
        self.process_rows(&sql, &args![ids])
    }

    /// The live rows of crawl `crawl_id` flagged unkillable (read from the live rows: few).
    pub fn unkillable_of_crawl(&self, crawl_id: i64) -> Result<Vec<ProcessRow>, StoreError> {
        self.process_rows(
            &format!(
                "SELECT {COLUMNS} FROM processes WHERE status IN {LIVE_STATUSES} \
                 AND crawl_id = ?1 AND unkillable = 1 ORDER BY id"
            ),
            &args![crawl_id],
        )
    }

    /// How many rows of each kind claim a live process.
    pub fn live_counts_by_kind(&self) -> Result<BTreeMap<Kind, u64>, StoreError> {
        let rows = self.store.db().query(
            &format!(
                "SELECT kind, count(*) FROM processes \
                 WHERE status IN {LIVE_STATUSES} GROUP BY kind"
            ),
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|row| Ok((row.get::<Kind>(0)?, row.get::<u64>(1)?)))
            .collect::<Result<_, crate::store::engine::sql::SqlError>>()?)
    }
}

/// Browsers alive, by whose they are (see [`ProcessTable::browsers_alive_by_scope`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrowsersAlive {
    /// Launched by a crawl's hooks, shared by its snapshots.
    pub crawl_wide: u32,
    /// Launched for one snapshot.
    pub per_snapshot: u32,
}
