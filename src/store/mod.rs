//! The store: one SQLite file holding the process table and the work queue.
//!
//! Invariants: every connection runs with WAL, `busy_timeout` and `foreign_keys=ON`; every write
//! that touches more than one statement is one `BEGIN IMMEDIATE` transaction (so a writer waits
//! for the lock up front instead of failing half-way with "database is locked"), or one savepoint
//! of the transaction of a [`Store::batch`], which begins at its first write and commits when the
//! batch ends; the schema is at [`migrations::LATEST`] once [`Store::open`] returns. Times are
//! unix milliseconds.

mod clock;
pub mod migrations;
mod process_notes;
mod process_queries;
mod processes;
mod queue;
mod results;
mod work;

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

pub use clock::{now_ms, queue_clock_ms};
pub use process_queries::ProcessFilter;
pub use processes::{EndReason, ExitOutcome, Kind, NewProcess, ProcessRow, Status};
pub use work::{Crawl, CrawlOutcome, HookResult, Lease, Queue, ResultStatus, Snapshot, WorkStatus};

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a statement waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

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
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Write transactions that failed so far (a full disk, an I/O error): what tells a
    /// supervisor that rows may have been left claiming processes that are gone.
    failed_writes: u64,
    /// How many [`Store::batch`] calls are under way (they nest).
    batch_depth: u32,
    /// The marker namespace, read once (it cannot change while the store is open).
    namespace: std::cell::OnceCell<String>,
    /// The device and inode of the file opened at `path`.
    file: Option<(u64, u64)>,
}

/// The device and inode of the file at `path`.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// What `Store::instance_id` reads: the id that makes this database's markers unique.
const INSTANCE_ID_SQL: &str = "SELECT value FROM meta WHERE key = 'instance_id'";

