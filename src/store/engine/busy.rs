//! Waiting for the write lock: how long a write may wait when another process holds it, and
//! what a store remembers of a lock held for long.
//!
//! A command (abxctl, a migration) waits up to [`PATIENT`] for the lock, like any SQLite client.
//! A process that runs an event loop (the daemon, workers) must not: a foreign writer — an
//! operator's `sqlite3` shell left in `BEGIN IMMEDIATE`, a backup tool — would hold its deadlines
//! hostage. Such a store is [`Patience::Loop`]: a write waits for the lock only while the loop
//! has nothing else to do — it gives up at the loop's next deadline (published with
//! [`set_loop_deadline`] by the supervisor), or, once it waited [`LOOP_WAIT`] (longer than our
//! own processes hold the lock), as soon as the loop has an event ready (a signal, a child's
//! exit, a client); a write made for a waiting client ([`answer_soon`]) waits at most
//! [`CLIENT_WAIT`]. After a write gave up, writes fail at once (without asking SQLite) until
//! [`PROBE_EVERY`] later, so a turn of the loop with many writes waits once. The callers retry
//! what failed (see `supervisor::unrecorded`, the workers' deferred exits, the pools' claim
//! retries, the daemon's parked adds).
//!
//! Invariant: `since` is set from the first write that found the database busy until the next
//! write that succeeds; a write refused by the breaker is an error like SQLite's own busy error
//! ([`StoreError::is_busy`]).

use crate::store::StoreError;
use std::cell::Cell;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a command's statement waits for another writer before giving up.
pub const PATIENT: Duration = Duration::from_secs(30);

/// How long a write of an event loop's store waits for another writer before an event of its
/// loop makes it give up: longer than abxd's own processes hold the lock on a loaded machine (at
/// 20 ms, eight snapshot workers made each other give up ~200 times a run: benchmark 6).
pub const LOOP_WAIT: Duration = Duration::from_millis(250);

/// After a write found the database busy: how long writes fail at once before one tries again.
pub const PROBE_EVERY: Duration = Duration::from_millis(100);

/// How a store waits for the write lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience {
    /// Up to [`PATIENT`]: commands, start-up.
    Patient,
    /// Briefly, then fail and let the caller retry: event loops.
    Loop,
}

impl Patience {
    /// Makes `conn` wait for the write lock as this patience says.
    pub fn apply(self, conn: &rusqlite::Connection) -> rusqlite::Result<()> {
        match self {
            Patience::Patient => conn.busy_timeout(PATIENT),
            Patience::Loop => conn.busy_handler(Some(loop_busy_handler)),
        }
    }
}

/// What the event loop of this thread told the busy handler.
#[derive(Clone, Copy)]
struct LoopState {
    /// Its next deadline: a write gives up then.
    deadline: Option<Instant>,
    /// Its poll descriptor: readable when an event is ready.
    wake_fd: Option<RawFd>,
    /// When the current wait for the lock began.
    waiting_since: Option<Instant>,
    /// A client waits for the write: other events do not cut its wait short.
    client_waits: bool,
}

thread_local! {
    static LOOP: Cell<LoopState> = const {
        Cell::new(LoopState {
            deadline: None,
            wake_fd: None,
            waiting_since: None,
            client_waits: false,
        })
    };
}

/// Tells the busy handler of this thread's loop its next deadline (`None`: none).
pub fn set_loop_deadline(deadline: Option<Instant>) {
    LOOP.with(|state| {
        let mut now = state.get();
        now.deadline = deadline;
        now.client_waits = false;
        state.set(now);
    });
}

/// How long a write made for a waiting client may wait for another process's lock.
pub const CLIENT_WAIT: Duration = Duration::from_millis(500);

/// A client waits for this thread's loop: until the loop's next turn, a write waits for
/// another process's lock at most [`CLIENT_WAIT`] (and not past the loop's deadline), whatever
/// else is ready; then the caller answers "busy" or tries later.
pub fn answer_soon() {
    let soon = Instant::now() + CLIENT_WAIT;
    LOOP.with(|state| {
        let mut now = state.get();
        now.deadline = Some(now.deadline.map_or(soon, |at| at.min(soon)));
        now.client_waits = true;
        state.set(now);
    });
}

