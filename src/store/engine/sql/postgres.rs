//! [`Db`](super::Db) on PostgreSQL, through the synchronous `postgres` client: statements
//! rewritten to PostgreSQL's placeholders and prepared on the server once, values bound as the
//! type the server expects for each placeholder and read back by their column's type.
//!
//! A connection the server closed (a restart, a network cut) is made again at the next
//! statement, at most every [`RECONNECT_EVERY`]; a new session first runs what the old one was
//! told to keep ([`Connection::on_new_session`]: a setting, the daemon's session lock). Until it
//! is back, statements fail with an error that counts as busy — try again later, nothing was
//! written — and a transaction the closed session had open is gone: its statements fail until
//! the caller rolls it back.

use super::{Row, SqlError, Value};
use postgres::types::{IsNull, ToSql, Type};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The least time between two attempts to connect again.
pub const RECONNECT_EVERY: Duration = Duration::from_secs(1);

/// What every session of abxd runs first: a transaction left open by a process that stopped
/// inside it (SIGSTOP, a host paused, a network cut) is ended by the server after a while, so
/// the row locks it holds never keep the other hosts of a fleet from taking its work over.
/// abxd's transactions last milliseconds.
const SESSION_SETTINGS: &str = "SET idle_in_transaction_session_timeout = '5s'";

pub struct Connection {
    client: RefCell<postgres::Client>,
    statements: RefCell<HashMap<String, postgres::Statement>>,
    /// A transaction is open (set by `BEGIN`, cleared by `COMMIT` and `ROLLBACK`).
    in_transaction: Cell<bool>,
    /// How to connect again.
    client_settings: crate::config::Client,
    /// What every new session runs first.
    session: RefCell<Vec<String>>,
    /// The session that had a transaction open was lost: statements fail until a `ROLLBACK`.
    transaction_lost: Cell<bool>,
    /// No attempt to connect again before then.
    next_attempt: Cell<Option<Instant>>,
    /// How many sessions were made again after one was lost (see [`Connection::session`]).
    sessions_made_again: Cell<u64>,
}

impl Connection {
    pub(crate) fn connect(settings: crate::config::Client) -> Result<Connection, SqlError> {
        let mut client = settings.connect()?;
        client.batch_execute(SESSION_SETTINGS)?;
        Ok(Connection {
            client: RefCell::new(client),
            statements: RefCell::new(HashMap::new()),
            in_transaction: Cell::new(false),
            client_settings: settings,
            session: RefCell::new(vec![SESSION_SETTINGS.to_string()]),
            transaction_lost: Cell::new(false),
            next_attempt: Cell::new(None),
            sessions_made_again: Cell::new(0),
        })
    }

    /// Which session of the connection is (or was last) open: it changes when a lost one is
    /// made again.
    pub fn session(&self) -> u64 {
        self.sessions_made_again.get()
    }

    /// While the connection is lost: when the next attempt to connect again is due.
    pub fn reconnect_at(&self) -> Option<Instant> {
        (self.client.borrow().is_closed())
            .then(|| self.next_attempt.get())
            .flatten()
    }

    /// Runs `sql` first thing in every session made again after this one is lost.
    pub fn on_new_session(&self, sql: &str) {
        self.session.borrow_mut().push(sql.to_string());
    }

