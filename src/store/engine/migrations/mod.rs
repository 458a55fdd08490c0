//! Schema migrations: an ordered list, applied in one `BEGIN IMMEDIATE` transaction each.
//!
//! Invariant: `PRAGMA user_version` is the number of migrations applied. A migration is never
//! edited once released; a change to the schema is a new entry at the end. A database whose
//! version is higher than [`LATEST`] was written by a newer abxd and is refused, never touched.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

pub(crate) mod postgres;

mod sqlite;
use sqlite::MIGRATIONS;

/// The schema version this build writes.
pub const LATEST: u32 = MIGRATIONS.len() as u32;

/// The schema's tables of rows, in an order that satisfies every reference (a process's parent
/// row precedes it: ids grow with time), each with whether its `id` is an identity column: what
/// a copy of a store (`store copy`, `store recover`) copies. (Not `meta`, copied on its own, nor
/// `crawl_tallies` and the process counts: the copy counts its rows itself.)
pub(in crate::store) const TABLES: &[(&str, bool)] = &[
    ("machines", false),
    ("processes", true),
    ("schedules", true),
    ("crawls", true),
    ("seed_hosts", false),
    ("refused_urls", false),
    ("snapshots", true),
    ("results", true),
    ("exports", false),
    ("archivebox_crawls", false),
    ("archivebox_mirrored", false),
    ("tags", false),
    ("binaries", false),
];

pub(crate) fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Outcome of [`migrate_to`] when the database is newer than `target`.
#[derive(Debug)]
pub(crate) struct TooNew {
    pub found: u32,
}

/// Applies the migrations the database lacks, up to `target`. Each runs in its own immediate
/// transaction that re-reads the version, so two processes migrating at once cannot both apply one.
pub(crate) fn migrate_to(
    conn: &mut Connection,
    target: u32,
) -> rusqlite::Result<Result<(), TooNew>> {
    // A migration may rebuild a table others refer to (SQLite's own procedure: foreign keys off
    // outside the transaction, checked inside it before it commits).
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    let migrated = apply_migrations(conn, target);
    conn.pragma_update(None, "foreign_keys", "ON")?;
    migrated
}

fn apply_migrations(conn: &mut Connection, target: u32) -> rusqlite::Result<Result<(), TooNew>> {
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version = user_version(&tx)?;
        if version > LATEST {
            return Ok(Err(TooNew { found: version }));
        }
        if version >= target {
            return Ok(Ok(()));
        }
        tx.execute_batch(MIGRATIONS[version as usize])?;
        let dangling: Option<String> = tx
            .query_row("PRAGMA foreign_key_check", [], |row| row.get(0))
            .optional()?;
        if let Some(table) = dangling {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
                Some(format!(
                    "migration {} left a row of {table} dangling",
                    version + 1
                )),
            ));
        }
        tx.pragma_update(None, "user_version", version + 1)?;
        tx.commit()?;
        log::info!("database migrated to schema version {}", version + 1);
    }
}
