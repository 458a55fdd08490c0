//! [`Db`](super::Db) on PostgreSQL, through the synchronous `postgres` client: statements
//! rewritten to PostgreSQL's placeholders and prepared on the server once, values bound as the
//! type the server expects for each placeholder and read back by their column's type.

use super::{Row, SqlError, Value};
use postgres::types::{IsNull, ToSql, Type};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

pub struct Connection {
    client: RefCell<postgres::Client>,
    statements: RefCell<HashMap<String, postgres::Statement>>,
    /// A transaction is open (set by `BEGIN`, cleared by `COMMIT` and `ROLLBACK`).
    in_transaction: Cell<bool>,
}

impl Connection {
    pub fn connect(url: &str) -> Result<Connection, SqlError> {
        let client = postgres::Client::connect(url, postgres::NoTls)?;
        Ok(Connection {
            client: RefCell::new(client),
            statements: RefCell::new(HashMap::new()),
            in_transaction: Cell::new(false),
        })
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
        if let Some(control) = transaction_control(sql) {
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
        let statement = self.prepared(sql)?;
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
        let rows = self.client.borrow_mut().query(&statement, &params)?;
        rows.iter().map(row_of).collect()
    }

    pub fn execute_batch(&self, sql: &str) -> Result<(), SqlError> {
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
                column: i,
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

/// `url` (libpq's URL or key-value form) without its password: what may be printed or logged.
pub fn redacted(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let authority = match authority.rsplit_once('@') {
            Some((user, host)) => {
                let user = user.split_once(':').map_or(user, |(name, _)| name);
                format!("{user}@{host}")
            }
            None => authority.to_string(),
        };
        let tail = tail
            .split('&')
            .filter(|part| !part.contains("password="))
            .collect::<Vec<_>>()
            .join("&");
        return format!("{scheme}://{authority}{tail}");
    }
    url.split_ascii_whitespace()
        .filter(|pair| !pair.starts_with("password="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A PostgreSQL error as people read it: the server's message and detail, or the client's.
pub(super) fn describe(err: &postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({detail})", db.message()),
            None => db.message().to_string(),
        },
        None => err.to_string(),
    }
}

/// Whether the server refused for a lock another session holds (a lock timeout, a failed
/// `NOWAIT`, a serialization failure): something to try again.
pub(super) fn is_busy(err: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    err.code().is_some_and(|code| {
        [
            SqlState::LOCK_NOT_AVAILABLE,
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
        ]
        .contains(code)
    })
}