impl Store {
    /// Opens (creating if needed) the database for reading and writing and migrates it to the
    /// latest schema.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_at_version(path, migrations::LATEST)
    }

    /// Opens the database and migrates it to `version` only. For migration tests, which need a
    /// database as every earlier release left it.
    pub fn open_at_version(path: &Path, version: u32) -> Result<Store, StoreError> {
        let open_err = |cause| StoreError::Open {
            path: path.to_path_buf(),
            cause,
        };
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(StoreError::Symlink {
                path: path.to_path_buf(),
            });
        }
        let mut conn = Connection::open(path).map_err(open_err)?;
        configure(&conn).map_err(open_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        if let Err(too_new) = migrations::migrate_to(&mut conn, version).map_err(open_err)? {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: too_new.found,
                latest: migrations::LATEST,
            });
        }
        Ok(Store::over(conn, path))
    }

    /// Opens an existing database for reading and writing, never creating one (only the
    /// daemon's first start does): what workers and `abxctl add` use, so a database deleted
    /// under them is an error, not a new empty file.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        Store::open_existing_with(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
    }

    /// Opens an existing database read-only, without migrating or creating anything: what
    /// `abxctl ps` uses, so it works (and changes nothing) while the daemon is down.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        Store::open_existing_with(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
    }

    fn open_existing_with(path: &Path, mode: OpenFlags) -> Result<Store, StoreError> {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(StoreError::Symlink {
                path: path.to_path_buf(),
            });
        }
        if !path.exists() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        let open_err = |cause| StoreError::Open {
            path: path.to_path_buf(),
            cause,
        };
        let flags = mode | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
        configure(&conn).map_err(open_err)?;
        let found = migrations::user_version(&conn).map_err(open_err)?;
        if found > migrations::LATEST {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found,
                latest: migrations::LATEST,
            });
        }
        if found < migrations::LATEST {
            return Err(StoreError::TooOld {
                path: path.to_path_buf(),
                found,
                latest: migrations::LATEST,
            });
        }
        Ok(Store::over(conn, path))
    }

    fn over(conn: Connection, path: &Path) -> Store {
        Store {
            conn,
            path: path.to_path_buf(),
            failed_writes: 0,
            batch_depth: 0,
            namespace: std::cell::OnceCell::new(),
            file: file_id(path),
        }
    }

    /// What became of the file this store opened, if it is no longer at its path: `None` while
    /// the path still names that file (same device and inode).
    pub fn file_gone(&self) -> Option<String> {
        let opened = self.file?;
        match std::fs::metadata(&self.path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Some(format!(
                "the database file {} was deleted while abxd had it open",
                self.path.display()
            )),
            Err(_) => None,
            Ok(_) if file_id(&self.path) == Some(opened) => None,
            Ok(_) => Some(format!(
                "the database file {} was replaced by another file while abxd had it open",
                self.path.display()
            )),
        }
    }

    /// Writes a consistent copy of the open database to `to` (a new file): everything recorded,
    /// also when the file at the store's path was deleted meanwhile.
    pub fn save_copy(&self, to: &Path) -> Result<(), StoreError> {
        let partial = to.with_extension("partial");
        let _ = std::fs::remove_file(&partial);
        self.conn
            .execute("VACUUM INTO ?1", [partial.to_string_lossy()])?;
        std::fs::rename(&partial, to).map_err(|err| {
            StoreError::Sql(rusqlite::Error::ToSqlConversionFailure(Box::new(err)))
        })?;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The random id of this database, carried by every process it starts as `ABXD_INSTANCE`,
    /// so that process markers of two abxd on one machine never match each other.
    pub fn instance_id(&self) -> Result<String, StoreError> {
        Ok(self
            .conn
            .prepare_cached(INSTANCE_ID_SQL)?
            .query_row([], |r| r.get(0))?)
    }

    /// The marker namespace of this database in this boot (see `proctree::namespace`).
    pub fn marker_namespace(&self) -> Result<String, StoreError> {
        if let Some(namespace) = self.namespace.get() {
            return Ok(namespace.clone());
        }
        let namespace = crate::marker::namespace(&self.instance_id()?);
        Ok(self.namespace.get_or_init(|| namespace).clone())
    }

    pub fn schema_version(&self) -> Result<u32, StoreError> {
        Ok(migrations::user_version(&self.conn)?)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction and commits it; inside a batch, in one
    /// savepoint of the batch's transaction. Either way it is all or nothing.
    pub(crate) fn write<T>(
        &mut self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let written = if self.batch_depth > 0 {
            self.write_in_batch(f)
        } else {
            if !self.conn.is_autocommit() {
                // Left open by a write that never returned (a panic): nothing of it is kept.
                let _ = self.run("ROLLBACK");
            }
            self.run("BEGIN IMMEDIATE")
                .map_err(StoreError::from)
                .and_then(|()| {
                    let committed = f(&self.conn).and_then(|value| {
                        self.run("COMMIT")?;
                        Ok(value)
                    });
                    if committed.is_err() {
                        // (Fails harmlessly if SQLite rolled back already, e.g. on a full disk.)
                        let _ = self.run("ROLLBACK");
                    }
                    committed
                })
        };
        if written.is_err() {
            self.failed_writes += 1;
        }
        written
    }

    fn write_in_batch<T>(
        &mut self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // (Also when SQLite rolled the batch's transaction back itself, e.g. on a full disk.)
        if self.conn.is_autocommit() {
            self.run("BEGIN IMMEDIATE")?;
        }
        self.run("SAVEPOINT write")?;
        match f(&self.conn) {
            Ok(value) => {
                self.run("RELEASE write")?;
                Ok(value)
            }
            Err(err) => {
                if !self.conn.is_autocommit() {
                    let _ = self.run("ROLLBACK TO write");
                    let _ = self.run("RELEASE write");
                }
                Err(err)
            }
        }
    }

    /// Runs `f` with every write it makes in one transaction, committed when `f` returns: what
    /// a supervisor does in one turn of its loop costs one commit, not one per row. Batches
    /// nest (the outermost commits). The write lock is taken at the first write, not before.
    ///
    /// If the commit fails (a full disk), the batch's writes are lost although each returned
    /// Ok; the failure is counted in [`Store::failed_writes`], which is what makes supervisors
    /// go over their rows again (see `unrecorded`).
    pub fn batch<T>(&mut self, f: impl FnOnce(&mut Store) -> T) -> T {
        self.batch_depth += 1;
        let value = f(self);
        self.batch_depth -= 1;
        if self.batch_depth == 0 && !self.conn.is_autocommit() {
            if let Err(err) = self.run("COMMIT") {
                log::error!("cannot commit a batch of writes: {err}");
                let _ = self.run("ROLLBACK");
                self.failed_writes += 1;
            }
        }
        value
    }

    /// Whether a [`Store::batch`] is under way (its writes are not committed yet).
    pub fn in_batch(&self) -> bool {
        self.batch_depth > 0
    }

    /// How many write transactions have failed since the store was opened.
    pub fn failed_writes(&self) -> u64 {
        self.failed_writes
    }

    /// Runs one statement without parameters, kept parsed (transaction control runs on every
    /// write).
    fn run(&self, sql: &str) -> rusqlite::Result<()> {
        self.conn.prepare_cached(sql)?.execute([]).map(drop)
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Every statement the hot paths run stays parsed (they are prepared with `prepare_cached`).
    conn.set_prepared_statement_cache_capacity(64);
    conn.pragma_update(None, "foreign_keys", "ON")
}

#[cfg(test)]
/// A hook row to insert, for unit tests elsewhere in the crate.
pub(crate) fn test_hook() -> NewProcess {
    NewProcess {
        parent_id: None,
        kind: Kind::Hook,
        crawl_id: None,
        snapshot_id: None,
        result_id: None,
        argv: vec!["hook".into()],
        cwd: "/".into(),
        timeout_ms: None,
    }
}
