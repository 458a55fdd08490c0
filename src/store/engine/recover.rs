//! `abxd store recover`: every row that can still be read from a damaged SQLite database,
//! copied into a new one made at the latest schema — its indexes built anew, its kept counts
//! made by the new file's own triggers as the rows arrive.
//!
//! Invariants: the damaged file is only read (copied, with its log, beside the new file, and
//! the copy read — a truncated one with its header's page count set aside); the
//! new file is written in one transaction, and removed if the recovery fails, so it is whole
//! or absent; a table is read in rowid order, a page of rows at a time, and where a page cannot
//! be read, a row at a time until the rows read again — so one damaged page loses its own rows,
//! not the table's. Rows that name a row that was lost (a result whose snapshot's page was
//! damaged) are kept and counted, not dropped: the operator decides.

use super::file::beside;
use super::health::{file_header_problem, header_problem, is_damage, said, unreadable};
use crate::store::{migrations, Store, StoreError};
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

/// Rows read and written at a time.
const PAGE_ROWS: i64 = 500;

/// What a recovery read of each table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    pub tables: Vec<TableRead>,
    /// Rows in the new file that name a row it does not have (`PRAGMA foreign_key_check`).
    pub dangling: u64,
}

/// What a recovery read of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRead {
    pub table: &'static str,
    pub copied: u64,
    /// Rows whose page could not be read.
    pub lost: u64,
    /// The rows after the last one copied could not be reached at all (how many there were is
    /// not known).
    pub cut_short: bool,
}

/// Copies what can be read of the SQLite database at `from` into a new database at `to`.
pub fn recover(from: &Path, to: &Path) -> Result<Recovered, StoreError> {
    if to.symlink_metadata().is_ok() {
        return Err(StoreError::Copy(format!(
            "{} exists: abxd store recover writes a new file, never over one",
            to.display()
        )));
    }
    let scratch = Scratch::of(from, to)?;
    let source = open_source(&scratch.path, from)?;
    // (The new file's schema is this abxd's, made as the daemon makes one.)
    drop(Store::open(to)?);
    let recovered = (|| {
        let target = Connection::open(to).map_err(StoreError::Sql)?;
        target.pragma_update(None, "foreign_keys", "OFF")?;
        target.execute_batch("BEGIN IMMEDIATE")?;
        let mut recovered = Recovered::default();
        for &(table, _) in migrations::TABLES {
            let read = copy_table(&source, &target, table).map_err(|err| {
                StoreError::Copy(format!("cannot recover table {table}: {}", said(&err)))
            })?;
            recovered.tables.push(read);
        }
        copy_meta(&source, &target)?;
        target.execute_batch("COMMIT")?;
        recovered.dangling = target
            .prepare("PRAGMA foreign_key_check")?
            .query_map([], |_| Ok(()))?
            .count() as u64;
        Ok(recovered)
    })();
    if recovered.is_err() {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(beside(to, suffix));
        }
    }
    drop(source);
    drop(scratch);
    recovered
}

/// A copy of the damaged file (and its write-ahead log) beside the new one, which SQLite may
/// write to as it reads (its log replayed, a lock taken) while the damaged file stays as it is;
/// removed when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn of(from: &Path, to: &Path) -> Result<Scratch, StoreError> {
        let scratch = Scratch {
            path: beside(to, ".reading"),
        };
        let copy = |suffix: &str| -> std::io::Result<()> {
            match std::fs::copy(beside(from, suffix), beside(&scratch.path, suffix)) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound && !suffix.is_empty() => {
                    Ok(())
                }
                copied => copied.map(drop),
            }
        };
        (copy("")
            .and_then(|()| copy("-wal"))
            .and_then(|()| forget_page_count(&scratch.path)))
        .map_err(|err| {
            StoreError::Copy(format!(
                "cannot copy {} to read it beside {}: {err}",
                from.display(),
                to.display()
            ))
        })?;
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(beside(&self.path, suffix));
        }
    }
}

/// Makes the page count in the header of the (copied) file at `path` one SQLite does not trust,
/// when the file is shorter than it says (truncated): SQLite then counts the pages the file has,
/// and reads what is on them, where it refuses a file shorter than its header's count.
fn forget_page_count(path: &Path) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let mut header = [0u8; 100];
    if file.read_exact(&mut header).is_err() {
        return Ok(());
    }
    let len = file.metadata()?.len();
    if let Some(mark) = untrusted_page_count(&header, len) {
        file.seek(SeekFrom::Start(92))?;
        file.write_all(&mark)?;
    }
    Ok(())
}

/// For a header whose page count says more pages than a file of `len` bytes has, the "version
/// valid for" that makes SQLite not trust that count (its change counter, plus one).
fn untrusted_page_count(header: &[u8; 100], len: u64) -> Option<[u8; 4]> {
    let truncated = header_problem(header, len).is_some_and(|p| p.contains("truncated"));
    let counter = u32::from_be_bytes(header[24..28].try_into().unwrap());
    truncated.then(|| counter.wrapping_add(1).to_be_bytes())
}

