//! Retention: the process rows of finished work go once they are old enough, and the file gives
//! the space back (`[retention]`, `abxctl prune`).
//!
//! Invariants: only a final row goes — of a sealed crawl or of none — and only with every row
//! below it (a parent link never dangles); what pointed at it (a result's latest run, a sealed
//! crawl's or snapshot's owner) is cleared in the same transaction. Crawls, snapshots and
//! results, the archive's own record, are never pruned.

use crate::domain::Pruned;
use crate::store::engine::sql::args;
use crate::store::ProcessTable;
use crate::store::{Store, StoreError};

/// The rows pruning at a cutoff takes: final, ended before it (`?1`, unix ms), not of an
/// unsealed crawl, and with no row below them that stays.
const PRUNABLE: &str = "
    WITH RECURSIVE
      candidate(id) AS (
        SELECT p.id FROM processes p LEFT JOIN crawls c ON c.id = p.crawl_id
        WHERE p.status IN ('exited', 'lost') AND p.ended_at < ?1
          AND (p.crawl_id IS NULL OR c.status = 'sealed')),
      kept_above(id) AS (
        SELECT parent_id FROM processes
        WHERE parent_id IS NOT NULL AND id NOT IN (SELECT id FROM candidate)
        UNION SELECT p.parent_id FROM processes p JOIN kept_above k ON p.id = k.id
        WHERE p.parent_id IS NOT NULL)
    SELECT id FROM candidate WHERE id NOT IN (SELECT id FROM kept_above)";

/// How a prune gives the space back. A database made before abxd managed its space (no
/// incremental auto-vacuum) can only be compacted by rewriting it whole (`VACUUM`): a long
/// write the daemon's loop must not wait for, so only `abxctl prune` with abxd down does it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compact {
    /// Incrementally where the database allows it, else not at all (the pages are reused).
    IfCheap,
    /// Incrementally, or by rewriting the file once (setting it up for incremental from then).
    Rewrite,
}

impl ProcessTable<'_> {
    /// Deletes the process rows that ended before `cutoff_ms` (see [`PRUNABLE`]) and gives the
    /// space back (see [`Compact`]); with `dry_run`, only counts them.
    pub fn prune(
        &self,
        cutoff_ms: i64,
        dry_run: bool,
        compact: Compact,
    ) -> Result<Pruned, StoreError> {
        if dry_run {
            let bytes_before = file_bytes(self.store);
            let sql = format!("SELECT count(*) FROM ({PRUNABLE}) AS prunable");
            let rows: u64 = self.store.db().query_one(&sql, &args![cutoff_ms])?.get(0)?;
            return Ok(Pruned {
                rows,
                bytes_before,
                bytes_after: bytes_before,
            });
        }
        self.delete_and_compact(cutoff_ms, None, compact)
    }

    /// [`Self::prune`] of at most `at_most` rows, the newest first — a row's children are newer
    /// than it, so none of them outlives it and no parent link dangles — for the daemon's loop,
    /// which prunes a long history a share a turn, never all at once.
    pub fn prune_some(
        &self,
        cutoff_ms: i64,
        at_most: u64,
        compact: Compact,
    ) -> Result<Pruned, StoreError> {
        self.delete_and_compact(cutoff_ms, Some(at_most), compact)
    }

    /// Deletes the rows [`PRUNABLE`] takes at `cutoff_ms` (at most `at_most`, the newest
    /// first), clearing what pointed at them, and gives the space back as `compact` allows.
    fn delete_and_compact(
        &self,
        cutoff_ms: i64,
        at_most: Option<u64>,
        compact: Compact,
    ) -> Result<Pruned, StoreError> {
        let bytes_before = file_bytes(self.store);
        let limit = at_most.map_or(String::new(), |n| format!(" ORDER BY id DESC LIMIT {n}"));
        let rows = self.store.write(|tx| {
            // (A temporary table of this connection: only the temporary one is named so.)
            tx.execute("DROP TABLE IF EXISTS pruned", &[])?;
            tx.execute("CREATE TEMP TABLE pruned (id BIGINT PRIMARY KEY)", &[])?;
            tx.execute(
                &format!("INSERT INTO pruned (id) {PRUNABLE}{limit}"),
                &args![cutoff_ms],
            )?;
            for clear in [
                "UPDATE results SET process_id = NULL WHERE process_id IN (SELECT id FROM pruned)",
                "UPDATE crawls SET owner_id = NULL WHERE owner_id IN (SELECT id FROM pruned)",
                "UPDATE snapshots SET owner_id = NULL WHERE owner_id IN (SELECT id FROM pruned)",
            ] {
                tx.execute(clear, &[])?;
            }
            let rows = tx.execute(
                "DELETE FROM processes WHERE id IN (SELECT id FROM pruned)",
                &[],
            )?;
            tx.execute("DROP TABLE pruned", &[])?;
            Ok(rows)
        })?;
        if rows > 0 {
            give_back_space(self.store, compact)?;
        }
        Ok(Pruned {
            rows,
            bytes_before,
            bytes_after: file_bytes(self.store),
        })
    }
}

/// Gives free pages back to the file system, as `how` allows.
/// (SQLite's file only: PostgreSQL's autovacuum manages its own space.)
fn give_back_space(store: &Store, how: Compact) -> Result<(), StoreError> {
    const INCREMENTAL: i64 = 2;
    let Some(conn) = store.sqlite() else {
        return Ok(());
    };
    let mode: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
    match how {
        _ if mode == INCREMENTAL => conn.execute_batch("PRAGMA incremental_vacuum;")?,
        Compact::Rewrite => conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")?,
        Compact::IfCheap => return Ok(()),
    }
    // The freed pages leave the file once the write-ahead log is checkpointed into it.
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

/// The database's size in bytes as SQLite counts it (its pages): the file's size once the
/// write-ahead log is checkpointed into it.
fn file_bytes(store: &Store) -> u64 {
    let Some(conn) = store.sqlite() else {
        return 0;
    };
    let size = |pragma: &str| -> u64 {
        conn.query_row(pragma, [], |r| r.get::<_, i64>(0))
            .map_or(0, |n| n.max(0) as u64)
    };
    size("PRAGMA page_count") * size("PRAGMA page_size")
}
