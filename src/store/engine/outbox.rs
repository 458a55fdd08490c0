//! The outbox: writes an event loop made while another process held the database's lock, kept
//! in the order they were made and written at the loop's next tries — `Supervisor::wait` writes
//! them at the start of each turn and wakes for them at [`Outbox::retry_at`] — so that the loop
//! never waits for the lock (`busy`) and loses nothing because it did not.
//!
//! It takes the writes nothing waits for: what is noted of a row (escaped, leaking,
//! unkillable), the row of an escapee found below a row. A write whose
//! result the loop needs at once (a claim, the row of a process about to start, a hook's end
//! before the next hook) is retried by its own concern, which knows what else waits for it.
//!
//! Invariants: while the outbox holds a write, each later one joins the queue behind it, so no
//! write given to the outbox overtakes an earlier one; a write leaves it once it is written, or
//! when it failed for another reason than the lock (logged, naming what it was), as it would have
//! without the outbox.

use crate::store::{Outbox, Store, StoreError};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long after a write that failed other than for the lock a loop tries it again.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(100);

/// A write, tried again until the database takes it.
type Write = Box<dyn FnMut(&Store) -> Result<(), StoreError> + Send>;

/// A write the outbox keeps, with what it is in words (for the log).
pub(in crate::store) struct Kept {
    what: String,
    write: Write,
}

/// The writes a store keeps for later.
pub(in crate::store) type Queue = VecDeque<Kept>;