/// Tells the busy handler of this thread's loop the descriptor that is readable when the loop
/// has an event ready (its `epoll` descriptor).
pub fn set_loop_wake_fd(fd: RawFd) {
    LOOP.with(|state| {
        let mut now = state.get();
        now.wake_fd = Some(fd);
        state.set(now);
    });
}

/// SQLite's busy handler for [`Patience::Loop`]: `true` to try the lock again (after a nap),
/// `false` to give up (the statement fails with SQLITE_BUSY).
fn loop_busy_handler(attempt: i32) -> bool {
    let now = Instant::now();
    let mut state = LOOP.with(Cell::get);
    // (SQLite counts the calls of one wait from 0.)
    if attempt == 0 {
        state.waiting_since = Some(now);
        LOOP.with(|cell| cell.set(state));
    }
    let waited = now - state.waiting_since.unwrap_or(now);
    let event_ready = || !state.client_waits && event_ready(state.wake_fd);
    if !keep_waiting(waited, now, state.deadline, event_ready) {
        return false;
    }
    let nap = nap_after(attempt, waited, jitter());
    let nap = state
        .deadline
        .map_or(nap, |deadline| nap.min(deadline - now));
    std::thread::sleep(nap);
    true
}

/// How long the busy handler sleeps before its try number `attempt + 1` of a wait that began
/// `waited` ago: the first tries come quickly, for a lock held briefly; later ones back off, so
/// a hundred waiting workers do not spend the cores polling the lock while its holder waits for
/// one (a daemon's SIGTERM with 100 snapshot workers spent three quarters of two cores in the
/// busy handlers' naps and lock probes with a fixed 1 ms nap). But SQLite's lock is not a
/// queue — whoever tries first after a commit gets it — so a waiter napping long loses to newer
/// ones: in the last [`URGENT`] before [`LOOP_WAIT`], when it would give up, it tries every
/// millisecond again (benchmark 6, 8 workers: no give-up, as with 1 ms naps throughout).
/// `jitter` in `0.0..1.0` spreads the waiters (from ×0.5 to ×1.5), so they do not try in step.
fn nap_after(attempt: i32, waited: Duration, jitter: f64) -> Duration {
    const SCHEDULE_MS: [u64; 7] = [1, 2, 5, 10, 15, 20, 25];
    let index = usize::try_from(attempt)
        .unwrap_or(0)
        .min(SCHEDULE_MS.len() - 1);
    let base = if waited + URGENT >= LOOP_WAIT {
        Duration::from_millis(1)
    } else {
        Duration::from_millis(SCHEDULE_MS[index])
    };
    base.mul_f64(0.5 + jitter.clamp(0.0, 1.0))
}

/// How long before giving up a waiter tries every millisecond (see [`nap_after`]).
const URGENT: Duration = Duration::from_millis(100);

/// A number in `0.0..1.0` that differs between processes and calls (not for secrets).
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.subsec_nanos());
    let mixed = (u64::from(nanos) ^ u64::from(std::process::id()).rotate_left(17))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 11) as f64 / (1u64 << 53) as f64
}

/// The rule of [`loop_busy_handler`]: wait while the deadline is ahead, the wait is within
/// [`PATIENT`], and — past [`LOOP_WAIT`] — no event is ready.
fn keep_waiting(
    waited: Duration,
    now: Instant,
    deadline: Option<Instant>,
    event_ready: impl FnOnce() -> bool,
) -> bool {
    if waited >= PATIENT || deadline.is_some_and(|at| now >= at) {
        return false;
    }
    waited < LOOP_WAIT || !event_ready()
}

/// Whether the loop's poll descriptor has an event ready.
fn event_ready(fd: Option<RawFd>) -> bool {
    let Some(fd) = fd else {
        return false;
    };
    // SAFETY: the descriptor is the loop's epoll instance (`set_loop_wake_fd`), which the loop
    // keeps open for as long as it runs, and only this thread's loop set it.
    let fd = unsafe { rustix::fd::BorrowedFd::borrow_raw(fd) };
    let mut fds = [rustix::event::PollFd::new(
        &fd,
        rustix::event::PollFlags::IN,
    )];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    rustix::event::poll(&mut fds, Some(&zero)).is_ok_and(|n| n > 0)
}

