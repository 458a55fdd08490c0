//! [`Db`](super::Db) on SQLite: statements kept parsed in rusqlite's cache, values bound and read
//! as SQLite's own storage classes.

use super::{Row, SqlError, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::Connection;

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Value::Real(v) => ToSqlOutput::Borrowed(ValueRef::Real(*v)),
            Value::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
        })
    }
}

fn value_of(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(v) => Value::Int(v),
        ValueRef::Real(v) => Value::Real(v),
        ValueRef::Text(v) | ValueRef::Blob(v) => Value::Text(String::from_utf8_lossy(v).into()),
    }
}

pub(super) fn execute(conn: &Connection, sql: &str, args: &[Value]) -> Result<u64, SqlError> {
    let changed = conn
        .prepare_cached(sql)?
        .execute(rusqlite::params_from_iter(args))?;
    Ok(changed as u64)
}

/// At most `limit` rows of `sql`.
pub(super) fn query(
    conn: &Connection,
    sql: &str,
    args: &[Value],
    limit: usize,
) -> Result<Vec<Row>, SqlError> {
    query_map(conn, sql, args, limit, Ok)
}

/// At most `limit` rows of `sql`, each made a `T` by `f` as it is read: only one row's values
/// are held at a time (`abxctl ps` on thousands of rows spent a fifth of its time allocating,
/// faulting in and freeing every row's values at once).
pub(super) fn query_map<T>(
    conn: &Connection,
    sql: &str,
    args: &[Value],
    limit: usize,
    mut f: impl FnMut(Row) -> Result<T, SqlError>,
) -> Result<Vec<T>, SqlError> {
    let mut statement = conn.prepare_cached(sql)?;
    let columns = statement.column_count();
    let mut rows = statement.query(rusqlite::params_from_iter(args))?;
    let mut out = Vec::new();
    while out.len() < limit {
        let Some(row) = rows.next()? else {
            break;
        };
        // (Sized up front: collecting `Result`s cannot know the length, and grew every row's
        // vector four times — a tenth of `abxctl ps` on 1 000 live rows.)
        let mut values = Vec::with_capacity(columns);
        for i in 0..columns {
            values.push(value_of(row.get_ref(i)?));
        }
        out.push(f(Row(values))?);
    }
    Ok(out)
}

/// Whether the disk is full (SQLite's `SQLITE_FULL`: a write that found no space, rolled back).
pub(super) fn is_full(err: &rusqlite::Error) -> bool {
    err.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

/// Whether another connection holds the lock, or the disk is full ([`is_full`]): the write may
/// succeed later, unchanged.
pub(super) fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    ) || is_full(err)
}