impl Outbox<'_> {
    /// Writes `write` now, or, if the database is busy (or earlier writes wait), keeps it to
    /// write after them. `what` names it in the log if it fails for another reason.
    pub fn write(
        self,
        what: impl Into<String>,
        write: impl FnMut(&Store) -> Result<(), StoreError> + Send + 'static,
    ) {
        let mut kept = Kept {
            what: what.into(),
            write: Box::new(write),
        };
        if !self.store.kept.borrow().is_empty() {
            self.store.kept.borrow_mut().push_back(kept);
            self.write_kept();
            return;
        }
        if let Some(kept) = self.try_write(&mut kept).then_some(kept) {
            self.store.kept.borrow_mut().push_back(kept);
        }
    }

    /// Writes what was kept, in order, until the database is busy again.
    pub fn write_kept(self) {
        loop {
            // (Taken out while it runs: its write may give the outbox another.)
            let Some(mut kept) = self.store.kept.borrow_mut().pop_front() else {
                return;
            };
            if self.try_write(&mut kept) {
                self.store.kept.borrow_mut().push_front(kept);
                return;
            }
        }
    }

    /// Tries `kept` once; `true` if the database was busy (it must be kept).
    fn try_write(self, kept: &mut Kept) -> bool {
        match (kept.write)(self.store) {
            Ok(()) => false,
            Err(err) if err.is_busy() => true,
            Err(err) => {
                log::error!("cannot write {}: {err}", kept.what);
                false
            }
        }
    }

    /// How many writes wait.
    pub fn len(self) -> usize {
        self.store.kept.borrow().len()
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Since when (wall-clock ms) this store's writes have found the database locked by another
    /// process, if the last one did.
    pub fn busy_since(self) -> Option<i64> {
        self.store.backoff.get().busy_since()
    }

    /// Whether the database's writes are held back for a while: another process holds its lock
    /// (the store backs off), or the server is out of reach (a reconnection is pending).
    pub fn held_back(self) -> bool {
        self.busy_since().is_some() || self.store.db.reconnect_at().is_some()
    }

    /// When the loop must wake to write what waits (none: nothing does).
    pub fn retry_at(self) -> Option<Instant> {
        (!self.is_empty()).then(|| self.next_try())
    }

    /// When a write that found the database busy may try again: the store's back-off (see
    /// `busy`), or at once if it does not back off (its last write went through) — but not
    /// before the next attempt to reach a server out of reach (a read that failed for that
    /// leaves no back-off: without this, a loop would spin until the server is back).
    pub fn next_try(self) -> Instant {
        let now = Instant::now();
        let backoff = self.store.backoff.get().retry_at();
        let reconnect = self.store.db.reconnect_at();
        [backoff, reconnect]
            .into_iter()
            .flatten()
            .fold(now, Instant::max)
    }

    /// When to try again a write that failed: `busy` (another process held the lock), when the
    /// back-off ends; otherwise (a full disk, a server out of reach) [`RETRY_AFTER_FAILURE`]
    /// from now, so a write that keeps failing is not tried in a spin.
    pub fn when_to_retry(self, busy: bool) -> Instant {
        match busy {
            true => self.next_try(),
            false => Instant::now() + RETRY_AFTER_FAILURE,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{Patience, Store};

    /// A loop's store over a new file at `path`, with a table `t` of numbers.
    fn loop_store(path: &std::path::Path) -> Store {
        let store = Store::open(path).unwrap();
        store
            .sqlite()
            .unwrap()
            .execute_batch("CREATE TABLE t (n INTEGER NOT NULL)")
            .unwrap();
        store.set_patience(Patience::Loop).unwrap();
        store
    }

    fn numbers(store: &Store) -> Vec<i64> {
        let conn = store.sqlite().unwrap();
        let mut statement = conn.prepare("SELECT n FROM t ORDER BY rowid").unwrap();
        let rows = statement.query_map([], |row| row.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    }

    fn insert(n: i64) -> impl FnMut(&Store) -> Result<(), crate::store::StoreError> + Send {
        move |store: &Store| {
            store.write(|db| {
                db.execute(
                    "INSERT INTO t (n) VALUES (?1)",
                    &crate::store::engine::sql::args![n],
                )
                .map(drop)
                .map_err(Into::into)
            })
        }
    }

    /// Another process holds the lock: the loop's writes are kept, not waited for, and written
    /// in the order they were made once it is free — a later write never overtakes a kept one.
    #[test]
    fn writes_refused_by_a_busy_database_are_kept_and_written_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let store = loop_store(&path);
        let foreign = rusqlite::Connection::open(&path).unwrap();
        foreign.execute_batch("BEGIN IMMEDIATE").unwrap();

        store.outbox().write("one", insert(1));
        store.outbox().write("two", insert(2));
        assert_eq!(store.outbox().len(), 2);
        assert!(store.outbox().busy_since().is_some());
        assert!(
            store.outbox().retry_at().is_some(),
            "the loop wakes for them"
        );
        store.outbox().write_kept();
        assert_eq!(store.outbox().len(), 2, "still held: nothing is lost");

        foreign.execute_batch("ROLLBACK").unwrap();
        // Given once the store may try again, while two still wait: it goes behind them.
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let may_try = store.outbox().next_try();
        while std::time::Instant::now() < may_try.min(give_up) {
            std::hint::spin_loop();
        }
        store.outbox().write("three", insert(3));
        assert!(store.outbox().is_empty());
        assert_eq!(numbers(&store), vec![1, 2, 3]);
        assert_eq!(store.outbox().retry_at(), None);
        assert_eq!(store.outbox().busy_since(), None);
    }

    /// A write that fails for another reason than the lock leaves the outbox (it would fail
    /// again), and holds up no later one.
    #[test]
    fn a_write_that_fails_otherwise_is_dropped_and_holds_nothing_up() {
        let dir = tempfile::tempdir().unwrap();
        let store = loop_store(&dir.path().join("db"));
        store.outbox().write("a broken write", |store: &Store| {
            store.write(|db| {
                db.execute("INSERT INTO nowhere VALUES (1)", &[])
                    .map(drop)
                    .map_err(Into::into)
            })
        });
        store.outbox().write("one", insert(1));
        assert!(store.outbox().is_empty());
        assert_eq!(numbers(&store), vec![1]);
    }
}
