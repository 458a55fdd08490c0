//! How a teardown begins: everything the trees cover is read first (rows, procfs), then what
//! it records is written in one transaction, then the first signals go out.
//!
//! Invariants: no signal is sent before the transaction that records it has ended — committed,
//! so whoever reaps the process sees why it ended; or failed (a full disk, a busy database), and
//! then the signal goes out all the same, for a teardown must not wait on the database: what
//! the busy database refused is kept on the tree and written later (`member::Unwritten`); a
//! failure of another kind is counted in `Store::failed_writes`, and the supervisor goes over
//! its rows again (`supervisor::unrecorded`), so an end may then be written before the signal
//! that caused it.
//! The write lock — shared by every abxd process of the data dir — is held only for the writes,
//! never across procfs reads.

use super::member::{self, add_member, signal_member, tree_rows};
use super::{Candidate, DeadlineMap, Request, Tree};
use crate::cgroup::Cgroup;
use crate::liveness::Recording;
use crate::store::{boot_clock_ms, Store};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// What the start of a teardown found of its tree, before anything is written: the processes
/// to make members, and the ends of rows whose process is gone.
struct Gathered {
    root: i64,
    found: Vec<Candidate>,
    gone: Vec<member::Unwritten>,
}

impl DeadlineMap {
    /// Starts tearing down the subtree of each request's `root_row` (or adds what is new to a
    /// teardown of it already under way). What it records is one transaction, then the signals.
    ///
    /// Every signal is recorded before it is sent (whoever reaps a process must see why it
    /// ended), so the transaction is committed before the signals go out: not to be called
    /// inside another [`Store::batch`].
    pub fn begin_all(&mut self, store: &Store, requests: Vec<Request>) {
        debug_assert!(
            !store.in_batch(),
            "a teardown's signals would precede their records"
        );
        let roots: Vec<i64> = requests.iter().map(|r| r.root_row).collect();
        // Everything is read (rows, procfs) before the first write: the write lock, which every
        // abxd process of the data dir shares, is held only for the writes.
        let gathered: Vec<Gathered> = requests
            .into_iter()
            .map(|request| self.gather(store, request))
            .collect();
        store.batch(|store| {
            for gathered in gathered {
                self.enlist(store, gathered);
            }
        });
        // Supervisors first: a worker hears of the teardown before its children end, and
        // leaves the teardown to this one (see `supervisor::above`).
        for supervisors in [true, false] {
            for root in &roots {
                let Some(tree) = self.trees.get_mut(root) else {
                    continue;
                };
                let signal = tree.request.signal;
                for member in tree.members.values_mut() {
                    if member.kind.is_supervisor() == supervisors
                        && std::mem::take(&mut member.unsignalled)
                    {
                        signal_member(member, signal);
                    }
                }
            }
        }
    }

    /// Reads what tree `request` covers: its live rows, their processes (pinned), and what
    /// else belongs to it — without writing anything.
    fn gather(&mut self, store: &Store, request: Request) -> Gathered {
        let rows = match store.processes().live_subtree(request.root_row) {
            Ok(rows) => rows,
            Err(err) => {
                log::error!(
                    "teardown of row {}: cannot read its rows: {err}",
                    request.root_row
                );
                Vec::new()
            }
        };
        // (Orphans of a previous incarnation went wherever the kernel put them.)
        let leavers_come_here = request.recording == Recording::ChildRows
            && self.subreaper_row.is_some_and(|own| {
                matches!(store.processes().get(request.root_row), Ok(Some(root))
                    if root.parent_id == Some(own))
            });
        let tree = self.trees.entry(request.root_row).or_insert_with(|| Tree {
            request,
            rows: vec![request.root_row],
            cgroups: BTreeMap::new(),
            members: BTreeMap::new(),
            leavers_come_here,
            unwritten: Vec::new(),
            announced: HashMap::new(),
        });
        for row in &rows {
            // (A row whose first signal another teardown recorded, e.g. one of an abxd process
            // above this one, needs no second record unless SIGKILL comes sooner now.)
            if let (Some(_), Some(kill_at)) = (row.sigterm_at, row.kill_at) {
                tree.announced.insert(row.id, kill_at);
            }
            if !tree.rows.contains(&row.id) {
                tree.rows.push(row.id);
            }
            if let Some(dir) = &row.cgroup {
                tree.cgroups.insert(row.id, (row.kind, Cgroup::at(dir)));
            }
        }
        let now = Instant::now();
        // (On the boot clock: a wall-clock step changes no deadline.)
        let own_deadline = |deadline_clock: Option<i64>| -> Option<Instant> {
            match (request.own_deadlines, deadline_clock) {
                (true, Some(at)) => {
                    let remaining = Duration::from_millis((at - boot_clock_ms()).max(0) as u64);
                    Some(now + remaining.max(request.grace))
                }
                _ => None,
            }
        };
        // What has no deadline of its own (a worker, a descendant) goes last: it may be waiting
        // on the others.
        let default_deadline = rows
            .iter()
            .filter_map(|r| own_deadline(r.deadline_clock))
            .max()
            .unwrap_or(now)
            .max(now + request.grace);
        let deadline_of =
            |deadline_clock: Option<i64>| own_deadline(deadline_clock).unwrap_or(default_deadline);
        // Recorded processes of the subtree that are still the recorded process, each with a
        // pidfd confirmed to be it.
        let (mut found, gone, unwritten) = member::pin_rows(&rows, &request, deadline_of);
        let known: Vec<i32> = found.iter().map(|c| c.process.identity.pid).collect();
        let rows = tree_rows(&self.trees, request.root_row);
        let discovered = self.enumerate(request.root_row, &known, &rows, None);
        for (process, pinned) in discovered {
            found.push(Candidate::found(process, pinned, default_deadline));
        }
        if let Some(tree) = self.trees.get_mut(&request.root_row) {
            tree.unwritten.extend(unwritten);
        }
        Gathered {
            root: request.root_row,
            found,
            gone,
        }
    }

    /// Makes what [`DeadlineMap::gather`] found members of its tree, writing their records
    /// (within the caller's batch); the signals are sent after the batch commits.
    fn enlist(&mut self, store: &Store, gathered: Gathered) {
        let Gathered { root, found, gone } = gathered;
        let Some(tree) = self.trees.get_mut(&root) else {
            return;
        };
        for end in gone {
            end.write_or_keep(store, tree);
        }
        for candidate in found {
            add_member(store, &mut self.watches, tree, candidate, false);
        }
        self.finish_if_empty(store, root);
    }
}
