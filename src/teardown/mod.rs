//! Teardown: the deadline map that stops whole process trees — the first signal (SIGTERM) to
//! every process of a tree at once, SIGKILL to whatever is left at each one's deadline.
//!
//! A tree is keyed by a process row (never a name or a bare pid) and holds every live process of
//! that row's subtree: the rows below it in the table, their descendants in procfs, and every
//! process carrying the marker of one of those rows. Invariants:
//! - every signal goes through a pidfd opened for the process and confirmed to be it after opening
//!   (by its pidfd inode where the kernel has pidfs: `identity::PidRef`, `proctree::pin`), so
//!   no signal reaches a pid that was reused, even within one start tick; a row whose process is
//!   found gone is made final before the teardown goes on;
//! - every signal sent is recorded on the process's row, with when SIGKILL is due;
//! - a tree is finished only when procfs shows none of it — every member gone and a fresh
//!   enumeration (descendants and markers) finding nothing — never because a signal was sent;
//!   at a deadline SIGKILL goes to the known members at once, then a re-enumeration finds what
//!   forked meanwhile, killed too;
//! - a process still alive [`SURVIVOR_WAIT`] after SIGKILL (e.g. in uninterruptible sleep) is
//!   flagged `unkillable` on its row, with its state and wait channel, and in the report: the
//!   tree finishes without it (its scope must not wait for ever), its row stays live until it
//!   finally ends and its reaper records that;
//! - the records of one turn of the loop (ends of members seen gone, SIGKILLs due together) are
//!   written in one transaction, and kept on the tree until that commits: a failed batch loses
//!   none of them, and a tree does not finish before they are written;
//! - waiting is driven by pidfd readiness and reaping, and by one timer at the earliest deadline;
//! - within one turn of the loop ([`DeadlineMap::start_sharing_scans`]) the marker scan — which reads
//!   every process's environment — is made once and shared by every tree, but a tree is only
//!   finished on a scan made after its last member was seen gone.
//!
//! This file holds the map and how a teardown learns that processes went; `begin` how it
//! begins (everything read first, then one transaction, then the signals);
//! `expire` the deadlines (SIGKILL, survivors) and how a tree finishes; `member` how one process
//! joins a tree and is signalled, and its records (written once per turn, kept while refused);
//! `scan` what belongs to a tree (cgroups, procfs descendants, markers — among this process's
//! children where everything leaving the tree comes here, else one host scan per turn).

mod begin;
mod expire;
mod member;
mod scan;

pub use expire::{Fate, Report};
pub use member::flag_escaped;
use member::Unwritten;

use crate::cgroup::{Cgroup, EventsWatch};
use crate::domain::{EndReason, Kind};
use crate::identity::Identity;
use crate::identity::PidRef;
use crate::liveness::Recording;
use crate::proctree::Found;
use crate::signal::Signal;
use crate::store::Store;
use mio::unix::SourceFd;
use mio::{Registry, Token};

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// A process about to join a tree: what was read of it, the handle it was pinned by (`None`:
/// gone when pinned), its row and kind if it has one, and its deadline.
struct Candidate {
    process: Found,
    pinned: Option<PidRef>,
    row_id: Option<i64>,
    kind: Option<Kind>,
    deadline: Instant,
}

impl Candidate {
    /// A process found without a row of its own (a descendant), due at `deadline`.
    fn found(process: Found, pinned: Option<PidRef>, deadline: Instant) -> Candidate {
        Candidate {
            process,
            pinned,
            row_id: None,
            kind: None,
            deadline,
        }
    }
}

/// The pidfds of the members, registered with the loop: readable when a member ended.
struct PidfdWatches {
    registry: Registry,
    /// Token → (root row of the member's tree, its pid).
    tokens: HashMap<Token, (i64, i32)>,
    next_token: usize,
}

/// A scan of every process carrying a marker, by row, and when it was made.
type MarkerScan = (Instant, BTreeMap<i64, Vec<Found>>);

/// How long a process may stay alive after SIGKILL before it is reported as a survivor.
pub const SURVIVOR_WAIT: Duration = Duration::from_secs(10);

/// The first token the map uses (its cgroup watch, then pidfds); tokens below are the caller's.
pub const FIRST_TOKEN: usize = 1 << 20;

/// The token of the watch on the `cgroup.events` of trees' cgroups.
const CGROUP_WATCH: Token = Token(FIRST_TOKEN);