    /// Connects again if the server closed the connection; fails while it cannot (at most one
    /// attempt every [`RECONNECT_EVERY`]), or while a transaction of the lost session is not
    /// rolled back yet — except for what ends that (`BEGIN`, `ROLLBACK`: `control`); a `COMMIT`
    /// of it fails, since nothing of it was kept.
    fn ensure_connected(&self, sql: &str, control: Option<&Control>) -> Result<(), SqlError> {
        if self.client.borrow().is_closed() {
            if self.in_transaction.replace(false) {
                self.transaction_lost.set(true);
            }
            let now = Instant::now();
            if self.next_attempt.get().is_some_and(|at| now < at) {
                return Err(SqlError::Disconnected(
                    "the connection to PostgreSQL was lost; trying again".into(),
                ));
            }
            self.next_attempt.set(Some(now + RECONNECT_EVERY));
            let mut client = self.client_settings.connect().map_err(|err| {
                SqlError::Disconnected(format!("cannot reach PostgreSQL: {}", describe(&err)))
            })?;
            for sql in self.session.borrow().iter() {
                client.batch_execute(sql)?;
            }
            *self.client.borrow_mut() = client;
            self.statements.borrow_mut().clear();
            self.next_attempt.set(None);
            self.sessions_made_again
                .set(self.sessions_made_again.get() + 1);
            log::warn!("connected to PostgreSQL again");
        }
        if !self.transaction_lost.get() {
            return Ok(());
        }
        let rollback = sql
            .trim_start()
            .get(..8)
            .is_some_and(|w| w.eq_ignore_ascii_case("ROLLBACK"));
        match control {
            Some(Control::Begin) => self.transaction_lost.set(false),
            Some(Control::End) if rollback => self.transaction_lost.set(false),
            _ => {
                return Err(SqlError::Disconnected(
                    "the connection to PostgreSQL was lost in a transaction, which is gone".into(),
                ))
            }
        }
        Ok(())
    }

    fn prepared(&self, sql: &str) -> Result<postgres::Statement, SqlError> {
        if let Some(statement) = self.statements.borrow().get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.borrow_mut().prepare(&placeholders(sql))?;
        self.statements
            .borrow_mut()
            .insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    pub fn execute(&self, sql: &str, args: &[Value]) -> Result<u64, SqlError> {
        let control = transaction_control(sql);
        self.ensure_connected(sql, control.as_ref())?;
        if let Some(control) = control {
            // (As a simple query: also what ends a transaction the server has aborted.)
            self.client.borrow_mut().batch_execute(sql)?;
            match control {
                Control::Begin => self.in_transaction.set(true),
                Control::End => self.in_transaction.set(false),
                Control::Savepoint => {}
            }
            return Ok(0);
        }
        let statement = self.prepared(sql)?;
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
        Ok(self.client.borrow_mut().execute(&statement, &params)?)
    }

    pub fn query(&self, sql: &str, args: &[Value]) -> Result<Vec<Row>, SqlError> {
        self.ensure_connected(sql, None)?;
        let statement = self.prepared(sql)?;
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
        let rows = self.client.borrow_mut().query(&statement, &params)?;
        rows.iter().map(row_of).collect()
    }

    pub fn execute_batch(&self, sql: &str) -> Result<(), SqlError> {
        self.ensure_connected(sql, None)?;
        Ok(self.client.borrow_mut().batch_execute(sql)?)
    }

    pub fn in_transaction(&self) -> bool {
        self.in_transaction.get()
    }
}

/// A statement that controls transactions.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Control {
    Begin,
    End,
    /// `SAVEPOINT`, `RELEASE`, `ROLLBACK TO`: within a transaction, which goes on.
    Savepoint,
}

/// What `sql` does to transactions, if it is a statement that controls them.
pub(super) fn transaction_control(sql: &str) -> Option<Control> {
    // (Asked of every statement: no allocation.)
    let mut words = sql.split_ascii_whitespace();
    let is =
        |word: Option<&str>, expected: &str| word.is_some_and(|w| w.eq_ignore_ascii_case(expected));
    let first = words.next();
    if is(first, "BEGIN") {
        Some(Control::Begin)
    } else if is(first, "COMMIT") || is(first, "END") {
        Some(Control::End)
    } else if is(first, "ROLLBACK") {
        Some(if is(words.next(), "TO") {
            Control::Savepoint
        } else {
            Control::End
        })
    } else if is(first, "SAVEPOINT") || is(first, "RELEASE") {
        Some(Control::Savepoint)
    } else {
        None
    }
}

