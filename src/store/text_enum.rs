//! `text_enum!`: the store's string-valued enums (statuses, kinds, reasons), stored as TEXT and
//! shown as the same words in JSON and to people.
//!
//! Invariant: one word per variant, the same in SQL, JSON, `Display` and `FromStr`; a word the
//! database holds that no variant has is an error naming the words that exist.

/// Declares a string-valued enum stored as TEXT: its SQL/JSON names and conversions.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!(
                        "unknown {} {other:?} (one of {})",
                        stringify!($name).to_lowercase(),
                        [$($text),+].join(", ")
                    )),
                }
            }
        }

        /// For comparisons with the stored text (`status == "sealed"`).
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<$name> for $crate::store::sql::Value {
            fn from(value: $name) -> $crate::store::sql::Value {
                $crate::store::sql::Value::from(value.as_str())
            }
        }

        impl $crate::store::sql::FromValue for $name {
            const EXPECTED: &'static str = concat!("a word of ", stringify!($name));
            fn from_value(value: &$crate::store::sql::Value) -> Result<Self, String> {
                match value {
                    $crate::store::sql::Value::Text(text) => text.parse(),
                    other => $crate::store::sql::found(other),
                }
            }
        }

        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::from(self.as_str()))
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                value.as_str()?.parse().map_err(|e: String| rusqlite::types::FromSqlError::Other(e.into()))
            }
        }
    };
}

pub(crate) use text_enum;