/// The file to read (`path`, the scratch copy of `from`), at a schema this abxd knows.
fn open_source(path: &Path, from: &Path) -> Result<Connection, StoreError> {
    let header = file_header_problem(path).map_err(unreadable(from))?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let nothing_readable = |cause: rusqlite::Error| {
        let why = header.clone().unwrap_or_else(|| said(&cause));
        StoreError::Copy(format!(
            "nothing can be recovered from {}: {why}",
            from.display()
        ))
    };
    let source = Connection::open_with_flags(path, flags).map_err(nothing_readable)?;
    let found = migrations::user_version(&source).map_err(nothing_readable)?;
    // (Every table is found through the schema's own table: without it, none is.)
    let schema: rusqlite::Result<i64> =
        source.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0));
    schema.map_err(|err| {
        StoreError::Copy(format!(
            "nothing can be recovered from {}: its schema cannot be read ({}), and every table \
             is found through it",
            from.display(),
            said(&err)
        ))
    })?;
    if found > migrations::LATEST {
        return Err(StoreError::TooNew {
            path: from.to_path_buf(),
            found,
            latest: migrations::LATEST,
        });
    }
    Ok(source)
}

/// Copies what can be read of `table`.
fn copy_table(
    source: &Connection,
    target: &Connection,
    table: &'static str,
) -> rusqlite::Result<TableRead> {
    let columns = shared_columns(source, target, table)?;
    let mut read = TableRead {
        table,
        copied: 0,
        lost: 0,
        cut_short: false,
    };
    if columns.is_empty() {
        return Ok(read);
    }
    let list = columns.join(", ");
    let page_sql = format!(
        "SELECT rowid, {list} FROM {table} WHERE rowid > ?1 ORDER BY rowid LIMIT {PAGE_ROWS}"
    );
    let one_sql = format!("SELECT rowid, {list} FROM {table} WHERE rowid = ?1");
    let marks = vec!["?"; columns.len()].join(", ");
    let insert = format!("INSERT INTO {table} ({list}) VALUES ({marks}) ON CONFLICT DO NOTHING");
    let mut insert = target.prepare(&insert)?;
    let mut after = i64::MIN;
    loop {
        match read_rows(source, &page_sql, after) {
            Ok(rows) if rows.is_empty() => return Ok(read),
            Ok(rows) => {
                for (rowid, values) in rows {
                    insert.execute(rusqlite::params_from_iter(values))?;
                    (after, read.copied) = (rowid, read.copied + 1);
                }
            }
            Err(err) if is_damage(&err) => {
                // Past the damaged page a row at a time, until one reads again.
                let Ok(last) =
                    source.query_row(&format!("SELECT max(rowid) FROM {table}"), [], |row| {
                        row.get::<_, Option<i64>>(0)
                    })
                else {
                    read.cut_short = true;
                    return Ok(read);
                };
                let mut rowid = after.max(0).saturating_add(1);
                let mut found = None;
                while found.is_none() && rowid <= last.unwrap_or(0) {
                    match read_rows(source, &one_sql, rowid) {
                        Ok(mut rows) => found = rows.pop(),
                        Err(err) if is_damage(&err) => read.lost += 1,
                        Err(err) => return Err(err),
                    }
                    rowid += 1;
                }
                let Some((rowid, values)) = found else {
                    return Ok(read);
                };
                insert.execute(rusqlite::params_from_iter(values))?;
                (after, read.copied) = (rowid, read.copied + 1);
            }
            Err(err) => return Err(err),
        }
    }
}

/// The rows `sql` reads with `?1 = at`: each its rowid and its values.
fn read_rows(source: &Connection, sql: &str, at: i64) -> rusqlite::Result<Vec<(i64, Vec<Value>)>> {
    let mut statement = source.prepare_cached(sql)?;
    let width = statement.column_count();
    let rows = statement.query_map([at], |row| {
        let values = (1..width)
            .map(|n| row.get::<_, Value>(n))
            .collect::<Result<_, _>>()?;
        Ok((row.get(0)?, values))
    })?;
    rows.collect()
}

/// The columns of `table` both files have, in the new file's order.
fn shared_columns(
    source: &Connection,
    target: &Connection,
    table: &str,
) -> rusqlite::Result<Vec<String>> {
    let columns = |conn: &Connection| -> rusqlite::Result<Vec<String>> {
        let sql = format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid");
        let mut statement = conn.prepare(&sql)?;
        let names = statement.query_map([], |row| row.get(0))?;
        names.collect()
    };
    let had = columns(source)?;
    Ok(columns(target)?
        .into_iter()
        .filter(|name| had.contains(name))
        .collect())
}

/// The damaged file's `meta` over the new one's (its schema version stays the new file's).
fn copy_meta(source: &Connection, target: &Connection) -> Result<(), StoreError> {
    let rows = read_rows(
        source,
        "SELECT rowid, key, value FROM meta WHERE rowid > ?1",
        0,
    );
    let Ok(rows) = rows else {
        log::warn!("meta: cannot be read: the new file keeps its own");
        return Ok(());
    };
    for (_, values) in rows {
        if values.first() == Some(&Value::Text("schema_version".into())) {
            continue;
        }
        target.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            rusqlite::params_from_iter(values),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_truncated_files_page_count_is_set_aside() {
        let mut header = [0u8; 100];
        header[..16].copy_from_slice(b"SQLite format 3\0");
        header[16..18].copy_from_slice(&4096u16.to_be_bytes());
        header[24..28].copy_from_slice(&7u32.to_be_bytes());
        header[28..32].copy_from_slice(&10u32.to_be_bytes());
        header[92..96].copy_from_slice(&7u32.to_be_bytes());
        assert_eq!(untrusted_page_count(&header, 10 * 4096), None);
        assert_eq!(
            untrusted_page_count(&header, 4 * 4096),
            Some(8u32.to_be_bytes())
        );
    }
}