/// `sql` with SQLite's placeholders (`?1`, or `?` meaning the next number) as PostgreSQL's
/// (`$1`), leaving string literals, quoted names and comments as they are.
pub(super) fn placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    let mut highest = 0u32;
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                out.push(c);
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == c {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                out.push(c);
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == '\n' {
                        break;
                    }
                }
            }
            '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                let number = digits.parse().unwrap_or(highest + 1);
                highest = highest.max(number);
                out.push('$');
                out.push_str(&number.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

fn row_of(row: &postgres::Row) -> Result<Row, SqlError> {
    let values = row
        .columns()
        .iter()
        .enumerate()
        .map(|(i, column)| value_of(row, i, column.type_()))
        .collect::<Result<Vec<Value>, SqlError>>()?;
    Ok(Row(values))
}

fn value_of(row: &postgres::Row, i: usize, ty: &Type) -> Result<Value, SqlError> {
    let value = match *ty {
        Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::Int),
        Type::INT4 => row.try_get::<_, Option<i32>>(i)?.map(Value::from),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)?
            .map(|v| Value::Int(v.into())),
        Type::BOOL => row.try_get::<_, Option<bool>>(i)?.map(Value::from),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(Value::Real),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)?
            .map(|v| Value::Real(v.into())),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
            row.try_get::<_, Option<String>>(i)?.map(Value::Text)
        }
        _ => {
            return Err(SqlError::Type {
                column: i.to_string(),
                expected: "a column of integers, numbers or text",
                found: format!("a column of type {ty}"),
            })
        }
    };
    Ok(value.unwrap_or(Value::Null))
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(v) => match *ty {
                Type::INT8 => v.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::BOOL => (*v != 0).to_sql(ty, out),
                Type::FLOAT8 => (*v as f64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => v.to_string().to_sql(ty, out),
                _ => Err(format!("an integer given where {ty} is wanted").into()),
            },
            Value::Real(v) => match *ty {
                Type::FLOAT8 => v.to_sql(ty, out),
                Type::FLOAT4 => (*v as f32).to_sql(ty, out),
                _ => Err(format!("a number given where {ty} is wanted").into()),
            },
            Value::Text(v) => v.as_str().to_sql(ty, out),
        }
    }

    /// (Each value says in `to_sql` whether it fits the placeholder's type.)
    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// A PostgreSQL error as people read it: the server's message and detail, or the client's.
pub(super) fn describe(err: &postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({detail})", db.message()),
            None => db.message().to_string(),
        },
        // (The client's own errors say what failed, and their sources why: "error performing
        // TLS handshake: … certificate verify failed".)
        None => {
            let mut said = err.to_string();
            let mut source = std::error::Error::source(err);
            while let Some(cause) = source {
                said = format!("{said}: {cause}");
                source = cause.source();
            }
            said
        }
    }
}

/// Whether the server's disk is full (the write may succeed once space is freed).
pub(super) fn is_full(err: &postgres::Error) -> bool {
    err.code() == Some(&postgres::error::SqlState::DISK_FULL)
}

/// Whether the statement may succeed later, unchanged: the server refused for a lock another
/// session holds (a lock timeout, a failed `NOWAIT`, a serialization failure), it is out of
/// reach for now, or its disk is full ([`is_full`]).
pub(super) fn is_busy(err: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    // (A connection closed, or about to be — a restart, a shutdown, a network error — is made
    // again at the next statement.)
    let out_of_reach = |code: &SqlState| {
        code.code().starts_with("08")
            || [
                SqlState::ADMIN_SHUTDOWN,
                SqlState::CRASH_SHUTDOWN,
                SqlState::CANNOT_CONNECT_NOW,
            ]
            .contains(code)
    };
    // (The socket failed under a statement — reset, broken — which closes the connection.)
    let socket_failed =
        std::error::Error::source(err).is_some_and(|cause| cause.is::<std::io::Error>());
    is_full(err)
        || err.is_closed()
        || socket_failed
        || err.code().is_some_and(|code| {
            out_of_reach(code)
                || [
                    SqlState::LOCK_NOT_AVAILABLE,
                    SqlState::T_R_SERIALIZATION_FAILURE,
                    SqlState::T_R_DEADLOCK_DETECTED,
                ]
                .contains(code)
        })
}
