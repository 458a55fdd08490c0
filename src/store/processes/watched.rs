//! What the web view and `/metrics` read of the process table and the queues: the rows worth
//! showing now, counts by kind and state, rows that ended or started from a moment on, and how
//! long due work has waited.
//!
//! Invariants: read only, a query or two each, never a read that grows with the history: the
//! counts are kept as rows change (migration 36), as are how many rows ever ended and hooks ever
//! started, so that a scrape reads whole only the rows from its mark on, and the entries of the
//! moments' indexes before it only when those counts say a row came late. Rows are this
//! machine's only (a fleet's hosts each report their own, so a sum over hosts counts each
//! process once); the moments' entries and the queues are the fleet's.

use crate::domain::{Kind, ResultStatus, Status};
use crate::store::engine::sql::{args, columns, Dialect, Value};
use crate::store::processes::{process_from_row, ProcessRow, COLUMNS, LIVE_STATUSES};
use crate::store::{ProcessTable, StoreError, Watched};

/// A row that ended, as the metrics count it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedRow {
    pub id: i64,
    pub kind: Kind,
    /// Its result's plugin, for a hook with a result.
    pub plugin: Option<String>,
    /// Its result's status, when this row is its result's latest run.
    pub result_status: Option<ResultStatus>,
    /// Why the row ended, in a word (`exited`, `timeout`, …).
    pub end_reason: Option<String>,
    pub exit_code: Option<i32>,
    pub started_at: Option<i64>,
    pub ended_at: i64,
    pub sigterm_at: Option<i64>,
    pub sigkill_at: Option<i64>,
    pub escaped: bool,
    pub leaking: bool,
    pub unkillable: bool,
}

/// A hook row that started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedHook {
    pub id: i64,
    pub plugin: Option<String>,
    pub started_at: i64,
}

/// How many rows of a queue wait, and since when the oldest due one has been due.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueDepth {
    pub queued: u64,
    /// Milliseconds since the oldest due row became due (0 if none is due).
    pub oldest_due_ms: i64,
}

columns! {
    /// An ended row's columns (`p`) with its result's (`r`), as [`EndedRow`] is read.
    enum EndedColumn {
        id = "p.id", kind = "p.kind", plugin = "r.plugin",
        result_status = "CASE WHEN r.process_id = p.id THEN r.status END",
        end_reason = "p.end_reason", exit_code = "p.exit_code", started_at = "p.started_at",
        ended_at = "p.ended_at", sigterm_at = "p.sigterm_at", sigkill_at = "p.sigkill_at",
        escaped = "p.escaped", leaking = "p.leaking", unkillable = "p.unkillable",
    }
}

columns! {
    /// A started hook's columns (`p`) with its result's plugin (`r`), as [`StartedHook`] is read.
    enum StartedColumn { id = "p.id", plugin = "r.plugin", started_at = "p.started_at" }
}

/// A moment of a process row that the metrics read from a mark on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// A final row's `ended_at`.
    Ended,
    /// A hook row's `started_at`.
    HookStarted,
}

impl Moment {
    /// Its name in `process_moments`.
    fn name(self) -> &'static str {
        match self {
            Moment::Ended => "ended",
            Moment::HookStarted => "hook_started",
        }
    }

    /// The rows of `processes p` that have this moment, and its column: what its index holds
    /// (migrations 34, 37).
    fn rows_and_column(self) -> (&'static str, &'static str) {
        match self {
            Moment::Ended => ("p.status IN ('exited', 'lost')", "p.ended_at"),
            Moment::HookStarted => ("p.kind = 'hook'", "p.started_at"),
        }
    }

    /// The entries of its index (moment, id) from placeholder 1 until placeholder 2.
    fn entries_between(self) -> String {
        let (rows, column) = self.rows_and_column();
        format!(
            "SELECT {column}, p.id FROM processes p \
             WHERE {rows} AND {column} >= ?1 AND {column} < ?2"
        )
    }

    /// The rows of `processes p` of this machine (placeholder 2) whose moment is at or after
    /// placeholder 1, or whose id is among `ids` (a JSON array in placeholder 3, if any), with
    /// the arguments: each term one an index answers, so the two are read as a union.
    fn rows_since_or_among(
        self,
        dialect: Dialect,
        since_ms: i64,
        ids: &[i64],
    ) -> (String, Vec<Value>) {
        let (rows, column) = self.rows_and_column();
        let from = format!("({rows} AND {column} >= ?1)");
        let this_machine = "COALESCE(p.machine_id, ?2) = ?2";
        let mut args = args![since_ms, crate::identity::machine_id()].to_vec();
        if ids.is_empty() {
            return (format!("{from} AND {this_machine}"), args);
        }
        args.push(Value::from(serde_json::json!(ids).to_string()));
        let among = dialect.integers_of_json("?3");
        (
            format!("({from} OR p.id IN {among}) AND {this_machine}"),
            args,
        )
    }
}

