//! What lives below a child: the descendants of scanned children (recorded as `child` rows while
//! they run), what an exited child leaves behind (its leftovers), and the cap on its log files.
//! (What left a tree and was re-parented here is `escapees`'.)
//!
//! Invariants: a descendant is found as a procfs descendant of the child (or of a descendant
//! recorded before), in the child's cgroup, or — re-parented here — as an unknown child, and
//! recorded once, below the row of its parent where that is known; a recorded descendant that is
//! no longer found is made final here unless an abxd reaper will record its status
//! (`liveness::finish_unobserved`). Leftovers are counted by row identity and by marker, so a
//! process that double-forked away still counts.

use super::children::{Child, Descendant};
use super::decide::{self, descendant_changes, Leftovers};
use super::Owner;
use super::Supervisor;
use crate::domain::EndReason;
use crate::liveness::{self, Recording};
use crate::marker;
use crate::proctree::{self, Found};
use crate::signal::Signal;
use crate::store::Store;
use std::collections::HashMap;
use std::time::Instant;

/// The end detail of a descendant that ended where no one here could see its exit status.
const UNKNOWN_EXIT: &str = "ended; exit status unknown (not a child of its supervisor)";

/// The end detail of a row whose process was never started: its parent died while starting it.
const NEVER_STARTED: &str = "never started: its parent ended while starting it";

impl<O: Owner> Supervisor<O> {
    /// After a child exited: settles what it leaves (see `descendants::count_leftovers`) and,
    /// if processes of its subtree live on, flags it leaking and tears them down now or at the
    /// end, as `decide::after_exit` says. Returns whether it leaked.
    pub(super) fn settle_leftovers(&mut self, store: &Store, child: &Child<O>) -> bool {
        // (Torn down from above: what it left is that teardown's, not a leak.)
        if self.covered_from_above() {
            return false;
        }
        // Contained in a cgroup, it needs no marker scan: its cgroup holds what it left. Nor
        // does it when this process is a subreaper with no child it does not know: whatever a
        // child leaves alive is re-parented here (the topmost survivor of each branch), so
        // nothing was left (see `Supervisor::has_unknown_children`).
        let by_marker = child.policy.scan_descendants
            && child.cgroup.is_none()
            && (!self.subreaper || self.has_unknown_children());
        let (by_rows, all_written) =
            count_leftovers(store, &self.instance, child.row_id, by_marker);
        if !all_written {
            // (The database was out of reach: the rows below it are gone over again once it
            // answers, before this process exits.)
            self.unrecorded.look_again(Instant::now());
        }
        // Contained: whatever is still in its cgroup is left behind, found or not.
        let in_cgroup = child.cgroup.as_ref().map_or(0, |c| c.procs().len());
        let alive = by_rows.max(in_cgroup);
        let leftovers = decide::after_exit(child.policy, alive, self.ending);
        if leftovers.leaked() {
            log::warn!("row {} exited leaving processes behind", child.row_id);
            let row = child.row_id;
            store
                .outbox()
                .write(format!("row {row}'s leaking flag"), move |store| {
                    store.processes().set_leaking(row)
                });
        }
        if leftovers != Leftovers::None {
            // (Their teardown's report goes to the child's owner, as its exit did.)
            self.stopping.insert(child.row_id, child.owner);
        }
        match leftovers {
            Leftovers::None => {}
            Leftovers::StopNow => {
                let grace = self.timing.kill_grace;
                self.stop(store, child.row_id, Signal::TERM, grace, EndReason::Killed);
            }
            Leftovers::StopAtEnd => self.leftovers.push(child.row_id),
        }
        leftovers.leaked()
    }

    /// Whether a process this supervisor did not start (or has finished with) is its child:
    /// one re-parented here, or one of a teardown under way. Reads this process's children
    /// lists only, never the host's process table.
    fn has_unknown_children(&self) -> bool {
        let me = std::process::id() as i32;
        proctree::children_of(me)
            .into_iter()
            .any(|pid| !self.children.has_pid(pid))
    }

