//! Waiting for the write lock: how long a write may wait when another process holds it, and
//! when an event loop tries again.
//!
//! A command (abxctl, a migration) waits up to [`PATIENT`] for the lock, like any SQLite client.
//! A process that runs an event loop (the daemon, workers) never waits: its store is
//! [`Patience::Loop`], whose writes fail at once with [`StoreError::Busy`] while another process
//! holds the lock — an operator's `sqlite3` shell left in `BEGIN IMMEDIATE`, a backup tool, or
//! just another worker committing. The store then backs off ([`Backoff`]): its writes fail at
//! once, without asking SQLite, until [`Backoff::retry_at`] — a millisecond after the first busy
//! write, longer while the lock stays taken, up to [`MAX_BACKOFF`], spread so that processes do
//! not try in step — and the loop wakes then (`Outbox::retry_at`) to write what waited: the
//! store's outbox (`outbox`) and what each concern keeps of its own (a supervisor's unrecorded
//! ends, a worker's deferred exits, a pool's unstarted claims, the daemon's parked adds).
//!
//! Invariant: `since` is set from the first write that found the database busy until the next
//! write that succeeds; nothing here, nor SQLite on a loop's store, sleeps.

use crate::store::StoreError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a command's statement waits for another writer before giving up.
pub const PATIENT: Duration = Duration::from_secs(30);

/// The longest a loop's store waits before it tries to write again while the lock stays taken.
pub const MAX_BACKOFF: Duration = Duration::from_millis(100);

/// How a store waits for the write lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience {
    /// Up to [`PATIENT`]: commands, start-up, a process's last writes after its loop ended.
    Patient,
    /// Not at all: the write fails, the store backs off, the loop tries again.
    Loop,
}

impl Patience {
    /// Makes `conn` wait for the write lock as this patience says.
    pub fn apply(self, conn: &rusqlite::Connection) -> rusqlite::Result<()> {
        match self {
            Patience::Patient => conn.busy_timeout(PATIENT),
            Patience::Loop => conn.busy_timeout(Duration::ZERO),
        }
    }
}

/// How long a loop's store backs off after its `failures`-th busy write in a row: a lock is
/// mostly held for a millisecond or two (a commit of another of our processes), so the first
/// tries come quickly; a lock held on (a foreign writer, a checkpoint) is tried less and less
/// often. `jitter` in `0.0..1.0` spreads the processes (×0.5 to ×1.5), so a hundred workers
/// that found one lock taken do not all try again in the same millisecond.
fn backoff_after(failures: u32, jitter: f64) -> Duration {
    const SCHEDULE_MS: [u64; 7] = [1, 2, 4, 8, 16, 32, 64];
    let index = (failures.max(1) as usize - 1).min(SCHEDULE_MS.len() - 1);
    Duration::from_millis(SCHEDULE_MS[index])
        .mul_f64(0.5 + jitter.clamp(0.0, 1.0))
        .min(MAX_BACKOFF)
}

/// A number in `0.0..1.0` that differs between processes and calls (not for secrets).
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.subsec_nanos());
    let mixed = (u64::from(nanos) ^ u64::from(std::process::id()).rotate_left(17))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 11) as f64 / (1u64 << 53) as f64
}

/// Writes of this process that found the database busy, and writes refused without trying
/// while it backed off, since it started (what `/metrics` reports of the daemon).
static BUSY_WRITES: AtomicU64 = AtomicU64::new(0);
static REFUSED_WRITES: AtomicU64 = AtomicU64::new(0);

/// How many writes of this process found the database busy, and how many were refused without
/// trying, since it started.
pub fn write_counts() -> (u64, u64) {
    (
        BUSY_WRITES.load(Ordering::Relaxed),
        REFUSED_WRITES.load(Ordering::Relaxed),
    )
}

/// What a store knows of a busy database.
#[derive(Debug, Default, Clone, Copy)]
pub struct Backoff {
    /// Since when writes find the database busy (wall-clock ms, for people).
    since: Option<i64>,
    /// Busy writes in a row.
    failures: u32,
    /// Until when writes fail without trying (a loop's store).
    retry_at: Option<Instant>,
}

impl Backoff {
    /// Whether a write of a store of `patience` may try now; if not, the error to return
    /// instead. A patient store always tries (SQLite waits for it), also one that backed off
    /// as a loop's a moment ago: a worker's last writes after its loop ended wait for the lock.
    pub fn check(&self, patience: Patience, now: Instant) -> Result<(), StoreError> {
        match (patience, self.since, self.retry_at) {
            (Patience::Loop, Some(since_ms), Some(until)) if now < until => {
                REFUSED_WRITES.fetch_add(1, Ordering::Relaxed);
                Err(StoreError::Busy { since_ms })
            }
            _ => Ok(()),
        }
    }

