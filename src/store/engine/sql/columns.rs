//! Columns by name: an entity's SELECT list and the place of each of its columns in a row are
//! declared once, together ([`columns!`]), so a row is mapped by name — at no cost per row (a
//! lookup of names in every row cost `abxctl ps` a fifth of its time).
//!
//! Invariant: a column enum's variants are in the order of its `LIST`; a variant's place in the
//! enum is its column's place in a row selected with `LIST`.

/// Where a column is in a row: its index, and the name an error says.
pub trait Column: Copy {
    fn index(self) -> usize;
    fn name(self) -> &'static str;
}

/// A place in a row given as a number, where a statement's columns are not an entity's.
impl Column for usize {
    fn index(self) -> usize {
        self
    }

    fn name(self) -> &'static str {
        ""
    }
}

/// Declares an enum of an entity's columns, in order, with `LIST` (its SELECT list: each name,
/// or the SQL given after `=` for a column that is an expression) and [`Column`].
macro_rules! columns {
    (
        $(#[$doc:meta])*
        $vis:vis enum $name:ident {
            $first:ident $(= $first_sql:literal)? $(, $col:ident $(= $sql:literal)?)* $(,)?
        }
    ) => {
        $(#[$doc])*
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $first,
            $($col),*
        }

        impl $name {
            /// Every column, in order.
            #[allow(dead_code)]
            pub const ALL: &'static [$name] = &[$name::$first $(, $name::$col)*];

            /// The SELECT list: every column, in this enum's order.
            pub const LIST: &'static str = concat!(
                $crate::store::sql::column_sql!($first $(= $first_sql)?)
                $(, ", ", $crate::store::sql::column_sql!($col $(= $sql)?))*
            );
        }

        impl $crate::store::sql::Column for $name {
            fn index(self) -> usize {
                self as usize
            }

            fn name(self) -> &'static str {
                match self {
                    $name::$first => stringify!($first),
                    $($name::$col => stringify!($col)),*
                }
            }
        }
    };
}

/// What one column of [`columns!`] selects: its SQL if given, else its name.
macro_rules! column_sql {
    ($col:ident = $sql:literal) => {
        $sql
    };
    ($col:ident) => {
        stringify!($col)
    };
}

pub(crate) use {column_sql, columns};

#[cfg(test)]
mod tests {
    use super::Column;

    columns! {
        enum Sample { id, name, has_input = "CASE WHEN input IS NULL THEN 0 ELSE 1 END" }
    }

    #[test]
    fn a_columns_place_is_its_place_in_the_list() {
        assert_eq!(
            Sample::LIST,
            "id, name, CASE WHEN input IS NULL THEN 0 ELSE 1 END"
        );
        assert_eq!(Sample::name.index(), 1);
        assert_eq!(Sample::has_input.index(), 2);
        assert_eq!(Sample::has_input.name(), "has_input");
    }
}