/// How to tear a tree down.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// The row whose subtree goes.
    pub root_row: i64,
    /// The first signal (SIGTERM unless asked otherwise).
    pub signal: Signal,
    /// Time between the first signal and SIGKILL.
    pub grace: Duration,
    /// Give each process with a deadline of its own until that deadline instead, but at least
    /// `grace` (the end of a snapshot, crawl or daemon: `min_grace`, `supervisor.toml(5)`).
    pub own_deadlines: bool,
    /// The end reason rows get from this teardown.
    pub reason: EndReason,
    /// Which rows of the tree this teardown makes final when their process goes: `child` rows
    /// only, or — for orphans, whose parents are gone and will reap nothing — every row.
    pub recording: Recording,
}

struct Member {
    identity: Identity,
    row_id: Option<i64>,
    /// Its row's kind (`child` for a process found without a row).
    kind: Kind,
    command: String,
    /// The handle every signal to it goes through (`None`: gone when pinned).
    pinned: Option<PidRef>,
    token: Option<Token>,
    deadline: Instant,
    signalled_at: Option<Instant>,
    killed_at: Option<Instant>,
    gone_at: Option<Instant>,
    /// The state it was in when reported as a survivor of SIGKILL.
    survived: Option<char>,
    /// Its first signal is recorded but not sent yet (see [`DeadlineMap::begin_all`]).
    unsignalled: bool,
}

struct Tree {
    request: Request,
    /// Rows whose markers belong to this tree.
    rows: Vec<i64>,
    /// The cgroups of its rows that have one (cgroup containment), by row: what is in them
    /// belongs to the tree, and a hook's or descendant's is killed whole at its deadline.
    cgroups: BTreeMap<i64, (Kind, Cgroup)>,
    members: BTreeMap<i32, Member>,
    /// Its root is a child row of this process, a child subreaper: whatever leaves the tree is
    /// re-parented here, so this process's own children show it (no marker scan of the host).
    leavers_come_here: bool,
    /// Records of its rows not written yet: ends of members seen gone this turn of the loop
    /// (written together at its end, [`DeadlineMap::write_records`]) and what the database
    /// refused (tried again): the tree does not finish before they are written.
    unwritten: Vec<Unwritten>,
    /// Rows whose first signal is already recorded (by another teardown), with when their
    /// SIGKILL was said to be due.
    announced: HashMap<i64, i64>,
}

pub struct DeadlineMap {
    watches: PidfdWatches,
    instance: String,
    /// The row of this process, if it is a child subreaper (see `Tree::leavers_come_here`).
    subreaper_row: Option<i64>,
    trees: BTreeMap<i64, Tree>,
    completed: Vec<Report>,
    /// While scans are shared: the marker scan of this turn and when it was made, once made.
    shared_scan: Option<Option<MarkerScan>>,
    /// Watches the cgroups of trees whose members are all gone but whose cgroups still hold a
    /// process (made when first needed).
    cgroup_watch: Option<EventsWatch>,
}

impl DeadlineMap {
    /// `subreaper_row`: the row of the process the map runs in, if that process is a child
    /// subreaper.
    pub fn new(registry: Registry, instance: String, subreaper_row: Option<i64>) -> DeadlineMap {
        DeadlineMap {
            watches: PidfdWatches {
                registry,
                tokens: HashMap::new(),
                next_token: FIRST_TOKEN + 1,
            },
            instance,
            subreaper_row,
            trees: BTreeMap::new(),
            cgroup_watch: None,
            completed: Vec::new(),
            shared_scan: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.trees.is_empty()
    }

    /// Whether process `pid` is a member of a teardown under way.
    pub fn has_member(&self, pid: i32) -> bool {
        self.trees.values().any(|t| t.members.contains_key(&pid))
    }

    /// Whether a teardown rooted at row `row` is under way.
    pub fn is_tearing_down(&self, row: i64) -> bool {
        self.trees.contains_key(&row)
    }

    /// Whether `token` is one of this map's pidfds or its cgroup watch.
    pub fn owns(&self, token: Token) -> bool {
        token == CGROUP_WATCH || self.watches.tokens.contains_key(&token)
    }

    /// The end reason a teardown gives row `row_id`, if one is tearing it down.
    pub fn reason_for(&self, row_id: i64) -> Option<EndReason> {
        self.trees.values().find_map(|tree| {
            tree.members
                .values()
                .any(|m| m.row_id == Some(row_id))
                .then_some(tree.request.reason)
        })
    }

    /// The row of member `pid` of a teardown under way, if it has one, and the end reason that
    /// teardown gives: for a reaper recording the end of a process re-parented to it, without
    /// asking the database which live row has that pid.
    pub fn member_row(&self, pid: i32) -> Option<(i64, EndReason)> {
        self.trees.values().find_map(|tree| {
            let row = tree.members.get(&pid)?.row_id?;
            Some((row, tree.request.reason))
        })
    }

    /// When records the database refused are to be tried again (written at every turn: see
    /// `write_records`): when the store's back-off ends if the lock held them back, else a little
    /// later — a full disk is not tried in a spin. None: nothing waits.
    pub fn retry_at(&self, store: &Store) -> Option<Instant> {
        let waiting = self.trees.values().any(|t| !t.unwritten.is_empty());
        let outbox = store.outbox();
        waiting.then(|| outbox.when_to_retry(outbox.busy_since().is_some()))
    }

    /// The earliest moment something is due: a SIGKILL, a survivor check.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.trees
            .values()
            .flat_map(|t| t.members.values())
            .filter(|m| m.gone_at.is_none())
            .map(|m| match m.killed_at {
                None => m.deadline,
                Some(killed) => killed + SURVIVOR_WAIT,
            })
            .min()
    }

