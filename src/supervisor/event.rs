//! What a supervisor's loop tells its caller ([`Event`]), and who, in a supervising process,
//! started a child and handles its exit ([`Owner`], a type per kind of process): the tag a child
//! is spawned with ([`Supervisor::spawn`](super::Supervisor::spawn)) and that its exit — and the
//! report of its teardown — comes back with, as systemd routes a SIGCHLD through its pid → unit
//! map, so each goes straight to its owner instead of being offered to each in turn.
//!
//! Invariant: every child has exactly one owner, set when it is spawned and never changed.

use crate::domain::{EndReason, ExitOutcome};
use crate::signal::Signal;
use crate::teardown::Report;
use mio::Token;

/// Something the caller must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<O> {
    /// A child was reaped and its row made final. `leaked`: processes it started live on.
    Exited {
        row_id: i64,
        /// Who started it, and handles its exit.
        owner: O,
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
    /// A teardown finished. `owner`: who owns its root row, when that row was a child of this
    /// process as the teardown began (its report goes to that owner, as its exit does); `None`
    /// for what was no child of it (orphan trees, a deeper row).
    TornDown { report: Report, owner: Option<O> },
}

/// Who, in one kind of supervising process, started a child and handles its exit: each kind
/// has a type of its own ([`DaemonChild`], [`CrawlWorkerChild`], [`SnapshotWorkerChild`]), so
/// what it matches holds only the owners it has.
pub trait Owner: Copy + Eq + std::fmt::Debug + std::fmt::Display + 'static {}

/// An owner of hooks: a process that runs a scope's hooks (`hooks::HookRunner`).
pub trait RunsHooks: Owner {
    /// The owner of its hooks.
    const HOOKS: Self;
}

/// The owners of the daemon's children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DaemonChild {
    /// Its crawl workers (a `pool::WorkerPool`).
    CrawlWorkers,
    /// Its workers of snapshots lent to other machines' crawls (`daemon::fleet`).
    LentSnapshotWorkers,
    /// Its installs of the plugins' binaries (`daemon::install`).
    Installer,
    /// Its exports of sealed crawls into ArchiveBox collections (`daemon::export`).
    Exporter,
    /// Its turns of serving an ArchiveBox collection's queue (`daemon::archivebox`).
    QueueServer,
    /// A process an operator started with `abxctl spawn` (a debugging aid): nobody's work.
    Operator,
}

/// The owners of a crawl worker's children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrawlWorkerChild {
    /// Its snapshot workers (a `pool::WorkerPool`).
    SnapshotWorkers,
    /// The crawl's hooks (`hooks::HookRunner`).
    Hooks,
}

/// The owner of a snapshot worker's children: the snapshot's hooks (`hooks::HookRunner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SnapshotWorkerChild {
    Hooks,
}

impl Owner for DaemonChild {}
impl Owner for CrawlWorkerChild {}
impl Owner for SnapshotWorkerChild {}

impl RunsHooks for CrawlWorkerChild {
    const HOOKS: Self = CrawlWorkerChild::Hooks;
}

impl RunsHooks for SnapshotWorkerChild {
    const HOOKS: Self = SnapshotWorkerChild::Hooks;
}

impl std::fmt::Display for DaemonChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DaemonChild::CrawlWorkers => "crawl workers",
            DaemonChild::LentSnapshotWorkers => "lent snapshot workers",
            DaemonChild::Installer => "installer",
            DaemonChild::Exporter => "exporter",
            DaemonChild::QueueServer => "ArchiveBox's queue",
            DaemonChild::Operator => "operator's processes",
        })
    }
}

impl std::fmt::Display for CrawlWorkerChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CrawlWorkerChild::SnapshotWorkers => "snapshot workers",
            CrawlWorkerChild::Hooks => "hooks",
        })
    }
}

impl std::fmt::Display for SnapshotWorkerChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("hooks")
    }
}
