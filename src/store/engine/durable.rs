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
use std::cell::Cell;
use std::path::Path;

/// How the open transaction commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Commit {
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
    fn joined_by(self, durable: bool) -> Commit {
        match self {
            Commit::Cheap if durable => Commit::SyncLog,
            other => other,
        }
    }
}

/// How a store's transactions commit: whether durable commits are asked for at all, whether the
/// write under way is one abxd answers for, and how the open transaction is to commit.
#[derive(Debug)]
pub struct Commits {
    synchronous_commit: Cell<bool>,
    next_durable: Cell<bool>,
    open: Cell<Commit>,
}

impl Default for Commits {
    fn default() -> Self {
        Commits {
            synchronous_commit: Cell::new(true),
            next_durable: Cell::new(false),
            open: Cell::default(),
        }
    }
}

impl Commits {
    /// Whether writes abxd answers for are made durable (`[store] synchronous_commit`).
    pub fn set_synchronous_commit(&self, on: bool) {
        self.synchronous_commit.set(on);
    }

    /// Makes the write `write` makes one abxd answers for: its transaction is on disk before
    /// that write returns — or, inside a batch, before the batch's commit does.
    pub fn durably<T>(&self, write: impl FnOnce() -> T) -> T {
        self.next_durable.set(self.synchronous_commit.get());
        let written = write();
        self.next_durable.set(false);
        written
    }

    /// Begins a write transaction on `db`, durably if the write beginning it is.
    pub fn begin(&self, db: &Db) -> Result<(), SqlError> {
        let begin = db.dialect().begin_write();
        let durable = self.next_durable.get();
        let commit = match db {
            Db::Sqlite(_) if durable => {
                // (Only outside a transaction may SQLite's safety level change.)
                db.run("PRAGMA synchronous = FULL")?;
                if let Err(err) = db.run(begin) {
                    let _ = db.run("PRAGMA synchronous = NORMAL");
                    return Err(err);
                }
                Commit::Full
            }
            _ => {
                db.run(begin)?;
                if durable {
                    postgres_on(db)?;
                }
                Commit::Cheap
            }
        };
        self.open.set(commit);
        Ok(())
    }

    /// A write joins the transaction open on `db`: if it is durable, so is the commit.
    pub fn join(&self, db: &Db) -> Result<(), SqlError> {
        let durable = self.next_durable.get();
        if durable {
            postgres_on(db)?;
        }
        self.open.set(self.open.get().joined_by(durable));
        Ok(())
    }

    /// Commits the transaction open on `db` (SQLite's file at `path`), durably if a write of it
    /// was. An error of the log's sync is returned as such: the transaction is committed but
    /// not known to be on disk, so its caller must not answer for it.
    pub fn commit(&self, db: &Db, path: &Path) -> Result<(), SqlError> {
        let committed = db.run("COMMIT");
        match self.open.take() {
            Commit::Cheap => committed,
            Commit::Full => {
                let _ = db.run("PRAGMA synchronous = NORMAL");
                committed
            }
            Commit::SyncLog => {
                committed?;
                sync_log(db, path)
            }
        }
    }

    /// Rolls the transaction open on `db` back (harmlessly if SQLite did already, e.g. on a
    /// full disk).
    pub fn roll_back(&self, db: &Db) {
        let _ = db.run("ROLLBACK");
        if self.open.take() == Commit::Full {
            let _ = db.run("PRAGMA synchronous = NORMAL");
        }
    }
}

fn postgres_on(db: &Db) -> Result<(), SqlError> {
    match db {
        Db::Postgres(_) => db.run("SET LOCAL synchronous_commit TO on"),
        Db::Sqlite(_) => Ok(()),
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
