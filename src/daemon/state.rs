//! The daemon's own state, apart from the loop and the socket: what its handlers read and
//! change, one field per concern (each owned by the room that names it).
//!
//! Invariant: only the daemon's loop thread holds it (see `daemon`).

use super::{archivebox, database, export, fleet, handlers, install};
use crate::config::Config;
use crate::pool::WorkerPool;
use crate::signal::Signal;
use crate::store::Store;
use crate::supervisor::DaemonChild;
use mio::Token;
use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

/// The daemon's own state, apart from the loop and the socket: what handlers read and change.
pub(super) struct State {
    pub(super) config: Config,
    /// How processes are contained (cgroup v2 or procfs), as the start-up settled it.
    pub(super) containment: crate::cgroup::Containment,
    /// Whether the kernel can hold a crawl's hooks to its egress policy here (a cgroup of
    /// abxd's own, and the right to load cgroup BPF programs), or why not.
    pub(super) egress: Result<(), String>,
    pub(super) store: Store,
    pub(super) orchestrator_id: i64,
    pub(super) started_at_ms: i64,
    pub(super) stopping: bool,
    /// The crawl workers.
    pub(super) crawls: WorkerPool<DaemonChild>,
    /// Look for due crawls at the next turn.
    pub(super) wake: bool,
    /// After the store failed a claim or a recovery: when to try again.
    pub(super) retry_claims_at: Option<Instant>,
    /// A recovery failed: recover all ownerless work at the next retry.
    pub(super) retry_recovery: bool,
    /// Connections waiting for the teardown of a row to finish.
    pub(super) waiting: HashMap<i64, Vec<Token>>,
    /// Crawls to enqueue that the busy database refused so far (see `handlers::add`).
    pub(super) parked_requests: Vec<handlers::ParkedRequest>,
    /// A large write-ahead log could not be truncated yet: when to try again (see `database`).
    pub(super) truncate_wal_at: Option<Instant>,
    /// `[retention]` left rows to prune at the next turn (see `handlers::apply_retention`).
    pub(super) prune_more_at: Option<Instant>,
    /// The daemon's look at free space where it writes (`disk`).
    pub(super) disk: crate::disk::Watch,
    /// Orphan trees of a previous incarnation still being torn down: no work is claimed until
    /// they are gone, then ownerless work is recovered.
    pub(super) orphans: BTreeSet<i64>,
    /// The install under way, if any.
    pub(super) installer: install::Installer,
    /// The export into an ArchiveBox collection under way, if any.
    pub(super) exporter: export::Exporter,
    /// Serving an ArchiveBox collection's queue (`[archivebox] serve_queue`).
    pub(super) queue_server: archivebox::QueueServer,
    /// Claim no crawls (`abxd install` runs the daemon only to install).
    pub(super) claims_off: bool,
    /// The database file was deleted or replaced under the daemon (see `database`).
    pub(super) database_lost: Option<database::Lost>,
    /// Its part in a fleet (on a shared store): heartbeat, take-overs, lent snapshot slots.
    pub(super) fleet: fleet::Fleet,
    /// What the daemon exits with after a clean shutdown.
    pub(super) exit_code: i32,
    /// The signal that asked for the shutdown, if one did.
    pub(super) stopped_by: Option<Signal>,
    /// The cgroups a previous incarnation left, being emptied (see `stale`).
    pub(super) stale_cgroups: crate::cgroup::Emptying,
    /// Who crawl hooks run as — or why no crawl may start: they would run as root unasked
    /// (`hook_user`).
    pub(super) hooks: Result<crate::hook_user::RunAs, String>,
    /// When the next schedule is due, as last read (see `schedules`).
    pub(super) schedules_at: Option<i64>,
}

impl State {
    /// Whether work may be claimed now (no orphan tree of a previous incarnation left either).
    pub(super) fn claiming(&self) -> bool {
        !self.stopping
            && self.orphans.is_empty()
            && !self.claims_off
            && self.database_lost.is_none()
    }
}