    /// A write ended: `busy` says whether it found the database busy.
    pub fn after_write(&mut self, busy: bool, patience: Patience, now: Instant) {
        if busy {
            BUSY_WRITES.fetch_add(1, Ordering::Relaxed);
            self.since.get_or_insert_with(crate::store::now_ms);
            self.failures = self.failures.saturating_add(1);
            if patience == Patience::Loop {
                self.retry_at = Some(now + backoff_after(self.failures, jitter()));
            }
        } else {
            *self = Backoff::default();
        }
    }

    /// Since when (wall-clock ms) writes have found the database busy.
    pub fn busy_since(&self) -> Option<i64> {
        self.since
    }

    /// When a loop's store tries to write again (none: it does not back off).
    pub fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }
}

impl StoreError {
    /// Whether this error says the disk under the database is full (the write may succeed once
    /// space is freed, unchanged: it is busy too).
    pub fn is_full(&self) -> bool {
        match self {
            StoreError::Full { .. } => true,
            StoreError::Sql(err) => err.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull),
            StoreError::Db(err) => err.is_full(),
            _ => false,
        }
    }

    /// Whether this error says another process holds the database's lock, or the disk is full
    /// (the write may succeed later, unchanged).
    pub fn is_busy(&self) -> bool {
        use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
        if self.is_full() {
            return true;
        }
        match self {
            StoreError::Busy { .. } => true,
            StoreError::Sql(rusqlite::Error::SqliteFailure(failure, _)) => {
                matches!(failure.code, DatabaseBusy | DatabaseLocked)
            }
            StoreError::Db(err) => err.is_busy(),
            _ => false,
        }
    }
}

/// What a loop does with a store call that the database may refuse for a while (another
/// process holds its lock, or the server is out of reach): the one place that tells such a
/// refusal from a failure, so that each concern only says what it does meanwhile.
pub trait OrLater<T> {
    /// `Ok(Some(value))` when done; `Ok(None)` when the database refused it for now (the loop
    /// wakes when the store may try again: `Outbox::next_try`); `Err` for any other failure.
    fn or_later(self) -> Result<Option<T>, StoreError>;
}

impl<T> OrLater<T> for Result<T, StoreError> {
    fn or_later(self) -> Result<Option<T>, StoreError> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(err) if err.is_busy() => {
                log::debug!("tried again at a later turn: {err}");
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_store_fails_at_once_after_a_busy_write_until_it_tries_again() {
        let mut backoff = Backoff::default();
        let t0 = Instant::now();
        assert!(backoff.check(Patience::Loop, t0).is_ok());
        assert_eq!(backoff.retry_at(), None);
        backoff.after_write(true, Patience::Loop, t0);
        let again = backoff.retry_at().expect("backs off");
        assert!(again > t0 && again <= t0 + MAX_BACKOFF);
        let refused = backoff.check(Patience::Loop, t0).unwrap_err();
        assert!(refused.is_busy());
        assert!(
            backoff.check(Patience::Loop, again).is_ok(),
            "a try is let through"
        );
        let since = backoff.busy_since().unwrap();
        backoff.after_write(true, Patience::Loop, again);
        assert_eq!(
            backoff.busy_since(),
            Some(since),
            "since the first busy write"
        );
        backoff.after_write(false, Patience::Loop, again);
        assert_eq!(backoff.busy_since(), None);
        assert_eq!(backoff.retry_at(), None);
        assert!(backoff.check(Patience::Loop, again).is_ok());
    }

    #[test]
    fn the_backoff_starts_at_a_millisecond_then_grows_capped_and_spread() {
        assert_eq!(backoff_after(1, 0.5), Duration::from_millis(1));
        assert!(backoff_after(4, 0.5) > backoff_after(2, 0.5));
        assert_eq!(backoff_after(100, 0.5), backoff_after(7, 0.5), "capped");
        assert!(backoff_after(100, 0.99) <= MAX_BACKOFF);
        assert!(backoff_after(5, 0.0) < backoff_after(5, 0.9), "spread");
        let spread: std::collections::HashSet<u128> = (0..20)
            .map(|_| backoff_after(6, jitter()).as_micros())
            .collect();
        assert!(spread.len() > 1, "the jitter varies");
    }

    #[test]
    fn a_patient_store_always_tries() {
        let mut backoff = Backoff::default();
        let t0 = Instant::now();
        backoff.after_write(true, Patience::Patient, t0);
        assert!(backoff.check(Patience::Patient, t0).is_ok());
        assert!(backoff.busy_since().is_some());
    }

    #[test]
    fn a_store_made_patient_while_backing_off_tries_at_once() {
        // (A worker's loop ended while it backed off; its last writes must wait for the lock,
        // not fail at once — an end left unwritten would stay "stopping" for ever.)
        let mut backoff = Backoff::default();
        let t0 = Instant::now();
        backoff.after_write(true, Patience::Loop, t0);
        assert!(backoff.check(Patience::Loop, t0).is_err());
        assert!(backoff.check(Patience::Patient, t0).is_ok());
    }
}