    /// Records the descendants of scanned children that appeared since the last scan, and the
    /// end of those that went; caps their logs.
    /// The next scan comes `descendant_scan` later while the trees change, less often while they
    /// do not (`decide::next_scan_interval`).
    pub(super) fn scan_descendants(&mut self, store: &Store) {
        // (Torn down from above: that teardown enumerates the tree.)
        if self.covered_from_above() {
            self.next_scan = None;
            return;
        }
        let scanned = self.children.scanned();
        let mut changed = false;
        for pid in &scanned {
            let Some(child) = self.children.get_mut(*pid) else {
                continue;
            };
            for log in [&child.logs.0, &child.logs.1] {
                super::log_cap::cap_log(log, self.timing.max_log_bytes);
            }
            changed |= scan(store, *pid, child);
        }
        // (An unknown child is something that left a tree: look again soon.)
        changed |= !self.adopt_unknown_children(store).is_empty();
        let base = self.timing.descendant_scan;
        self.scan_every = decide::next_scan_interval(self.scan_every, base, changed);
        self.next_scan = (!scanned.is_empty()).then(|| Instant::now() + self.scan_every);
    }
}

/// Records the descendants of the child `pid` that appeared since the last scan, and the end
/// of those that went (by their pidfds: a recorded process whose pid was taken again by another
/// is ended, and the other is new). Returns whether any appeared or went.
fn scan<O>(store: &Store, pid: i32, child: &mut Child<O>) -> bool {
    let now_found: HashMap<i32, Found> = match &child.cgroup {
        // Contained: its cgroup holds its descendants, wherever they went in the process tree.
        // What was recorded before and whose pidfd is still open is that process: not read
        // again (a tree that sleeps costs one read of its cgroup per scan).
        Some(cgroup) => cgroup
            .procs()
            .into_iter()
            .filter(|&p| p != pid)
            .filter_map(|p| still_running(child, p).or_else(|| proctree::read(p)))
            .map(|f| (f.identity.pid, f))
            .collect(),
        // Not contained: its procfs descendants, and those of the descendants recorded before,
        // wherever they were re-parented. No marker scan (it reads every process's environment,
        // a cost that grows with the host): what leaves the tree unrecorded is re-parented to
        // this process, a subreaper, and adopted by `adopt_unknown_children` at the same scan;
        // markers are looked for where it matters, at the child's end and in teardowns.
        None => {
            let recorded: Vec<i32> = child
                .descendants
                .iter()
                .filter(|(_, d)| !d.pinned.has_ended())
                .map(|(pid, _)| *pid)
                .collect();
            let roots: Vec<i32> = std::iter::once(pid)
                .chain(recorded.iter().copied())
                .collect();
            let mut found: HashMap<i32, Found> = proctree::descendants_of(&roots)
                .into_iter()
                .map(|f| (f.identity.pid, f))
                .collect();
            for pid in recorded {
                if let Some(process) = proctree::read(pid) {
                    found.entry(pid).or_insert(process);
                }
            }
            found
        }
    };
    let me = std::process::id() as i32;
    let mut ended: Vec<(i32, i64)> = Vec::new();
    let mut known: HashMap<i32, i64> = HashMap::new();
    for (pid, descendant) in &mut child.descendants {
        let now = now_found
            .get(pid)
            .filter(|f| f.identity.start_ticks == descendant.identity.start_ticks);
        match now {
            Some(found) if !descendant.pinned.has_ended() => {
                known.insert(*pid, descendant.row);
                if found.ppid == me && !descendant.escaped {
                    crate::teardown::flag_escaped(store, descendant.row);
                    descendant.escaped = true;
                }
            }
            _ => ended.push((*pid, descendant.row)),
        }
    }
    let changes = descendant_changes(&known, &now_found);
    ended.extend(changes.ended);
    let changed = !ended.is_empty() || !changes.new.is_empty();
    for (gone, row) in ended {
        child.descendants.remove(&gone);
        // (A failed write is settled by `unrecorded`: the row is in this process's subtree.)
        let _ = liveness::finish_unobserved(
            store,
            row,
            crate::domain::Kind::Child,
            Some(gone),
            Recording::ChildRows,
            EndReason::Unknown,
            UNKNOWN_EXIT,
        );
    }
    for found in changes.new {
        // Pinned now: what is recorded is the process the pidfd means (gone already: nothing).
        let Some((found, pinned)) = proctree::pin(found.identity.pid) else {
            continue;
        };
        let parent = child
            .descendants
            .get(&found.ppid)
            .map(|d| d.row)
            .unwrap_or(child.row_id);
        match store.processes().record_descendant(parent, &found) {
            Ok(row) => {
                // Its parent is this supervising process: it left its hook's process tree (and
                // was re-parented here), though its cgroup may still hold it.
                let escaped = found.ppid == me;
                if escaped {
                    crate::teardown::flag_escaped(store, row);
                }
                let identity = found.identity;
                let descendant = Descendant {
                    row,
                    identity,
                    pinned,
                    escaped,
                };
                child
                    .descendants
                    .insert(descendant.identity.pid, descendant);
            }
            Err(err) => log::error!("cannot record pid {}: {err}", found.identity.pid),
        }
    }
    changed
}

