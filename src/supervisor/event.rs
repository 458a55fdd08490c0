//! What a supervisor's loop tells its caller ([`Event`]), and who, in a supervising process,
//! started a child and handles its exit ([`Owner`]): the tag a child is spawned with ([`Supervisor::spawn`](super::Supervisor::spawn)) and that its exit comes back
//! with ([`Event::Exited`](super::Event::Exited)) — as systemd routes a SIGCHLD through its
//! pid → unit map — so an exit goes straight to its owner instead of being offered to each in
//! turn.
//!
//! Invariant: every child has exactly one owner, set when it is spawned and never changed.

use crate::domain::{EndReason, ExitOutcome};
use crate::signal::Signal;
use crate::teardown::Report;
use mio::Token;

/// Something the caller must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A child was reaped and its row made final. `leaked`: processes it started live on.
    Exited {
        row_id: i64,
        /// Who started it, and handles its exit.
        owner: Owner,
        pid: i32,
        outcome: ExitOutcome,
        reason: EndReason,
        leaked: bool,
    },
    /// SIGTERM, SIGINT or SIGHUP arrived.
    Signal(Signal),
    /// A source the caller registered is ready.
    Ready(Token),
    /// The caller's timer passed.
    Timer,
    /// The lease could not be renewed: someone else owns the work now.
    LeaseLost,
    /// A teardown finished.
    TornDown(Report),
}

/// The owner of a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// The daemon's crawl workers (a `pool::WorkerPool`).
    CrawlWorkers,
    /// A crawl worker's snapshot workers (a `pool::WorkerPool`).
    SnapshotWorkers,
    /// The daemon's workers of snapshots lent to other machines' crawls (`daemon::fleet`).
    LentSnapshotWorkers,
    /// A scope's hooks (`hooks::HookRunner`).
    Hooks,
    /// The daemon's installs of the plugins' binaries (`daemon::install`).
    Installer,
    /// The daemon's exports of sealed crawls into ArchiveBox collections (`daemon::export`).
    Exporter,
    /// A process an operator started with `abxctl spawn` (a debugging aid): nobody's work.
    Operator,
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Owner::CrawlWorkers => "crawl workers",
            Owner::SnapshotWorkers => "snapshot workers",
            Owner::LentSnapshotWorkers => "lent snapshot workers",
            Owner::Hooks => "hooks",
            Owner::Installer => "installer",
            Owner::Exporter => "exporter",
            Owner::Operator => "operator's processes",
        })
    }
}
