//! What the web view and `/metrics` read of the process table and the queues: the rows worth
//! showing now, counts by kind and state, rows that ended or started since a moment, and how
//! long due work has waited.
//!
//! Invariants: read only, each a single query (or two), never a whole-table read of rows that
//! are not needed: the ends and starts are read from a moment on, so a scrape costs what
//! changed since the one before. Rows are this machine's only (a fleet's hosts each report their
//! own, so a sum over hosts counts each process once); the queues are the fleet's.

use crate::domain::{Kind, ResultStatus, Status};
use crate::store::engine::sql::{args, columns};
use crate::store::processes::{process_from_row, ProcessRow, COLUMNS, LIVE_STATUSES};
use crate::store::ProcessTable;
use crate::store::StoreError;

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

impl ProcessTable<'_> {
    /// The rows of this machine that claim a live process, and those that ended at or after
    /// `ended_since_ms` (unix ms), by id.
    pub fn live_and_ended_since(&self, ended_since_ms: i64) -> Result<Vec<ProcessRow>, StoreError> {
        Ok(self.store.db().query_map(
            &format!(
                "SELECT {COLUMNS} FROM processes \
                 WHERE (status IN {LIVE_STATUSES} OR ended_at >= ?1) \
                 AND COALESCE(machine_id, ?2) = ?2 ORDER BY id"
            ),
            &args![ended_since_ms, crate::identity::machine_id()],
            process_from_row,
        )?)
    }

    /// How many rows there are of each kind and state.
    pub fn counts_by_kind_and_status(&self) -> Result<Vec<(Kind, Status, u64)>, StoreError> {
        let rows = self.store.db().query(
            "SELECT kind, status, count(*) FROM processes \
             WHERE COALESCE(machine_id, ?1) = ?1 GROUP BY kind, status",
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

    /// The final rows that ended at or after `since_ms` (unix ms), with their result's plugin
    /// and status.
    pub fn ended_since(&self, since_ms: i64) -> Result<Vec<EndedRow>, StoreError> {
        let rows = self.store.db().query(
            &format!(
                "SELECT {} FROM processes p LEFT JOIN results r ON r.id = p.result_id \
                 WHERE p.ended_at >= ?1 AND p.status IN ('exited', 'lost') \
                 AND COALESCE(p.machine_id, ?2) = ?2 ORDER BY p.id",
                EndedColumn::LIST
            ),
            &args![since_ms, crate::identity::machine_id()],
        )?;
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

    /// The hook rows that started at or after `since_ms` (unix ms), with their result's plugin.
    pub fn hooks_started_since(&self, since_ms: i64) -> Result<Vec<StartedHook>, StoreError> {
        Ok(self.store.db().query_map(
            &format!(
                "SELECT {} FROM processes p LEFT JOIN results r ON r.id = p.result_id \
                 WHERE p.kind = 'hook' AND p.started_at >= ?1 \
                 AND COALESCE(p.machine_id, ?2) = ?2 ORDER BY p.id",
                StartedColumn::LIST
            ),
            &args![since_ms, crate::identity::machine_id()],
            |row| {
                use StartedColumn as C;
                Ok(StartedHook {
                    id: row.get(C::id)?,
                    plugin: row.get(C::plugin)?,
                    started_at: row.get(C::started_at)?,
                })
            },
        )?)
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
            depth(
                "SELECT count(*), min(CASE WHEN retry_at <= ?1 THEN retry_at END) \
                 FROM snapshots WHERE status = 'queued'",
            )?,
        ))
    }
}