/// Writes of this process that found the database busy, and writes the breaker refused without
/// trying, since it started (what `/metrics` reports of the daemon).
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
pub struct Breaker {
    /// Since when writes find the database busy (wall-clock ms, for people).
    since: Option<i64>,
    /// Until when writes fail without trying.
    open_until: Option<Instant>,
}

impl Breaker {
    /// Whether a write may try now; if not, the error to return instead. A write made for a
    /// waiting client always tries (within [`CLIENT_WAIT`]).
    pub fn check(&self, now: Instant) -> Result<(), StoreError> {
        if LOOP.with(Cell::get).client_waits {
            return Ok(());
        }
        match (self.since, self.open_until) {
            (Some(since_ms), Some(until)) if now < until => {
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
            if patience == Patience::Loop {
                self.open_until = Some(now + PROBE_EVERY);
            }
        } else {
            self.since = None;
            self.open_until = None;
        }
    }

    /// Since when (wall-clock ms) writes have found the database busy.
    pub fn busy_since(&self) -> Option<i64> {
        self.since
    }
}

impl StoreError {
    /// Whether this error says another process holds the database's lock (the write may succeed
    /// later, unchanged).
    pub fn is_busy(&self) -> bool {
        use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_store_fails_at_once_after_a_busy_write_until_the_probe() {
        let mut breaker = Breaker::default();
        let t0 = Instant::now();
        assert!(breaker.check(t0).is_ok());
        breaker.after_write(true, Patience::Loop, t0);
        let refused = breaker.check(t0 + PROBE_EVERY / 2).unwrap_err();
        assert!(refused.is_busy());
        assert!(
            breaker.check(t0 + PROBE_EVERY).is_ok(),
            "a probe is let through"
        );
        let since = breaker.busy_since().unwrap();
        breaker.after_write(true, Patience::Loop, t0 + PROBE_EVERY);
        assert_eq!(
            breaker.busy_since(),
            Some(since),
            "since the first busy write"
        );
        breaker.after_write(false, Patience::Loop, t0 + PROBE_EVERY * 2);
        assert_eq!(breaker.busy_since(), None);
        assert!(breaker.check(t0 + PROBE_EVERY * 2).is_ok());
    }

    #[test]
    fn a_loop_write_waits_while_nothing_is_due_or_ready() {
        let now = Instant::now();
        let later = Some(now + Duration::from_secs(1));
        let short = LOOP_WAIT / 2;
        let long = LOOP_WAIT * 2;
        assert!(
            keep_waiting(short, now, later, || true),
            "own writers: brief"
        );
        assert!(
            keep_waiting(long, now, later, || false),
            "nothing else to do"
        );
        assert!(
            !keep_waiting(long, now, later, || true),
            "an event is ready"
        );
        assert!(!keep_waiting(short, now, Some(now), || false), "a deadline");
        assert!(!keep_waiting(PATIENT, now, None, || false), "patience ends");
    }

    #[test]
    fn the_busy_handler_tries_quickly_first_then_backs_off_and_spreads_the_waiters() {
        let early = Duration::from_millis(10);
        assert_eq!(nap_after(0, Duration::ZERO, 0.5), Duration::from_millis(1));
        assert!(nap_after(3, early, 0.5) > nap_after(1, early, 0.5));
        assert_eq!(
            nap_after(100, early, 0.5),
            nap_after(6, early, 0.5),
            "capped"
        );
        assert!(nap_after(100, early, 0.99) <= Duration::from_millis(38));
        assert!(
            nap_after(5, early, 0.0) < nap_after(5, early, 0.9),
            "jittered"
        );
        let late = LOOP_WAIT - URGENT;
        assert!(
            nap_after(100, late, 0.99) < Duration::from_millis(2),
            "near giving up, it tries every millisecond"
        );
        let spread: std::collections::HashSet<u64> = (0..20)
            .map(|_| nap_after(6, early, jitter()).as_micros() as u64)
            .collect();
        assert!(spread.len() > 1, "the jitter varies");
    }

    #[test]
    fn a_patient_store_always_tries() {
        let mut breaker = Breaker::default();
        let t0 = Instant::now();
        breaker.after_write(true, Patience::Patient, t0);
        assert!(breaker.check(t0).is_ok());
        assert!(breaker.busy_since().is_some());
    }
}
