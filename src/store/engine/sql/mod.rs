//! The SQL both stores speak: one connection type ([`Db`]) over the embedded SQLite file or a
//! PostgreSQL server, with values ([`Value`]) and rows ([`Row`]) of its own, so that the store's
//! statements are written once, whichever engine runs them.
//!
//! Invariants: a statement is written in SQLite's placeholder style (`?1`, `?2`, …) in the subset
//! of SQL both engines read alike (`RETURNING`, `ON CONFLICT`, `COALESCE`, `CAST`, savepoints);
//! for PostgreSQL its placeholders are rewritten (`$1`, `$2`, … — never inside a string literal or
//! a quoted name) once, when it is first prepared; what the engines say differently is asked of
//! [`Dialect`], never written as two statements by a caller. A placeholder whose type nothing
//! around it tells (`?1 IS NULL`, `?1 + ?2`) is written `CAST(?1 AS BIGINT)` (or `TEXT`):
//! PostgreSQL types every placeholder when it prepares the statement. Every statement is prepared once per
//! connection and kept. A value crosses to either engine and back unchanged: integers as 64-bit
//! integers (a PostgreSQL `boolean` reads as 0 or 1), text as text, `NULL` as [`Value::Null`].

mod columns;
mod postgres;
mod sqlite;

pub use crate::config::redacted;
mod value;
mod words;

pub use columns::Column;
pub(crate) use columns::{column_sql, columns};
pub(crate) use value::column_text;
pub use value::{found, FromValue, Row, Value};

/// Which engine a connection speaks to, and how it says what the two say differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// What begins a write transaction: SQLite takes the write lock up front (`IMMEDIATE`), so a
    /// write never fails half-way for want of it; PostgreSQL locks rows as they are written.
    pub fn begin_write(self) -> &'static str {
        match self {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres => "BEGIN",
        }
    }

    /// What begins a transaction that only reads, as of one moment: SQLite's deferred `BEGIN`
    /// (its snapshot taken at the first read), PostgreSQL's `REPEATABLE READ` (at the first
    /// statement).
    pub fn begin_read(self) -> &'static str {
        match self {
            Dialect::Sqlite => "BEGIN",
            Dialect::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        }
    }

    /// What ends a `SELECT … FOR` a claim, so that two claimers never wait on each other's row:
    /// nothing on SQLite (one writer at a time), `FOR UPDATE SKIP LOCKED` on PostgreSQL.
    pub fn skip_locked(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// What ends a `SELECT` of a row that stands for a count the transaction checks before it
    /// writes, so that transactions checking it take turns: nothing on SQLite (one writer at a
    /// time), `FOR UPDATE` on PostgreSQL.
    pub fn for_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }

    /// What ends a `SELECT` that reads a row a transaction's writes depend on, so that no other
    /// transaction changes it before this one ends: nothing on SQLite (one writer at a time),
    /// `FOR SHARE` on PostgreSQL.
    pub fn for_share(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR SHARE",
        }
    }

    /// A subquery giving the integers of the JSON array in placeholder `param` (`?1`): how a
    /// statement takes a list of ids of any length.
    pub fn integers_of_json(self, param: &str) -> String {
        match self {
            Dialect::Sqlite => format!("(SELECT value FROM json_each({param}))"),
            Dialect::Postgres => format!(
                "(SELECT CAST(value AS BIGINT) FROM \
                 jsonb_array_elements_text(CAST(CAST({param} AS TEXT) AS JSONB)))"
            ),
        }
    }
}

/// What a statement could not do.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{}", postgres::describe(.0))]
    Postgres(#[from] ::postgres::Error),
    #[error("column {column}: expected {expected}, found {found}")]
    Type {
        /// Its name, or its place in the row.
        column: String,
        expected: &'static str,
        found: String,
    },
    #[error("the statement returned no row")]
    NoRow,
    /// A connection that cannot even be tried: what is wrong with its settings.
    #[error("{0}")]
    Settings(String),
    /// The server is out of reach for now (busy: try again later).
    #[error("{0}")]
    Disconnected(String),
    /// A commit that is made but not known to be on disk: its write-ahead log could not be
    /// synced (`durable`).
    #[error("{0}")]
    Unsynced(String),
}

impl SqlError {
    /// Whether the disk under the database is full: the write may succeed unchanged once space
    /// is freed, so it is tried again as a busy one is (and [`SqlError::is_busy`] says so too).
    pub fn is_full(&self) -> bool {
        match self {
            SqlError::Sqlite(err) => sqlite::is_full(err),
            SqlError::Postgres(err) => postgres::is_full(err),
            _ => false,
        }
    }

    /// Whether another writer held the lock (SQLite) or the row (PostgreSQL's lock timeout), or
    /// the disk is full: something to try again, not a failure of the statement.
    pub fn is_busy(&self) -> bool {
        match self {
            SqlError::Sqlite(err) => sqlite::is_busy(err),
            SqlError::Postgres(err) => postgres::is_busy(err),
            SqlError::Disconnected(_) => true,
            _ => false,
        }
    }
}

/// A connection to the store's database.
pub enum Db {
    Sqlite(rusqlite::Connection),
    Postgres(Box<postgres::Connection>),
}

impl Db {
    /// Connects to the PostgreSQL server `url` names (a `postgres://` URL, completed as
    /// `config::Server` says).
    pub fn connect_postgres(url: &str) -> Result<Db, SqlError> {
        let server = crate::config::Server {
            url: url.to_string(),
            password_file: None,
        };
        Db::connect_postgres_with(server.client().map_err(SqlError::Settings)?)
    }

