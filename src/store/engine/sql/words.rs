//! The domain's words (`domain::Word`) as the database holds them: TEXT, the word itself.
//!
//! Invariant: what is written is `as_str`, what is read is parsed by `FromStr`, so the SQL word
//! of every variant is its JSON and `Display` word (the test below writes and reads each through
//! a real SQLite connection); a word no variant has is an error naming the words that exist.

use super::{found, FromValue, Value};
use crate::domain::{
    CrawlOutcome, EndDetail, EndReason, ExportStatus, Kind, Limit, Queue, Refusal, ResultStatus,
    Status, Word, WorkStatus,
};

/// Stores each listed `Word` enum as TEXT, for both engines and for rusqlite's own reads.
macro_rules! stored_as_words {
    ($($name:ty),+ $(,)?) => {$(
        impl From<$name> for Value {
            fn from(value: $name) -> Value {
                Value::from(Word::as_str(value))
            }
        }

        impl FromValue for $name {
            const EXPECTED: &'static str = concat!("a word of ", stringify!($name));
            fn from_value(value: &Value) -> Result<Self, String> {
                match value {
                    Value::Text(text) => text.parse(),
                    other => found(other),
                }
            }
        }

        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::from(Word::as_str(*self)))
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                value
                    .as_str()?
                    .parse()
                    .map_err(|e: String| rusqlite::types::FromSqlError::Other(e.into()))
            }
        }
    )+};
}

stored_as_words!(
    Kind,
    Status,
    EndReason,
    Queue,
    WorkStatus,
    CrawlOutcome,
    ResultStatus,
    Refusal,
    Limit,
    ExportStatus
);

impl From<&EndDetail> for Value {
    fn from(detail: &EndDetail) -> Value {
        Value::Text(detail.to_string())
    }
}

impl FromValue for EndDetail {
    const EXPECTED: &'static str = "text";
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Text(text) => Ok(EndDetail::parse(text)),
            other => found(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each variant of `T` written through SQLite reads back as its own word, and as itself.
    fn sql_words_agree<T>(conn: &rusqlite::Connection)
    where
        T: Word + PartialEq + std::fmt::Debug + rusqlite::types::ToSql + rusqlite::types::FromSql,
        T: FromValue + Into<Value>,
    {
        for &variant in T::ALL {
            let (text, back): (String, T) = conn
                .query_row("SELECT ?1, ?1", [&variant], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap();
            assert_eq!(text, variant.to_string(), "{}: SQL and Display", T::NAME);
            assert_eq!(back, variant, "{}: read back", T::NAME);
            let value: Value = variant.into();
            assert_eq!(value, Value::Text(variant.as_str().into()), "{}", T::NAME);
            assert_eq!(T::from_value(&value), Ok(variant), "{}", T::NAME);
        }
        let unknown = T::from_value(&Value::Text("no such word".into())).unwrap_err();
        assert!(unknown.contains(T::ALL[0].as_str()), "{unknown}");
    }

    #[test]
    fn every_word_is_stored_as_its_display_and_json_word() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        sql_words_agree::<Kind>(&conn);
        sql_words_agree::<Status>(&conn);
        sql_words_agree::<EndReason>(&conn);
        sql_words_agree::<Queue>(&conn);
        sql_words_agree::<WorkStatus>(&conn);
        sql_words_agree::<CrawlOutcome>(&conn);
        sql_words_agree::<ResultStatus>(&conn);
        sql_words_agree::<Refusal>(&conn);
        sql_words_agree::<Limit>(&conn);
        sql_words_agree::<ExportStatus>(&conn);
    }
}
