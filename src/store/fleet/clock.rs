//! The clocks of the store: the wall clock for times people read; the boot clock for what one
//! host decides alone (its processes' deadlines), which no wall-clock step moves; and the queue
//! clock, what crawls' and snapshots' `retry_at` (queue eligibility, leases) is compared on.
//!
//! Invariant: every host sharing a store reads one queue clock. On an SQLite file (one host) it
//! is that host's boot clock, rebased at each start in another boot
//! ([`WorkQueue::rebase_queue_clock`](crate::store::WorkQueue::rebase_queue_clock)); on a server it is
//! the server's clock, read in each session of the connection and every ten minutes, and followed on the local boot clock between
//! readings, so a host's wall-clock step moves no lease and hosts whose clocks disagree still
//! agree on who owns what.

use crate::store::engine::sql::Db;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds on the boot clock (`CLOCK_BOOTTIME`: it never jumps and counts time in
/// suspend). It restarts at each boot.
pub fn boot_clock_ms() -> i64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    now.tv_sec * 1000 + now.tv_nsec / 1_000_000
}

/// Milliseconds since the Unix epoch, the time unit of every stored time people read.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// How long a server's clock, once read, is followed on the boot clock before it is read again
/// (so a step of the server's clock, or a drift of either, is caught up with).
pub(in crate::store) const READ_SERVER_CLOCK_EVERY_MS: i64 = 10 * 60 * 1000;

/// The queue clock of one store: the boot clock plus `offset_ms` (0 for a file; for a server,
/// how far its clock is ahead of this host's boot clock, as read at `read_at` in `session`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::store) struct QueueClock {
    offset_ms: i64,
    /// Read from a server (else the file's: never read again).
    server: bool,
    /// The connection's session it was read in (see `Db::session`).
    session: u64,
    /// When it was read, on the boot clock.
    read_at: i64,
}

impl QueueClock {
    /// The queue clock of `db`: a server's is read from it (the middle of the round trip is
    /// taken as the moment it answered).
    pub fn of(db: &Db) -> Result<QueueClock, crate::store::engine::sql::SqlError> {
        if db.dialect() == crate::store::engine::sql::Dialect::Sqlite {
            return Ok(QueueClock::default());
        }
        let before = boot_clock_ms();
        let server: i64 = db
            .query_one(
                "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
                &[],
            )?
            .get(0)?;
        let after = boot_clock_ms();
        Ok(QueueClock {
            offset_ms: server - (before + after) / 2,
            server: true,
            // (Read after the query, which may have made the session again.)
            session: db.session(),
            read_at: after,
        })
    }

    /// Whether a server's clock must be read again, the connection being in `session` at
    /// `now` (boot clock): in another session than it was read in (the server may have
    /// restarted, on another machine), or after [`READ_SERVER_CLOCK_EVERY_MS`].
    pub fn is_due_again(self, session: u64, now: i64) -> bool {
        self.server && (session != self.session || now - self.read_at >= READ_SERVER_CLOCK_EVERY_MS)
    }

    pub fn now(self) -> i64 {
        boot_clock_ms() + self.offset_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_clock_is_read_again_in_a_new_session_or_after_a_while_a_files_never() {
        let read = QueueClock {
            offset_ms: 5,
            server: true,
            session: 2,
            read_at: 1_000,
        };
        assert!(!read.is_due_again(2, 1_000 + READ_SERVER_CLOCK_EVERY_MS - 1));
        assert!(read.is_due_again(3, 1_001));
        assert!(read.is_due_again(2, 1_000 + READ_SERVER_CLOCK_EVERY_MS));
        let file = QueueClock::default();
        assert!(!file.is_due_again(7, i64::MAX / 2));
    }
}
