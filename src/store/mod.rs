//! The store: the database — one SQLite file, or a PostgreSQL database that a fleet of hosts
//! shares — holding the process table (`processes`), the work queue (`work`) and what hosts share
//! (`fleet`), over one engine (`engine`). It persists the words of `domain`.
//!
//! [`Store`] is the handle: opening, transactions, the busy wait, the clocks and the fence. What
//! is kept is reached through one repository per aggregate, a view over that handle
//! (`store.processes()`, `store.crawls()`, `store.queue()`, `store.results()`,
//! `store.schedules()`, `store.exports()`, `store.machines()`, `store.file()`). The handle's
//! state (failed writes, batch depth, the breaker, the fence) lives in cells, so every repository
//! works through a shared reference; a store is used by one thread.
//!
//! Invariants: every SQLite connection runs with WAL, a busy wait (`engine::busy`) and
//! `foreign_keys=ON`; every write that touches more than one statement is one transaction taken
//! up front (`BEGIN IMMEDIATE` on SQLite, so a writer waits for the lock instead of failing
//! half-way with "database is locked"), or one savepoint of the transaction of a
//! [`Store::batch`], which begins at its first write and commits when the batch ends; the schema
//! is at [`migrations::LATEST`] once [`Store::open`] returns. Times are unix milliseconds.

mod engine;
mod error;
mod fleet;
mod processes;
mod work;

pub use engine::{migrations, sql};
pub use fleet::listen;

pub use crate::config::{Location, Server};
pub use crate::domain::{
    Claim, CrawlOutcome, EndDetail, EndReason, ExitOutcome, Kind, Lease, Queue, ResultStatus,
    Status, WorkStatus,
};
pub use engine::busy::{
    answer_soon, set_loop_deadline, set_loop_wake_fd, write_counts, Patience,
    PROBE_EVERY as BUSY_RETRY,
};
pub use error::StoreError;
pub use fleet::clock::{boot_clock_ms, now_ms};
pub use fleet::copy::{copy, Copied};
pub use fleet::machines::Machine;
pub use processes::{BrowsersAlive, LiveRow, ProcessFilter};
pub use processes::{Compact, Pruned};
pub use processes::{EndedRow, QueueDepth, StartedHook};
pub use processes::{NewProcess, ProcessRow};
pub use work::{Added, Binary, Export, RefusedUrls, RetryScope};
pub use work::{Crawl, HookResult, Snapshot};
pub use work::{Fired, NewSchedule, Schedule};

use engine::busy::Breaker;
use engine::file::{beside, check_files, file_id, not_a_link};
use rusqlite::{Connection, OpenFlags};
use sql::{args, Db};
use std::cell::Cell;
use std::path::{Path, PathBuf};

pub struct Store {
    db: Db,
    path: PathBuf,
    /// Write transactions that failed so far (a full disk, an I/O error): what tells a
    /// supervisor that rows may have been left claiming processes that are gone.
    failed_writes: Cell<u64>,
    /// How many [`Store::batch`] calls are under way (they nest).
    batch_depth: Cell<u32>,
    /// The marker namespace, read once (it cannot change while the store is open).
    namespace: std::cell::OnceCell<String>,
    /// The device and inode of the file opened at `path`.
    file: Option<(u64, u64)>,
    /// How long a write waits for another writer's lock.
    patience: Cell<Patience>,
    /// What writes found of other writers' locks.
    breaker: Cell<Breaker>,
    /// The clock `retry_at` is on (see `fleet::clock`).
    queue_clock: std::cell::Cell<fleet::clock::QueueClock>,
    /// The claim this store's writes of work are fenced to (a worker's; see `work::fence`).
    fence: Cell<Option<Claim>>,
}

/// What a store found at schema version `found` is to a caller that neither creates nor
/// migrates one (workers, `abxctl`): usable at the latest version, else too new or too old.
fn at_latest(path: &Path, found: u32) -> Result<(), StoreError> {
    let path = path.to_path_buf();
    let latest = migrations::LATEST;
    match found.cmp(&latest) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Greater => Err(StoreError::TooNew {
            path,
            found,
            latest,
        }),
        std::cmp::Ordering::Less => Err(StoreError::TooOld {
            path,
            found,
            latest,
        }),
    }
}