    pub(crate) fn connect_postgres_with(settings: crate::config::Client) -> Result<Db, SqlError> {
        Ok(Db::Postgres(Box::new(postgres::Connection::connect(
            settings,
        )?)))
    }

    /// Which session of the connection is open: it changes when the server's session was lost
    /// and made again (an SQLite file has one for ever).
    pub fn session(&self) -> u64 {
        match self {
            Db::Sqlite(_) => 0,
            Db::Postgres(connection) => connection.session(),
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs one statement with `args`; returns how many rows it changed.
    pub fn execute(&self, sql: &str, args: &[Value]) -> Result<u64, SqlError> {
        match self {
            Db::Sqlite(conn) => sqlite::execute(conn, sql, args),
            Db::Postgres(conn) => conn.execute(sql, args),
        }
    }

    /// Runs one statement without parameters, kept parsed (transaction control runs on every
    /// write).
    pub fn run(&self, sql: &str) -> Result<(), SqlError> {
        self.execute(sql, &[]).map(drop)
    }

    /// Every row one statement returns.
    pub fn query(&self, sql: &str, args: &[Value]) -> Result<Vec<Row>, SqlError> {
        match self {
            Db::Sqlite(conn) => sqlite::query(conn, sql, args, usize::MAX),
            Db::Postgres(conn) => conn.query(sql, args),
        }
    }

    /// Every row one statement returns, each made a `T` by `f`.
    pub fn query_map<T>(
        &self,
        sql: &str,
        args: &[Value],
        mut f: impl FnMut(&Row) -> Result<T, SqlError>,
    ) -> Result<Vec<T>, SqlError> {
        match self {
            Db::Sqlite(conn) => sqlite::query_map(conn, sql, args, usize::MAX, |row| f(&row)),
            Db::Postgres(conn) => conn.query(sql, args)?.iter().map(f).collect(),
        }
    }

    /// The first column of the first row one statement returns, if it returns a row.
    pub fn query_value<T: FromValue>(
        &self,
        sql: &str,
        args: &[Value],
    ) -> Result<Option<T>, SqlError> {
        self.query_opt(sql, args)?.map(|row| row.get(0)).transpose()
    }

    /// The first row one statement returns, if any.
    pub fn query_opt(&self, sql: &str, args: &[Value]) -> Result<Option<Row>, SqlError> {
        match self {
            Db::Sqlite(conn) => Ok(sqlite::query(conn, sql, args, 1)?.pop()),
            Db::Postgres(conn) => Ok(conn.query(sql, args)?.into_iter().next()),
        }
    }

    /// The first row one statement returns; no row is an error ([`SqlError::NoRow`]).
    pub fn query_one(&self, sql: &str, args: &[Value]) -> Result<Row, SqlError> {
        self.query_opt(sql, args)?.ok_or(SqlError::NoRow)
    }

    /// Runs statements without arguments, separated by `;` (a migration's).
    pub fn execute_batch(&self, sql: &str) -> Result<(), SqlError> {
        match self {
            Db::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Db::Postgres(conn) => conn.execute_batch(sql),
        }
    }

    /// Whether a transaction is open on this connection.
    /// Runs `sql` (a setting, a session lock) first thing in every session a PostgreSQL
    /// connection makes again after losing its own (an SQLite connection never does).
    pub fn on_new_session(&self, sql: &str) {
        if let Db::Postgres(conn) = self {
            conn.on_new_session(sql);
        }
    }

    pub fn in_transaction(&self) -> bool {
        match self {
            Db::Sqlite(conn) => !conn.is_autocommit(),
            Db::Postgres(conn) => conn.in_transaction(),
        }
    }

    /// While the server is out of reach: when the next attempt to connect again is due (no
    /// statement can succeed before then).
    pub fn reconnect_at(&self) -> Option<std::time::Instant> {
        match self {
            Db::Sqlite(_) => None,
            Db::Postgres(conn) => conn.reconnect_at(),
        }
    }
}

/// The placeholders of a multi-row `INSERT … VALUES`: `rows` tuples of `width` each, numbered
/// on — `(?1, ?2), (?3, ?4)` for 2 × 2 — for values given row after row.
pub fn value_rows(width: usize, rows: usize) -> String {
    let tuples: Vec<String> = (0..rows)
        .map(|row| {
            let places: Vec<String> = (1..=width)
                .map(|column| format!("?{}", row * width + column))
                .collect();
            format!("({})", places.join(", "))
        })
        .collect();
    tuples.join(", ")
}

/// `Value`s from a list of expressions: `args![id, name, None::<i64>]`.
#[macro_export]
macro_rules! args {
    ($($arg:expr),* $(,)?) => {
        [$($crate::store::sql::Value::from($arg)),*]
    };
}

pub use args;

/// The steps of SQLite's plan for `sql`, its `params` placeholders all NULL: what tests read to
/// hold a query to an index.
#[cfg(test)]
pub(crate) fn sqlite_plan(conn: &rusqlite::Connection, sql: &str, params: usize) -> Vec<String> {
    let mut plan = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let nulls = vec![rusqlite::types::Null; params];
    plan.query_map(rusqlite::params_from_iter(nulls), |row| row.get(3))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Whether a plan's `steps` find rows of `table` through an index and never read it whole.
#[cfg(test)]
pub(crate) fn searches_by_index(steps: &[String], table: &str) -> bool {
    let searched = (steps.iter()).any(|step| step.starts_with(&format!("SEARCH {table} USING ")));
    let scanned = (steps.iter()).any(|step| step.starts_with(&format!("SCAN {table}")));
    searched && !scanned
}

#[cfg(test)]
mod tests;
