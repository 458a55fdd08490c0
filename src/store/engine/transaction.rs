//! Transactions: every write is all or nothing, and a store's writes can be gathered into one
//! transaction ([`Store::batch`], [`Store::all_or_nothing`]); a transaction holding a write abxd
//! answers for commits durably (`durable`).
//!
//! Invariants: a write takes the lock up front (`BEGIN IMMEDIATE`), so it never fails half-way
//! with "database is locked"; a write that failed (not one the busy database refused, which its
//! caller keeps) is counted in [`Store::failed_writes`]
//! (what makes supervisors go over their rows again) and told to the store's back-off (`busy`).

use crate::store::engine::sql::Db;
use crate::store::{Store, StoreError};
use std::time::Instant;

impl Store {
    /// Runs `f` in one `BEGIN IMMEDIATE` transaction and commits it; inside a batch, in one
    /// savepoint of the batch's transaction. Either way it is all or nothing.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&Db) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let now = Instant::now();
        self.backoff.get().check(self.patience.get(), now)?;
        let written = if self.batch_depth.get() > 0 {
            self.write_in_batch(f)
        } else {
            if self.db.in_transaction() {
                // Left open by a write that never returned (a panic): nothing of it is kept.
                self.commits.roll_back(&self.db);
            }
            self.commits
                .begin(&self.db)
                .map_err(StoreError::from)
                .and_then(|()| {
                    let committed = f(&self.db).and_then(|value| {
                        self.commits.commit(&self.db, &self.path)?;
                        Ok(value)
                    });
                    if committed.is_err() {
                        // (Fails harmlessly if SQLite rolled back already, e.g. on a full disk.)
                        self.commits.roll_back(&self.db);
                    }
                    committed
                })
        };
        match written {
            Ok(value) => {
                self.after_write(false, now);
                Ok(value)
            }
            Err(err) => {
                if !err.is_busy() {
                    self.failed_writes.set(self.failed_writes.get() + 1);
                    return Err(err);
                }
                // SQLite's "database is locked" (or "database or disk is full") said as what it
                // means here.
                let full = err.is_full();
                self.after_write(true, now);
                let since_ms = self
                    .outbox()
                    .busy_since()
                    .unwrap_or_else(crate::store::now_ms);
                Err(match full {
                    true => StoreError::Full { since_ms },
                    false => StoreError::Busy { since_ms },
                })
            }
        }
    }

    fn write_in_batch<T>(
        &self,
        f: impl FnOnce(&Db) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // (Also when SQLite rolled the batch's transaction back itself, e.g. on a full disk.)
        if self.db.in_transaction() {
            self.commits.join(&self.db)?;
        } else {
            self.commits.begin(&self.db)?;
        }
        self.db.run("SAVEPOINT write")?;
        match f(&self.db) {
            Ok(value) => {
                self.db.run("RELEASE write")?;
                Ok(value)
            }
            Err(err) => {
                if self.db.in_transaction() {
                    let _ = self.db.run("ROLLBACK TO write");
                    let _ = self.db.run("RELEASE write");
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
    pub fn batch<T>(&self, f: impl FnOnce(&Store) -> T) -> T {
        self.batch_depth.set(self.batch_depth.get() + 1);
        let value = f(self);
        self.batch_depth.set(self.batch_depth.get() - 1);
        if self.batch_depth.get() == 0 && self.db.in_transaction() {
            if let Err(err) = self.commits.commit(&self.db, &self.path) {
                log::error!("cannot commit a batch of writes: {err}");
                self.commits.roll_back(&self.db);
                self.failed_writes.set(self.failed_writes.get() + 1);
            }
        }
        value
    }

    /// Runs `f` with every write it makes in one transaction: committed if `f` returns Ok (a
    /// failed commit is returned as the error), rolled back if it returns an error — what a
    /// caller uses when several writes must land together or not at all, and may be retried as
    /// a whole (e.g. once a busy database is free again). Inside a batch, `f`'s writes join it.
    pub fn all_or_nothing<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.batch_depth.get() > 0 {
            return f(self);
        }
        self.batch_depth.set(self.batch_depth.get() + 1);
        let value = f(self);
        self.batch_depth.set(self.batch_depth.get() - 1);
        if !self.db.in_transaction() {
            return value;
        }
        match value {
            Ok(value) => match self.commits.commit(&self.db, &self.path) {
                Ok(()) => Ok(value),
                Err(err) => {
                    self.commits.roll_back(&self.db);
                    self.failed_writes.set(self.failed_writes.get() + 1);
                    Err(err.into())
                }
            },
            Err(err) => {
                self.commits.roll_back(&self.db);
                Err(err)
            }
        }
    }

    /// Whether a [`Store::batch`] is under way (its writes are not committed yet).
    pub fn in_batch(&self) -> bool {
        self.batch_depth.get() > 0
    }

    /// How many write transactions have failed since the store was opened, for another reason
    /// than another process's lock (a busy database refuses a write before it begins, and its
    /// caller keeps it: nothing is lost unseen).
    pub fn failed_writes(&self) -> u64 {
        self.failed_writes.get()
    }

    /// Tells the back-off what a write found of the lock.
    fn after_write(&self, busy: bool, now: Instant) {
        let mut backoff = self.backoff.get();
        backoff.after_write(busy, self.patience.get(), now);
        self.backoff.set(backoff);
    }

    /// Whether writes abxd answers for are made durable before it answers (`[store]
    /// synchronous_commit`, on unless the config turns it off; see `durable`).
    pub fn set_synchronous_commit(&self, on: bool) {
        self.commits.set_synchronous_commit(on);
    }
}
