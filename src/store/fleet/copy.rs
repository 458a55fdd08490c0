//! Copying a store into an empty PostgreSQL database (`abxd store copy`): every table's rows with
//! their ids, so that a host that outgrew its SQLite file moves to a shared database with its
//! whole history.
//!
//! Invariants: the source is read inside one read transaction (a consistent snapshot, whatever
//! else reads it); the target must hold no abxd row (a database without the schema gets it
//! first); everything is written in one transaction or nothing is; afterwards each identity
//! sequence starts past the largest id copied, so the next crawl or process gets a new id; the
//! marker namespace (`meta.instance_id`) comes along, so leftovers of the old database are
//! still recognised as its own.

use crate::store::engine::migrations::TABLES;
use crate::store::engine::sql::{value_rows, Value};
use crate::store::{Store, StoreError};

/// The triggers that keep `crawl_tallies` (migration 32), `process_tallies` and
/// `process_moments` (migration 36), off while the rows arrive.
const TALLIES_OFF: &str = "ALTER TABLE snapshots DISABLE TRIGGER snapshots_tally_rows; \
     ALTER TABLE results DISABLE TRIGGER results_tally_rows; \
     ALTER TABLE processes DISABLE TRIGGER processes_tally_rows; \
     ALTER TABLE processes DISABLE TRIGGER processes_moments;";

/// The copied rows counted, as migrations 32 and 36 counted them, and the triggers on again.
const TALLIES_COUNTED: &str = "INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count) \
     SELECT crawl_id, 'snapshot', status, id % 16, count(*) FROM snapshots \
     GROUP BY crawl_id, status, id % 16; \
     INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count) \
     SELECT crawl_id, 'result', status, id % 16, count(*) FROM results \
     GROUP BY crawl_id, status, id % 16; \
     INSERT INTO process_tallies (machine_id, kind, status, slot, count) \
     SELECT COALESCE(machine_id, ''), kind, status, id % 16, count(*) FROM processes \
     GROUP BY COALESCE(machine_id, ''), kind, status, id % 16; \
     INSERT INTO process_moments (machine_id, moment, slot, count) \
     SELECT COALESCE(machine_id, ''), 'ended', id % 16, count(*) FROM processes \
     WHERE status IN ('exited', 'lost') GROUP BY COALESCE(machine_id, ''), id % 16; \
     INSERT INTO process_moments (machine_id, moment, slot, count) \
     SELECT COALESCE(machine_id, ''), 'hook_started', id % 16, count(*) FROM processes \
     WHERE kind = 'hook' AND started_at IS NOT NULL GROUP BY COALESCE(machine_id, ''), id % 16; \
     ALTER TABLE snapshots ENABLE TRIGGER snapshots_tally_rows; \
     ALTER TABLE results ENABLE TRIGGER results_tally_rows; \
     ALTER TABLE processes ENABLE TRIGGER processes_tally_rows; \
     ALTER TABLE processes ENABLE TRIGGER processes_moments;";

/// What a copy wrote: rows per table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    pub rows: Vec<(&'static str, u64)>,
}

impl Copied {
    /// "1 204 processes, 3 crawls, …" as the command prints it.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .rows
            .iter()
            .map(|(table, rows)| format!("{rows} {table}"))
            .collect();
        parts.join(", ")
    }
}

