//! What the supervisor is told to apply: how each child is watched ([`ChildPolicy`]) and the
//! timing of teardowns, scans and log caps ([`Timing`]), built from the config where it is used.

use crate::config::Config;
use crate::domain::EndReason;
use crate::liveness::Recording;
use crate::signal::Signal;
use crate::teardown;
use std::time::Duration;

/// How a child is watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildPolicy {
    /// Record its descendants as `child` rows while it runs, and flag it leaking if it exits
    /// while they live on.
    pub scan_descendants: bool,
    /// Tear what it leaks down as soon as it exits (else with everything else, at the end).
    pub leftovers_now: bool,
}

impl ChildPolicy {
    pub const WORKER: ChildPolicy = ChildPolicy {
        scan_descendants: false,
        leftovers_now: true,
    };
    pub const FOREGROUND_HOOK: ChildPolicy = ChildPolicy {
        scan_descendants: true,
        leftovers_now: true,
    };
    pub const BACKGROUND_HOOK: ChildPolicy = ChildPolicy {
        scan_descendants: true,
        leftovers_now: false,
    };
}

/// Timing settings the supervisor applies.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub kill_grace: Duration,
    pub min_grace: Duration,
    pub descendant_scan: Duration,
    /// The most a scanned child's log file may grow to before it is truncated.
    pub max_log_bytes: u64,
}

impl Timing {
    /// The timing `config` asks for.
    pub fn from_config(config: &Config) -> Timing {
        Timing {
            kill_grace: config.timeouts.kill_grace,
            min_grace: config.timeouts.min_grace,
            descendant_scan: config.timeouts.descendant_scan,
            max_log_bytes: config.limits.max_log_bytes,
        }
    }

    /// How a child is stopped at the end of its scope: SIGTERM, each process until its own
    /// deadline but at least `min_grace`, then SIGKILL.
    pub fn stop_at_end(&self, root: i64, reason: EndReason) -> teardown::Request {
        teardown::Request {
            root_row: root,
            signal: Signal::TERM,
            grace: self.min_grace,
            own_deadlines: true,
            reason,
            recording: Recording::ChildRows,
        }
    }
}
