//! The two clocks of the store: the wall clock for times people read, the boot clock for times
//! that decide (queue eligibility, leases, deadlines), which no wall-clock step moves.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds on the boot clock (`CLOCK_BOOTTIME`: it never jumps and counts time in
/// suspend), what queue eligibility and leases (`retry_at`) are compared on, so that a
/// wall-clock step neither stalls claims nor expires a lease early. It restarts at each boot: the
/// daemon rebases `retry_at` when it starts in another boot ([`Store::rebase_queue_clock`]).
pub fn queue_clock_ms() -> i64 {
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