    /// Pidfds became readable (their processes have ended), or a watched cgroup changed: every
    /// process seen gone this turn is marked so before any tree is checked for being finished,
    /// so that the trees finishing in one turn share one fresh enumeration (made after the last
    /// of them went) instead of one each (recovery tearing down a hundred orphan trees made
    /// dozens of marker scans of the host).
    pub fn on_ready_all(&mut self, store: &Store, tokens: &[Token]) {
        let mut roots: Vec<i64> = Vec::new();
        for &token in tokens {
            if token == CGROUP_WATCH {
                if let Some(watch) = &mut self.cgroup_watch {
                    watch.drain();
                }
                roots.extend(self.trees.iter().filter_map(|(root, tree)| {
                    tree.members
                        .values()
                        .all(|m| m.gone_at.is_some())
                        .then_some(*root)
                }));
            } else if let Some((root, pid)) = self.watches.tokens.remove(&token) {
                self.note_gone(store, root, pid, false);
                roots.push(root);
            }
        }
        roots.sort_unstable();
        roots.dedup();
        for root in roots {
            self.finish_if_empty(store, root);
        }
    }

    /// A process was reaped by its parent (us), which recorded its end: it is gone.
    pub fn on_reaped(&mut self, store: &Store, pid: i32) {
        let roots: Vec<i64> = self
            .trees
            .iter()
            .filter(|(_, t)| t.members.contains_key(&pid))
            .map(|(root, _)| *root)
            .collect();
        for root in roots {
            self.mark_gone(store, root, pid, true);
        }
    }

    /// Member `pid` of tree `root` is gone; `reaped`: by us, who recorded its end.
    fn mark_gone(&mut self, store: &Store, root: i64, pid: i32, reaped: bool) {
        self.note_gone(store, root, pid, reaped);
        self.finish_if_empty(store, root);
    }

    /// [`DeadlineMap::mark_gone`] without looking whether the tree is finished.
    fn note_gone(&mut self, store: &Store, root: i64, pid: i32, reaped: bool) {
        let Some(tree) = self.trees.get_mut(&root) else {
            return;
        };
        if let Some(member) = tree.members.get_mut(&pid) {
            if member.gone_at.is_none() {
                member.gone_at = Some(Instant::now());
                if let Some(pinned) = member.pinned.take() {
                    let _ = self
                        .watches
                        .registry
                        .deregister(&mut SourceFd(&pinned.raw_fd()));
                }
                // A descendant's end is recorded by whoever sees it first. A row of another kind
                // (hook, worker) is made final by whoever reaps it — its parent, or the abxd
                // process above it that it is re-parented to — which knows its status.
                if !reaped {
                    let detail = "exit status unknown: not a child of the process that saw it end";
                    let row = (member.row_id, member.kind);
                    member::end_unobserved(tree, store, row, pid, detail);
                }
            }
        }
    }

    /// Whether finished teardowns wait to be taken.
    pub fn has_completed(&self) -> bool {
        !self.completed.is_empty()
    }

    /// Reports of the teardowns finished since the last call.
    pub fn take_completed(&mut self) -> Vec<Report> {
        std::mem::take(&mut self.completed)
    }
}

#[cfg(test)]
mod tests;
