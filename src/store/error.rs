//! What the store could not do, said so that an operator knows what to do about it.
//!
//! Invariant: no message carries a server's password, nor Rust's debug text.

use super::{printable_time, sql, Claim};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open database {path}: {cause}")]
    Open {
        path: PathBuf,
        cause: rusqlite::Error,
    },
    #[error(
        "no database at {path}: abxd has not run with this config yet \
         (start the daemon once, or check --config)"
    )]
    Missing { path: PathBuf },
    #[error(
        "database {path} has schema version {found}, newer than this abxd understands \
         ({latest}); it was written by a newer abxd: upgrade abxd, or set paths.database \
         to another file. The file was not changed."
    )]
    TooNew {
        path: PathBuf,
        found: u32,
        latest: u32,
    },
    #[error(
        "database {path} has schema version {found}; this abxd reads version {latest}: start \
         the daemon once (it migrates the file), then try again"
    )]
    TooOld {
        path: PathBuf,
        found: u32,
        latest: u32,
    },
    #[error(
        "database {path} is a symbolic link, which abxd does not follow: put the database file \
         itself there, or set paths.database to where it is"
    )]
    Symlink { path: PathBuf },
    #[error(
        "database {path} is damaged: {what}. abxd wrote nothing to it. To recover, with abxd \
         stopped: `abxd store check` lists what is wrong; `abxd store recover --to NEW` copies \
         every row that can still be read into a new database NEW, leaving this file as it is; \
         then put NEW in its place (or set paths.database to it) and start abxd, whose \
         recovery finds what was running"
    )]
    Damaged { path: PathBuf, what: String },
    #[error(
        "{target} is in use by another abxd daemon of machine {machine}: one daemon per machine \
         and database (stop the other, or give this one another [store] machine_id)"
    )]
    InUse { target: String, machine: String },
    #[error("cannot connect to PostgreSQL at {target}: {cause}")]
    Connect {
        target: String,
        cause: sql::SqlError,
    },
    #[error("database {path} {problem}")]
    NotOwn { path: PathBuf, problem: String },
    #[error(
        "the database is busy: another process has held its write lock since {}",
        printable_time(*since_ms)
    )]
    Busy { since_ms: i64 },
    #[error(
        "the disk under the database is full: nothing could be written since {}; the write is \
         tried again once space is freed",
        printable_time(*since_ms)
    )]
    Full { since_ms: i64 },
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("database error: {0}")]
    Db(#[from] sql::SqlError),
    #[error("{0}")]
    Copy(String),
    #[error(
        "{claim} changed hands since it was claimed{}: what was written for it is refused",
        .now.map(|epoch| format!(" (it is at epoch {epoch} now)")).unwrap_or_default()
    )]
    Fenced { claim: Claim, now: Option<i64> },
}

impl StoreError {
    /// Whether the write was refused because the claim it was made for no longer holds (see
    /// `fence`): the worker lost its work, not its database.
    pub fn is_fenced(&self) -> bool {
        matches!(self, StoreError::Fenced { .. })
    }
}