/// A wall-clock time in ms as people read it (UTC, to the second).
pub fn printable_time(ms: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(at).to_string()
}

/// `db` brought to the latest schema (`target`: the server, as shown).
pub(super) fn migrated_postgres(db: Db, target: &str) -> Result<Store, StoreError> {
    let connect_err = |cause| StoreError::Connect {
        target: target.to_string(),
        cause,
    };
    if let Err(too_new) = migrations::postgres::migrate(&db).map_err(connect_err)? {
        return Err(StoreError::TooNew {
            path: PathBuf::from(target),
            found: too_new.found,
            latest: migrations::LATEST,
        });
    }
    over_server(db, target)
}

fn open_existing_with(path: &Path, mode: OpenFlags) -> Result<Store, StoreError> {
    if not_a_link(path)?.is_none() {
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
    at_latest(path, found)?;
    Ok(over(Db::Sqlite(conn), path, file_id(path)))
}

/// `file`: the device and inode of the SQLite file opened at `path` (none for a server).
fn over(db: Db, path: &Path, file: Option<(u64, u64)>) -> Store {
    Store {
        db,
        path: path.to_path_buf(),
        failed_writes: Cell::new(0),
        batch_depth: Cell::new(0),
        namespace: std::cell::OnceCell::new(),
        file,
        patience: Cell::new(Patience::Patient),
        breaker: Cell::new(Breaker::default()),
        queue_clock: Default::default(),
        fence: Cell::new(None),
    }
}

/// A store over a server's connection `db` (`target`: the server, as shown), on the
/// server's queue clock.
pub(super) fn over_server(db: Db, target: &str) -> Result<Store, StoreError> {
    let queue_clock = fleet::clock::QueueClock::of(&db).map_err(|cause| StoreError::Connect {
        target: target.to_string(),
        cause,
    })?;
    let store = over(db, Path::new(target), None);
    store.queue_clock.set(queue_clock);
    Ok(store)
}

/// What `Store::instance_id` reads: the id that makes this database's markers unique.
const INSTANCE_ID_SQL: &str = "SELECT value FROM meta WHERE key = 'instance_id'";

/// Declares a repository: a view of one aggregate's rows over the store's database handle,
/// made by the store's accessor of the same concern (`store.crawls()`, `store.processes()`).
macro_rules! repository {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name<'s> {
            store: &'s Store,
        }
    };
}

repository!(
    /// The process table (`processes`): rows of processes, what is noted of them, what watchers
    /// read of them, and pruning.
    ProcessTable
);
repository!(
    /// Crawls and their snapshots (`work`): adding them within their rules, the operator's
    /// actions on them, and what their workers note.
    Crawls
);
repository!(
    /// The queue of crawls and snapshots (`work::queue`): claims, leases, putting back, sealing.
    WorkQueue
);
repository!(
    /// Hook results and the binaries hooks reported (`work::results`, `work::binaries`).
    Results
);
repository!(
    /// Schedules and their occurrences (`work::schedules`).
    Schedules
);
repository!(
    /// Exports of sealed crawls into ArchiveBox collections (`work::exports`).
    Exports
);
repository!(
    /// The hosts of a fleet, their heartbeats and their counts (`fleet::machines`).
    Machines
);
repository!(
    /// The SQLite file under the store: whether it is still there, a copy of it, its
    /// write-ahead log.
    DatabaseFile
);