/// Copies every row of the SQLite store `source` into `target`, an empty PostgreSQL store at
/// the same schema version.
pub fn copy(source: &Store, target: &Store) -> Result<Copied, StoreError> {
    if source.sqlite().is_none() || target.sqlite().is_some() {
        return Err(StoreError::Copy(
            "abxd copies an SQLite file into a PostgreSQL database".into(),
        ));
    }
    refuse_unless_empty(target)?;
    // (One read transaction: every table as of one moment.)
    source.db().execute("BEGIN", &[])?;
    let db = target.db();
    db.execute("BEGIN", &[])?;
    let copied = (|| {
        // (A tally trigger a row would cost a million updates of a few rows: the counts are
        // made once, at the end, as migrations 32 and 36 made them. Both within the transaction.)
        db.execute_batch(TALLIES_OFF)?;
        let mut copied = Vec::new();
        for &(table, identity) in TABLES {
            let rows = copy_table(source, target, table)?;
            if identity {
                db.query(
                    &format!(
                        "SELECT setval(pg_get_serial_sequence('{table}', 'id'), \
                             COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
                    ),
                    &[],
                )?;
            }
            copied.push((table, rows));
        }
        copy_meta(source, target)?;
        db.execute_batch(TALLIES_COUNTED)?;
        db.execute("COMMIT", &[])?;
        // The planner's statistics of the tables just filled, as autovacuum would gather them
        // later (until then a listing may read a million rows where it needs fifty). The copy
        // is whole whatever this says: a failure only leaves them to autovacuum.
        if let Err(err) = db.execute_batch("ANALYZE") {
            log::warn!("store copy: the copied tables' statistics are not gathered yet: {err}");
        }
        Ok(Copied { rows: copied })
    })();
    if copied.is_err() {
        let _ = db.execute("ROLLBACK", &[]);
    }
    let _ = source.db().execute("COMMIT", &[]);
    copied
}

/// A store with any row of abxd's is refused: a copy never mixes two histories.
fn refuse_unless_empty(target: &Store) -> Result<(), StoreError> {
    for &(table, _) in TABLES {
        let count: Option<i64> = target
            .db()
            .query_value(&format!("SELECT COUNT(*) FROM {table}"), &[])?;
        if let Some(count) = count.filter(|n| *n > 0) {
            return Err(StoreError::Copy(format!(
                "{} is not empty ({count} rows in {table}): abxd copies only into an empty \
                     database, so that two histories never mix",
                target.path().display()
            )));
        }
    }
    Ok(())
}

/// Rows read and written at a time: what the copier holds stays bounded whatever the history's
/// size, and a statement's parameters stay under PostgreSQL's 65 535.
const BATCH_ROWS: usize = 500;

/// Copies `table`'s rows (in id order where it has ids), `BATCH_ROWS` to a statement; returns
/// how many.
fn copy_table(source: &Store, target: &Store, table: &str) -> Result<u64, StoreError> {
    let columns: Vec<String> = source
        .db()
        .query(
            &format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid"),
            &[],
        )?
        .iter()
        .map(|row| row.get::<String>(0))
        .collect::<Result<_, _>>()?;
    let list = columns.join(", ");
    // (Paged by rowid: each page a short indexed read, never the whole table at once.)
    let page = format!(
        "SELECT rowid, {list} FROM {table} WHERE rowid > ?1 ORDER BY rowid LIMIT {BATCH_ROWS}"
    );
    let (mut after, mut count) = (i64::MIN, 0u64);
    loop {
        let rows = source.db().query(&page, &[Value::Int(after)])?;
        let Some(last) = rows.last() else {
            return Ok(count);
        };
        after = last.get(0)?;
        let batch = rows.len();
        let mut values = Vec::with_capacity(batch * columns.len());
        for row in rows {
            values.extend(row.into_values().into_iter().skip(1));
        }
        let insert = format!(
            "INSERT INTO {table} ({list}) VALUES {}",
            value_rows(columns.len(), batch)
        );
        target.db().execute(&insert, &values)?;
        count += batch as u64;
    }
}

/// Copies `meta` over the target's own (its schema version stays: the schema is the target's).
fn copy_meta(source: &Store, target: &Store) -> Result<(), StoreError> {
    for row in source.db().query("SELECT key, value FROM meta", &[])? {
        let (key, value): (String, String) = (row.get(0)?, row.get(1)?);
        if key == "schema_version" {
            continue;
        }
        target.db().execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[Value::Text(key), Value::Text(value)],
        )?;
    }
    Ok(())
}
