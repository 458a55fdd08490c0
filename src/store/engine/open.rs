//! Opening a store on a file: created and migrated by the daemon's first start, opened as it is
//! (never created) by workers and `abxctl`, or read-only by `abxctl ps` while the daemon is down.
//!
//! Invariants: every SQLite connection is configured here alike (WAL, the busy wait,
//! `synchronous=NORMAL`, `foreign_keys=ON`); a caller that neither creates nor migrates gets a
//! store at the latest schema or an error saying which side is behind; the daemon's open
//! refuses a damaged file before writing to it (`health`), and any open names damage SQLite
//! finds as such.

use crate::store::engine::busy::{Backoff, Patience};
use crate::store::engine::file::{check_files, file_id, not_a_link};
use crate::store::engine::health;
use crate::store::engine::sql::Db;
use crate::store::{fleet, migrations, Store, StoreError, WAL_KEEP_BYTES};
use rusqlite::{Connection, OpenFlags};
use std::cell::Cell;
use std::path::{Path, PathBuf};

impl Store {
    /// Opens (creating if needed) the database for reading and writing and migrates it to the
    /// latest schema.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_at_version(path, migrations::LATEST)
    }

    /// Opens the database and migrates it to `version` only. For migration tests, which need a
    /// database as every earlier release left it.
    ///
    /// An existing file is looked at first (`health::look`): a damaged one is refused before
    /// anything is written to it.
    pub fn open_at_version(path: &Path, version: u32) -> Result<Store, StoreError> {
        let open_err = health::opening(path);
        check_files(path)?;
        health::look(path)?;
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
}

/// What a store found at schema version `found` is to a caller that neither creates nor
/// migrates one (workers, `abxctl`): usable at the latest version, else too new or too old.
pub(in crate::store) fn at_latest(path: &Path, found: u32) -> Result<(), StoreError> {
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

/// `db` brought to the latest schema (`target`: the server, as shown).
pub(in crate::store) fn migrated_postgres(db: Db, target: &str) -> Result<Store, StoreError> {
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
    let open_err = health::opening(path);
    let flags = mode | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
    configure(&conn).map_err(open_err)?;
    let found = migrations::user_version(&conn).map_err(open_err)?;
    at_latest(path, found)?;
    Ok(over(Db::Sqlite(conn), path, file_id(path)))
}

/// `file`: the device and inode of the SQLite file opened at `path` (none for a server).
pub(in crate::store) fn over(db: Db, path: &Path, file: Option<(u64, u64)>) -> Store {
    Store {
        db,
        path: path.to_path_buf(),
        failed_writes: Cell::new(0),
        batch_depth: Cell::new(0),
        namespace: std::cell::OnceCell::new(),
        file,
        patience: Cell::new(Patience::Patient),
        backoff: Cell::new(Backoff::default()),
        kept: Default::default(),
        queue_clock: Default::default(),
        fence: Cell::new(None),
        commits: Default::default(),
    }
}

/// A store over a server's connection `db` (`target`: the server, as shown), on the
/// server's queue clock.
pub(in crate::store) fn over_server(db: Db, target: &str) -> Result<Store, StoreError> {
    let queue_clock = fleet::clock::QueueClock::of(&db).map_err(|cause| StoreError::Connect {
        target: target.to_string(),
        cause,
    })?;
    let store = over(db, Path::new(target), None);
    store.queue_clock.set(queue_clock);
    Ok(store)
}

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