/// `columns` of the rows of `processes p` (with their result, `r`) that `rows` selects.
fn whole_rows(columns: &str, rows: &str) -> String {
    format!(
        "SELECT {columns} FROM processes p LEFT JOIN results r ON r.id = p.result_id WHERE {rows}"
    )
}

impl<'s> ProcessTable<'s> {
    /// What the web view and `/metrics` read of the table and the queues.
    pub fn watched(self) -> Watched<'s> {
        Watched { store: self.store }
    }
}

impl Watched<'_> {
    /// Runs `f`, whose reads see the store as of one moment — one read transaction
    /// ([`Dialect::begin_read`]), ended when `f` returns — so that what one read counts and
    /// what another lists agree. Inside a transaction already, `f` runs in it.
    pub fn as_of_one_moment<T>(
        &self,
        f: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let db = self.store.db();
        if db.in_transaction() {
            return f();
        }
        db.execute(db.dialect().begin_read(), &[])?;
        let read = f();
        // (A read has nothing to keep: the end of its transaction can only release it.)
        let _ = db.execute("COMMIT", &[]);
        read
    }

    /// The rows of this machine that claim a live process, and the newest `newest` of those
    /// that ended at or after `ended_since_ms` (unix ms), by id; with how many ended since then.
    /// (Each term names its statuses, so that it is read from an index — migrations 1 and 34 —
    /// and what a busy host ended is counted, not read.)
    pub fn live_and_ended_since(
        &self,
        ended_since_ms: i64,
        newest: u32,
    ) -> Result<(Vec<ProcessRow>, u64), StoreError> {
        let this_machine = "COALESCE(machine_id, ?2) = ?2";
        let ended = format!("status IN ('exited', 'lost') AND ended_at >= ?1 AND {this_machine}");
        let rows = self.store.db().query_map(
            &format!(
                "SELECT {COLUMNS} FROM processes WHERE id IN (\
                   SELECT id FROM processes WHERE status IN {LIVE_STATUSES} AND {this_machine} \
                   UNION ALL SELECT id FROM (SELECT id FROM processes WHERE {ended} \
                                            ORDER BY ended_at DESC LIMIT ?3) AS newest) \
                 ORDER BY id"
            ),
            &args![ended_since_ms, crate::identity::machine_id(), newest],
            process_from_row,
        )?;
        let count: i64 = self
            .store
            .db()
            .query_one(
                &format!("SELECT count(*) FROM processes WHERE {ended}"),
                &args![ended_since_ms, crate::identity::machine_id()],
            )?
            .get(0)?;
        Ok((rows, count.max(0) as u64))
    }

    /// How many rows of this machine there are of each kind and state: their kept counts
    /// (migration 36), a read of a few rows whatever the history's size.
    pub fn counts_by_kind_and_status(&self) -> Result<Vec<(Kind, Status, u64)>, StoreError> {
        let rows = self.store.db().query(
            "SELECT kind, status, CAST(sum(count) AS BIGINT) FROM process_tallies \
             WHERE machine_id IN ('', ?1) GROUP BY kind, status HAVING sum(count) > 0",
            &args![crate::identity::machine_id()],
        )?;
        let mut counts = Vec::with_capacity(rows.len());
        for row in &rows {
            let kind: String = row.get(0)?;
            let status: String = row.get(1)?;
            if let (Ok(kind), Ok(status)) = (kind.parse(), status.parse()) {
                counts.push((kind, status, row.get(2)?));
            }
        }
        Ok(counts)
    }

    /// `(moment, id)` of every row of any machine whose `moment` is at or after `from_ms` and
    /// before `until_ms` (unix ms): entries of its index, no row read.
    pub fn moments(
        &self,
        moment: Moment,
        from_ms: i64,
        until_ms: i64,
    ) -> Result<Vec<(i64, i64)>, StoreError> {
        Ok(self.store.db().query_map(
            &moment.entries_between(),
            &args![from_ms, until_ms],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?)
    }

    /// How many rows of this machine ever had `moment` (a row without a host counts as this
    /// machine's), pruned ones too: a count kept as rows change (migration 36), never lower
    /// than before.
    pub fn moment_total(&self, moment: Moment) -> Result<i64, StoreError> {
        let row = self.store.db().query_one(
            "SELECT COALESCE(CAST(sum(count) AS BIGINT), 0) FROM process_moments \
             WHERE machine_id IN ('', ?1) AND moment = ?2",
            &args![crate::identity::machine_id(), moment.name()],
        )?;
        Ok(row.get(0)?)
    }

    /// This machine's final rows that ended at or after `since_ms` (unix ms), and those of
    /// `ids` (rows that ended before it, read late), with their result's plugin and status.
    pub fn ended(&self, since_ms: i64, ids: &[i64]) -> Result<Vec<EndedRow>, StoreError> {
        let db = self.store.db();
        let (rows, args) = Moment::Ended.rows_since_or_among(db.dialect(), since_ms, ids);
        let rows = db.query(&whole_rows(EndedColumn::LIST, &rows), &args)?;
        let mut ended = Vec::with_capacity(rows.len());
        for row in &rows {
            use EndedColumn as C;
            let kind: String = row.get(C::kind)?;
            let Ok(kind) = kind.parse() else { continue };
            let status: Option<String> = row.get(C::result_status)?;
            ended.push(EndedRow {
                id: row.get(C::id)?,
                kind,
                plugin: row.get(C::plugin)?,
                result_status: status.and_then(|s| s.parse().ok()),
                end_reason: row.get(C::end_reason)?,
                exit_code: row.get(C::exit_code)?,
                started_at: row.get(C::started_at)?,
                ended_at: row.get(C::ended_at)?,
                sigterm_at: row.get(C::sigterm_at)?,
                sigkill_at: row.get(C::sigkill_at)?,
                escaped: row.get(C::escaped)?,
                leaking: row.get(C::leaking)?,
                unkillable: row.get(C::unkillable)?,
            });
        }
        Ok(ended)
    }

    /// This machine's hook rows that started at or after `since_ms` (unix ms), and those of
    /// `ids` (rows that started before it, read late), with their result's plugin.
    pub fn hooks_started(
        &self,
        since_ms: i64,
        ids: &[i64],
    ) -> Result<Vec<StartedHook>, StoreError> {
        let db = self.store.db();
        let (rows, args) = Moment::HookStarted.rows_since_or_among(db.dialect(), since_ms, ids);
        Ok(
            db.query_map(&whole_rows(StartedColumn::LIST, &rows), &args, |row| {
                use StartedColumn as C;
                Ok(StartedHook {
                    id: row.get(C::id)?,
                    plugin: row.get(C::plugin)?,
                    started_at: row.get(C::started_at)?,
                })
            })?,
        )
    }

    /// The crawls and snapshots waiting to be claimed, on the queue clock.
    pub fn queue_depths(&self) -> Result<(QueueDepth, QueueDepth), StoreError> {
        let now = self.store.queue_now();
        let depth = |sql: &str| -> Result<QueueDepth, StoreError> {
            let row = self.store.db().query_one(sql, &args![now])?;
            let oldest: Option<i64> = row.get(1)?;
            Ok(QueueDepth {
                queued: row.get(0)?,
                oldest_due_ms: oldest.map_or(0, |at| (now - at).max(0)),
            })
        };
        Ok((
            depth(
                "SELECT count(*), min(CASE WHEN retry_at <= ?1 AND paused_at IS NULL \
                 THEN retry_at END) FROM crawls WHERE status = 'queued'",
            )?,
            // (How many: the kept counts of the crawls not sealed — a sealed crawl's snapshots
            // are sealed. The oldest due: the first entry of the queued snapshots' index.)
            depth(
                "SELECT (SELECT COALESCE(CAST(sum(t.count) AS BIGINT), 0) \
                         FROM crawl_tallies t JOIN crawls c ON c.id = t.crawl_id \
                         WHERE c.status != 'sealed' AND t.kind = 'snapshot' \
                         AND t.status = 'queued'), \
                        (SELECT min(retry_at) FROM snapshots \
                         WHERE status = 'queued' AND retry_at <= ?1)",
            )?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// On SQLite, without statistics, what a scrape reads of each moment — the rows from a mark
    /// on (and some by id), the index's entries of a span — is found through an index, never by
    /// reading every process row.
    #[test]
    fn what_a_scrape_reads_is_found_by_an_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let db = store.sqlite().unwrap();
        for moment in [Moment::Ended, Moment::HookStarted] {
            let whole = |ids: &[i64]| {
                let (rows, args) = moment.rows_since_or_among(Dialect::Sqlite, 0, ids);
                (whole_rows(EndedColumn::LIST, &rows), args.len())
            };
            for (sql, params) in [whole(&[]), whole(&[1, 2]), (moment.entries_between(), 2)] {
                let steps = crate::store::sql::sqlite_plan(db, &sql, params);
                assert!(
                    !steps.iter().any(|step| step.starts_with("SCAN p")),
                    "{moment:?}: {sql}: {steps:?}"
                );
            }
        }
    }
}
