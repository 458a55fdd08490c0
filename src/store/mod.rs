//! The store: the database — one SQLite file, or a PostgreSQL database that a fleet of hosts
//! shares — holding the process table (`processes`), the work queue (`work`) and what hosts share
//! (`fleet`), over one engine (`engine`). It persists the words of `domain`.
//!
//! [`Store`] is the handle: opening, transactions, the busy wait, the clocks and the fence. What
//! is kept is reached through one repository per aggregate, a view over that handle
//! (`store.processes()` — and what watchers read of it, `store.processes().watched()` —,
//! `store.crawls()`, `store.queue()`, `store.results()`, `store.schedules()`, `store.exports()`,
//! `store.machines()`, `store.file()`, and `store.outbox()` for the writes an event loop could
//! not make yet). The handle's state (failed writes, batch depth, the back-off, the outbox, the
//! fence) lives in cells, so every repository works through a shared reference; a store is used
//! by one thread.
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
    Claim, CrawlOutcome, EndDetail, EndReason, ExitOutcome, Kind, Lease, Pruned, Queue,
    ResultStatus, RetryScope, Status, WorkStatus,
};
pub use engine::busy::{write_counts, OrLater, Patience, PATIENT};
pub use engine::health::check_file;
pub use engine::outbox::RETRY_AFTER_FAILURE;
pub use engine::recover::{recover, Recovered, TableRead};
pub use error::StoreError;
pub use fleet::clock::{boot_clock_ms, now_ms};
pub use fleet::copy::{copy, Copied};
pub use fleet::machines::Machine;
pub use processes::Compact;
pub use processes::{BrowsersAlive, LiveRow, ProcessFilter};
pub use processes::{EndedRow, Moment, QueueDepth, StartedHook};
pub use processes::{NewProcess, ProcessRow};
pub use work::{Added, Binary, Budget, Export, HostState, RefusedUrls, SnapshotClaim};
pub use work::{Crawl, HookResult, Snapshot, SnapshotPage};
pub use work::{Fired, NewSchedule, Schedule};
pub use work::{HeldCrawl, RunningHook, ServedSnapshot};

use engine::busy::Backoff;
use rusqlite::Connection;
use sql::Db;
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
    backoff: Cell<Backoff>,
    /// Writes kept while the database was busy (`outbox`).
    kept: std::cell::RefCell<engine::outbox::Queue>,
    /// The clock `retry_at` is on (see `fleet::clock`).
    queue_clock: std::cell::Cell<fleet::clock::QueueClock>,
    /// The claim this store's writes of work are fenced to (a worker's; see `work::fence`).
    fence: Cell<Option<Claim>>,
    /// How its transactions commit: durably or not (`engine::durable`).
    commits: engine::durable::Commits,
}

/// A wall-clock time in ms as people read it (UTC, to the second).
pub fn printable_time(ms: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(at).to_string()
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
    /// What the web view and `/metrics` read of the processes and the queues
    /// (`processes::watched`, reached by `store.processes().watched()`): the rows worth
    /// showing, kept counts, what ended and started.
    Watched
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
    /// Politeness per host key (`work::hosts`, reached by `store.queue().hosts()`): claims that
    /// respect it, back-offs, what `abxctl hosts` shows.
    Hosts
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
    /// Crawls taken from an ArchiveBox collection's queue, and what of them is in ArchiveBox
    /// (`work::served`, reached by `store.crawls().served()`).
    Served
);
repository!(
    /// The hosts of a fleet, their heartbeats and their counts (`fleet::machines`).
    Machines
);
repository!(
    /// The writes an event loop could not make yet because another process held the lock
    /// (`engine::outbox`).
    Outbox
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

    pub fn outbox(&self) -> Outbox<'_> {
        Outbox { store: self }
    }
}

impl Store {
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
        self.outbox().busy_since()
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

/// How large the write-ahead log may stay once reset; beyond it an idle daemon truncates it.
pub const WAL_KEEP_BYTES: u64 = 8 << 20;

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

    /// A write abxd answers for commits under `FULL`, alone or joining a batch, and leaves the
    /// connection as cheap as before (`engine::durable`).
    #[test]
    fn a_durable_write_commits_and_leaves_the_connection_cheap() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
        let spec = crate::domain::CrawlSpec::of_urls(vec!["http://a.test/".into()], 0);
        let alone = store.crawls().add(&spec, None).unwrap();
        assert_eq!(synchronous(&store), 1);
        let joined = store.batch(|store| {
            store.processes().insert(&test_hook()).unwrap();
            store.crawls().add(&spec, None).unwrap()
        });
        assert_eq!(synchronous(&store), 1);
        let first = store.batch(|store| store.crawls().add(&spec, None).unwrap());
        assert_eq!(synchronous(&store), 1);
        let reader = Store::open_read_only(&dir.path().join("abxd.sqlite3")).unwrap();
        for id in [alone, joined, first] {
            assert!(reader.crawls().get(id).unwrap().is_some(), "crawl {id}");
        }
    }
}
