//! `words!`: the domain's string-valued enums (kinds, statuses, reasons), each variant one word —
//! the same in the database, in JSON, on screen and when parsed.
//!
//! Invariant: one word per variant, the same in `as_str`, `Display`, `FromStr` and serde's
//! `Serialize` and `Deserialize` (written from `as_str` and `FromStr`, never renamed by serde); a
//! word that no variant has is an error naming the words that exist. The store maps these words to SQL (`store::engine`), and
//! `domain::tests` walks every variant of every enum to prove the forms agree.

/// The common face of every enum declared with [`words!`]: what the store and the tests use to
/// treat them alike.
pub trait Word: Copy + std::fmt::Display + std::str::FromStr<Err = String> + 'static {
    /// Every variant, in declaration order.
    const ALL: &'static [Self];
    /// The enum's name, as errors and tests name it.
    const NAME: &'static str;
    /// The variant's one word.
    fn as_str(self) -> &'static str;
}

/// Declares a string-valued enum: its words and their conversions.
macro_rules! words {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl $crate::domain::Word for $name {
            const ALL: &'static [$name] = $name::ALL;
            const NAME: &'static str = stringify!($name);
            fn as_str(self) -> &'static str {
                $name::as_str(self)
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

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let word = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                word.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use words;
