//! Values and rows as both engines give and take them: a 64-bit integer, a real, text or NULL.
//!
//! Invariant: what a Rust value becomes ([`From`]) reads back as the same Rust value
//! ([`FromValue`]): booleans as 0 or 1, unsigned integers only when they fit.

use super::{Column, SqlError};

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Value {
    /// What it is, in words (for errors).
    pub fn kind(&self) -> String {
        match self {
            Value::Null => "NULL".into(),
            Value::Int(v) => format!("the integer {v}"),
            Value::Real(v) => format!("the number {v}"),
            Value::Text(_) => "text".into(),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value::Int(v.into())
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v.into())
    }
}

impl From<u64> for Value {
    /// (Beyond `i64::MAX` — no count, time or id abxd stores comes near — it saturates.)
    fn from(v: u64) -> Value {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(v.into())
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Real(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Text(v.clone())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// A Rust value read from a column.
pub trait FromValue: Sized {
    /// What the column should hold, in words.
    const EXPECTED: &'static str;
    /// The value as a `Self`, or what was found instead, in words.
    fn from_value(value: &Value) -> Result<Self, String>;
}

/// What a value is, for an error: `Err` of [`FromValue::from_value`].
pub fn found<T>(value: &Value) -> Result<T, String> {
    Err(value.kind())
}

impl FromValue for i64 {
    const EXPECTED: &'static str = "an integer";
    fn from_value(value: &Value) -> Result<i64, String> {
        match value {
            Value::Int(v) => Ok(*v),
            other => found(other),
        }
    }
}

impl FromValue for i32 {
    const EXPECTED: &'static str = "a 32-bit integer";
    fn from_value(value: &Value) -> Result<i32, String> {
        i64::from_value(value)?.try_into().map_err(|_| value.kind())
    }
}

impl FromValue for u32 {
    const EXPECTED: &'static str = "an unsigned 32-bit integer";
    fn from_value(value: &Value) -> Result<u32, String> {
        i64::from_value(value)?.try_into().map_err(|_| value.kind())
    }
}

impl FromValue for u64 {
    const EXPECTED: &'static str = "an unsigned integer";
    fn from_value(value: &Value) -> Result<u64, String> {
        i64::from_value(value)?.try_into().map_err(|_| value.kind())
    }
}

impl FromValue for bool {
    const EXPECTED: &'static str = "0 or 1";
    fn from_value(value: &Value) -> Result<bool, String> {
        match value {
            Value::Int(0) => Ok(false),
            Value::Int(1) => Ok(true),
            other => found(other),
        }
    }
}

impl FromValue for f64 {
    const EXPECTED: &'static str = "a number";
    fn from_value(value: &Value) -> Result<f64, String> {
        match value {
            Value::Real(v) => Ok(*v),
            Value::Int(v) => Ok(*v as f64),
            other => found(other),
        }
    }
}

impl FromValue for String {
    const EXPECTED: &'static str = "text";
    fn from_value(value: &Value) -> Result<String, String> {
        match value {
            Value::Text(v) => Ok(v.clone()),
            other => found(other),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn from_value(value: &Value) -> Result<Option<T>, String> {
        match value {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// How an error names `column`: by name where it has one.
pub(crate) fn column_text(column: impl Column) -> String {
    match column.name() {
        "" => column.index().to_string(),
        name => name.to_string(),
    }
}

/// One row a statement returned: its columns' values in the statement's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub(super) Vec<Value>);

impl Row {
    /// Its values, in column order.
    pub fn into_values(self) -> Vec<Value> {
        self.0
    }

    /// Column `column` (its place from 0, or its name in an entity's column enum) as a `T`; a
    /// column of another type, or a missing one, is an error naming it.
    pub fn get<T: FromValue>(&self, column: impl Column) -> Result<T, SqlError> {
        let Some(value) = self.0.get(column.index()) else {
            return Err(SqlError::Type {
                column: column_text(column),
                expected: T::EXPECTED,
                found: format!("a row of {} columns", self.0.len()),
            });
        };
        T::from_value(value).map_err(|found| SqlError::Type {
            column: column_text(column),
            expected: T::EXPECTED,
            found,
        })
    }

    /// How many columns it has.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