/// The repositories, one per aggregate (and one for the file), each over this store's handle.
impl Store {
    pub fn processes(&self) -> ProcessTable<'_> {
        ProcessTable { store: self }
    }

    pub fn crawls(&self) -> Crawls<'_> {
        Crawls { store: self }
    }

    pub fn queue(&self) -> WorkQueue<'_> {
        WorkQueue { store: self }
    }

    pub fn results(&self) -> Results<'_> {
        Results { store: self }
    }

    pub fn schedules(&self) -> Schedules<'_> {
        Schedules { store: self }
    }

    pub fn exports(&self) -> Exports<'_> {
        Exports { store: self }
    }

    pub fn machines(&self) -> Machines<'_> {
        Machines { store: self }
    }

    pub fn file(&self) -> DatabaseFile<'_> {
        DatabaseFile { store: self }
    }
}

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
        check_files(path)?;
        let mut conn = Connection::open(path).map_err(open_err)?;
        configure(&conn).map_err(open_err)?;
        // A new file gives pruned space back as it goes (an existing one is left as it is).
        let pages: i64 = conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .map_err(open_err)?;
        if pages == 0 {
            conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
                .map_err(open_err)?;
        }
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        if let Err(too_new) = migrations::migrate_to(&mut conn, version).map_err(open_err)? {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: too_new.found,
                latest: migrations::LATEST,
            });
        }
        Ok(over(Db::Sqlite(conn), path, file_id(path)))
    }

    /// Opens an existing database for reading and writing, never creating one (only the
    /// daemon's first start does): what workers and `abxctl add` use, so a database deleted
    /// under them is an error, not a new empty file.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        open_existing_with(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
    }

    /// Opens an existing database read-only, without migrating or creating anything: what
    /// `abxctl ps` uses, so it works (and changes nothing) while the daemon is down.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let store = open_existing_with(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        if let Some(conn) = store.sqlite() {
            let _ = conn.pragma_update(None, "cache_size", READER_CACHE_PAGES);
        }
        Ok(store)
    }

    /// Now on the queue clock: what `retry_at` is compared with (see `fleet::clock`).
    pub fn queue_now(&self) -> i64 {
        let clock = self.queue_clock.get();
        if clock.is_due_again(self.db().session(), boot_clock_ms()) {
            // (Until the server answers, the last reading is followed.)
            if let Ok(fresh) = fleet::clock::QueueClock::of(self.db()) {
                self.queue_clock.set(fresh);
                return fresh.now();
            }
        }
        clock.now()
    }

    /// Now in unix ms on the clock every host sharing the store reads: the server's on a
    /// server (its queue clock is its wall clock), this host's on a file.
    pub fn shared_now(&self) -> i64 {
        if self.is_shared() {
            self.queue_now()
        } else {
            now_ms()
        }
    }

    /// Whether several hosts may share this store (a server), so that what one host decides of
    /// work must hold against the others.
    pub fn is_shared(&self) -> bool {
        self.sqlite().is_none()
    }

    /// Sets how long writes wait for another writer's lock (see `busy`): an event loop's store
    /// must not wait long.
    pub fn set_patience(&self, patience: Patience) -> Result<(), StoreError> {
        if let Some(conn) = self.sqlite() {
            patience.apply(conn)?;
        }
        self.patience.set(patience);
        Ok(())
    }

    /// Since when (wall-clock ms) this store's writes have found the database locked by another
    /// process, if the last one did.
    pub fn busy_since(&self) -> Option<i64> {
        self.breaker.get().busy_since()
    }

    /// Finds out whether another process holds the write lock now (taking and dropping it at
    /// once if not): what `abxctl status` says, also of a daemon that had nothing to write.
    pub fn probe_busy(&self) -> Option<i64> {
        // (A probe that finds the lock taken is no write that failed: nothing was left unwritten.)
        let failed_writes = self.failed_writes.get();
        if let Some(conn) = self.sqlite() {
            let _ = conn.busy_timeout(std::time::Duration::ZERO);
        }
        let _ = self.write(|_| Ok(()));
        if let Some(conn) = self.sqlite() {
            let _ = self.patience.get().apply(conn);
        }
        self.failed_writes.set(failed_writes);
        self.busy_since()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The random id of this database, carried by every process it starts as `ABXD_INSTANCE`,
    /// so that process markers of two abxd on one machine never match each other.
    pub fn instance_id(&self) -> Result<String, StoreError> {
        Ok(self.db.query_one(INSTANCE_ID_SQL, &[])?.get(0)?)
    }

    /// The marker namespace of this database in this boot (see `marker::namespace`).
    pub fn marker_namespace(&self) -> Result<String, StoreError> {
        if let Some(namespace) = self.namespace.get() {
            return Ok(namespace.clone());
        }
        let namespace = crate::marker::namespace(&self.instance_id()?);
        Ok(self.namespace.get_or_init(|| namespace).clone())
    }

    pub fn schema_version(&self) -> Result<u32, StoreError> {
        match self.sqlite() {
            Some(conn) => Ok(migrations::user_version(conn)?),
            None => Ok(migrations::postgres::version(&self.db)?),
        }
    }

    /// The connection every statement of the store runs on.
    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    /// The SQLite connection, for what only SQLite has (its pragmas, its lock's busy handler).
    pub(super) fn sqlite(&self) -> Option<&Connection> {
        match &self.db {
            Db::Sqlite(conn) => Some(conn),
            Db::Postgres(_) => None,
        }
    }
}

