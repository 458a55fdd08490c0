//! The clocks of the store: the wall clock for times people read; the boot clock for what one
//! host decides alone (its processes' deadlines), which no wall-clock step moves; and the queue
//! clock, what crawls' and snapshots' `retry_at` (queue eligibility, leases) is compared on.
//!
//! Invariant: every host sharing a store reads one queue clock. On an SQLite file (one host) it
//! is that host's boot clock, rebased at each start in another boot
//! ([`Store::rebase_queue_clock`]); on a server it is the server's clock, read once per
//! connection and then followed on the local boot clock, so a host's wall-clock step moves no
//! lease and hosts whose clocks disagree still agree on who owns what.

use super::sql::Db;
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

/// The queue clock of one store: the boot clock plus `offset_ms` (0 for a file; for a server,
/// how far its clock is ahead of this host's boot clock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct QueueClock {
    offset_ms: i64,
}

impl QueueClock {
    /// The queue clock of `db`: a server's is read from it (the middle of the round trip is
    /// taken as the moment it answered).
    pub fn of(db: &Db) -> Result<QueueClock, super::sql::SqlError> {
        if db.dialect() == super::sql::Dialect::Sqlite {
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
        })
    }

    pub fn now(self) -> i64 {
        boot_clock_ms() + self.offset_ms
    }
}