/// Descendant `pid` of `child` as recorded, if its pidfd says it still runs. (Its parent is not
/// read again — `ppid` 0: whether it was re-parented here, `adopt_unknown_children` sees.)
fn still_running<O>(child: &Child<O>, pid: i32) -> Option<Found> {
    let descendant = child
        .descendants
        .get(&pid)
        .filter(|d| !d.pinned.has_ended())?;
    Some(Found {
        identity: descendant.identity.clone(),
        ppid: 0,
        pgid: 0,
        argv: Vec::new(),
        state: 'S',
        uid: None,
    })
}

/// After `child` exited: makes final the rows below it whose process is gone unobserved, and
/// counts the processes of its subtree that live on (by row, and by marker for rows whose start
/// was not recorded and, with `by_marker`, for the child itself) — and says whether every such
/// row was read and written (not, while the database is out of reach).
fn count_leftovers(
    store: &Store,
    instance: &str,
    child_row: i64,
    by_marker: bool,
) -> (usize, bool) {
    let (below, mut all_written) = match store.processes().live_subtree(child_row) {
        Ok(below) => (below, true),
        Err(_) => (Vec::new(), false),
    };
    // A row without identity may be a process whose start could not be recorded (a failed
    // write): its marker tells whether it runs.
    let unidentified: Vec<i64> = below
        .iter()
        .filter(|r| r.identity.is_none())
        .map(|r| r.id)
        .collect();
    let running_unidentified = if unidentified.is_empty() {
        Default::default()
    } else {
        marker::marked(instance, &unidentified)
    };
    let mut alive: usize = running_unidentified.values().map(Vec::len).sum();
    for row in below.iter().filter(|r| r.id != child_row) {
        let live = row
            .identity
            .as_ref()
            .is_some_and(|id| crate::identity::check(id).is_alive());
        if live {
            alive += 1;
        } else if row.identity.is_some() {
            all_written &= liveness::finish_unobserved(
                store,
                row.id,
                row.kind,
                row.pid,
                Recording::ChildRows,
                EndReason::Unknown,
                UNKNOWN_EXIT,
            );
        } else if !running_unidentified.contains_key(&row.id) && !liveness::parent_alive(store, row)
        {
            // Its parent died while starting it: it never ran, and no one else will say so.
            all_written &= liveness::finish_unobserved(
                store,
                row.id,
                row.kind,
                None,
                Recording::AllRows,
                EndReason::Lost,
                NEVER_STARTED,
            );
        }
    }
    if by_marker {
        alive += marker::marked(instance, &[child_row])
            .values()
            .map(Vec::len)
            .sum::<usize>();
    }
    (alive, all_written)
}
