//! Durable commits: what abxd answers for — a crawl added, a schedule added, a cancel, a retry,
//! a result's end, a seal — is on disk before the write that made it returns, so a power cut
//! cannot undo an answer already given. Every other write stays cheap (SQLite's
//! `synchronous=NORMAL` in WAL mode: durable against a process crash, not against a power cut).
//!
//! Invariants: a transaction holding a durable write commits durably, whichever write of it
//! asked: on SQLite under `synchronous=FULL` when it began with that write (the log is synced
//! before the commit is visible, so no reader sees what a power cut could undo), else by an
//! `fdatasync(2)` of the write-ahead log after its `COMMIT`, before the write returns; on
//! PostgreSQL with `synchronous_commit` on for that transaction (`SET LOCAL`), whatever the
//! server's default. `[store] synchronous_commit = false` turns all of it off (every commit
//! cheap), as PostgreSQL's own setting of that name does.

use crate::store::engine::sql::{Db, SqlError};
use std::path::Path;

/// How the open transaction commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Commit {
    /// Cheaply: nothing in it was answered for.
    #[default]
    Cheap,
    /// Under `synchronous=FULL`: it began with a durable write (SQLite).
    Full,
    /// With the log synced after `COMMIT`: a durable write joined it once it had begun.
    SyncLog,
}

impl Commit {
    /// How a transaction commits once a write of it (`durable` or not) joined it, having
    /// committed as `self` so far.
    pub fn joined_by(self, durable: bool) -> Commit {
        match self {
            Commit::Cheap if durable => Commit::SyncLog,
            other => other,
        }
    }
}

/// Begins a write transaction on `db` with `begin` (the dialect's), durably if `durable`;
/// returns how it is to commit.
pub fn begin(db: &Db, begin: &str, durable: bool) -> Result<Commit, SqlError> {
    match db {
        Db::Sqlite(_) if durable => {
            // (Only outside a transaction may SQLite's safety level change.)
            db.execute("PRAGMA synchronous = FULL", &[])?;
            if let Err(err) = db.execute(begin, &[]) {
                let _ = db.execute("PRAGMA synchronous = NORMAL", &[]);
                return Err(err);
            }
            Ok(Commit::Full)
        }
        _ => {
            db.execute(begin, &[])?;
            if durable {
                postgres_on(db)?;
            }
            Ok(Commit::Cheap)
        }
    }
}

/// Asks what a durable write that joins an open transaction needs of it now (PostgreSQL:
/// `synchronous_commit` on for it; SQLite: nothing until the commit).
pub fn joining(db: &Db, durable: bool) -> Result<(), SqlError> {
    if durable {
        postgres_on(db)?;
    }
    Ok(())
}

fn postgres_on(db: &Db) -> Result<(), SqlError> {
    match db {
        Db::Postgres(_) => db
            .execute("SET LOCAL synchronous_commit TO on", &[])
            .map(drop),
        Db::Sqlite(_) => Ok(()),
    }
}

/// Commits the open transaction on `db` (SQLite's file at `path`) as `commit` says. An error of
/// the log's sync is returned as an I/O error: the transaction is committed but not known to be
/// on disk, so its caller must not answer for it.
pub fn commit(db: &Db, path: &Path, commit: Commit) -> Result<(), SqlError> {
    let committed = db.execute("COMMIT", &[]).map(drop);
    match commit {
        Commit::Cheap => committed,
        Commit::Full => {
            let _ = db.execute("PRAGMA synchronous = NORMAL", &[]);
            committed
        }
        Commit::SyncLog => {
            committed?;
            sync_log(db, path)
        }
    }
}

/// What is left to undo of a transaction that `commit` would have committed, once it was
/// rolled back.
pub fn rolled_back(db: &Db, commit: Commit) {
    if commit == Commit::Full {
        let _ = db.execute("PRAGMA synchronous = NORMAL", &[]);
    }
}

/// Syncs SQLite's write-ahead log of the file at `path` (`fdatasync` through any descriptor of
/// the file flushes the kernel's copy of all of it).
fn sync_log(db: &Db, path: &Path) -> Result<(), SqlError> {
    if !matches!(db, Db::Sqlite(_)) {
        return Ok(());
    }
    let mut log = path.as_os_str().to_owned();
    log.push("-wal");
    let synced = std::fs::File::open(&log).and_then(|file| file.sync_data());
    synced.map_err(|err| {
        SqlError::Unsynced(format!("cannot sync {}: {err}", Path::new(&log).display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_durable_write_joining_a_cheap_transaction_makes_it_sync_its_log() {
        assert_eq!(Commit::Cheap.joined_by(false), Commit::Cheap);
        assert_eq!(Commit::Cheap.joined_by(true), Commit::SyncLog);
        assert_eq!(Commit::Full.joined_by(false), Commit::Full);
        assert_eq!(Commit::SyncLog.joined_by(false), Commit::SyncLog);
    }
}