impl DatabaseFile<'_> {
    /// What became of the file this store opened, if it is no longer at its path: `None` while
    /// the path still names that file (same device and inode).
    pub fn gone(&self) -> Option<String> {
        let opened = self.store.file?;
        match std::fs::metadata(&self.store.path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Some(format!(
                "the database file {} was deleted while abxd had it open",
                self.store.path.display()
            )),
            Err(_) => None,
            Ok(_) if file_id(&self.store.path) == Some(opened) => None,
            Ok(_) => Some(format!(
                "the database file {} was replaced by another file while abxd had it open",
                self.store.path.display()
            )),
        }
    }

    /// Writes a consistent copy of the open database to `to` (a new file): everything recorded,
    /// also when the file at the store's path was deleted meanwhile.
    pub fn save_copy(&self, to: &Path) -> Result<(), StoreError> {
        let partial = to.with_extension("partial");
        let _ = std::fs::remove_file(&partial);
        self.store.db.execute(
            "VACUUM INTO ?1",
            &args![partial.to_string_lossy().into_owned()],
        )?;
        std::fs::rename(&partial, to).map_err(|err| {
            StoreError::Sql(rusqlite::Error::ToSqlConversionFailure(Box::new(err)))
        })?;
        Ok(())
    }

    /// The size of the write-ahead log now (0 if there is none).
    pub fn wal_bytes(&self) -> u64 {
        if self.store.file.is_none() {
            return 0;
        }
        std::fs::metadata(beside(&self.store.path, "-wal")).map_or(0, |m| m.len())
    }

    /// Copies the write-ahead log into the database and truncates it to nothing, if no reader
    /// or writer is in the way; returns whether it did. (A long reader keeps SQLite from
    /// resetting the log, which then grows; `journal_size_limit` only trims it when it resets.)
    pub fn truncate_wal(&self) -> Result<bool, StoreError> {
        let Some(conn) = self.store.sqlite() else {
            return Ok(true);
        };
        let blocked: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        Ok(blocked == 0)
    }
}

/// How large the write-ahead log may stay once reset; beyond it an idle daemon truncates it.
pub const WAL_KEEP_BYTES: u64 = 8 << 20;

/// How many pages a read-only connection (`abxctl ps`) keeps: the B-trees' upper pages, which
/// every lookup passes, and little more. Each other page it reads with pread(2) into a slot of
/// this cache. (Mapping the file instead cost more: the kernel maps the pages around each one
/// touched, so `ps` on 100 000 rows with 1 000 live mapped the whole 20 MB file and unmapped it
/// at the end, 8.2 ms against 6.7; and SQLite's default cache, 2 MB, costs a page fault for each
/// of its pages as it fills.)
const READER_CACHE_PAGES: i64 = 16;

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    Patience::Patient.apply(conn)?;
    conn.pragma_update(None, "journal_size_limit", WAL_KEEP_BYTES as i64)?;
    // Every statement the hot paths run stays parsed (they are prepared with `prepare_cached`).
    conn.set_prepared_statement_cache_capacity(64);
    // (A setting of each connection, so of every one — the workers' too, not only the daemon's.)
    // In WAL mode a commit then waits for no fsync, only a checkpoint does: a process killed
    // loses nothing committed (the log is in the kernel's page cache); a power cut may undo the
    // last commits, never corrupt the file, and recovery redoes that work on the next boot.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn synchronous(store: &Store) -> i64 {
        let conn = store.sqlite().unwrap();
        conn.query_row("PRAGMA synchronous", [], |row| row.get(0))
            .unwrap()
    }

    /// The daemon's connection and a worker's commit alike: without an fsync each (`NORMAL`, 1;
    /// SQLite's default, `FULL`, is 2).
    #[test]
    fn every_connection_commits_without_an_fsync_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abxd.sqlite3");
        let daemon = Store::open(&path).unwrap();
        let worker = Store::open_existing(&path).unwrap();
        assert_eq!(synchronous(&daemon), 1);
        assert_eq!(synchronous(&worker), 1);
    }
}
