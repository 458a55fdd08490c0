//! The deadlines of a teardown: SIGKILL to whatever is left at each one's deadline (then a fresh
//! enumeration, so what forked meanwhile goes too), survivors of SIGKILL reported, and a tree
//! finished — with its report — only when nothing of it is found any more.

use super::member::{add_member, signal_member, write_all, Unwritten};
use super::{Candidate, DeadlineMap, Member, Tree, CGROUP_WATCH, SURVIVOR_WAIT};
use crate::cgroup::{Cgroup, EventsWatch};
use crate::domain::EndDetail;
use crate::identity;
use crate::identity::PidRef;
use crate::liveness::Recording;
use crate::proctree::{self, Found};
use crate::signal::Signal;
use crate::store::{now_ms, Store};
use mio::unix::SourceFd;
use mio::Interest;
use std::time::Instant;

/// What happened to one process of a torn-down tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// It was gone before any signal reached it.
    AlreadyGone,
    /// It exited after the first signal, this long after it.
    ExitedOnSignal { after_ms: u64 },
    /// It outlived its grace and was killed at its deadline.
    KilledAtDeadline { after_ms: u64 },
    /// It was still alive SURVIVOR_WAIT after SIGKILL.
    Survived { state: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessFate {
    pub row_id: Option<i64>,
    pub pid: i32,
    pub command: String,
    pub fate: Fate,
}

/// The outcome of one finished teardown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub root_row: i64,
    pub complete: bool,
    pub processes: Vec<ProcessFate>,
}

impl Tree {
    /// The pids of the members `wanted` picks.
    fn member_pids(&self, wanted: impl Fn(&Member) -> bool) -> Vec<i32> {
        self.members
            .iter()
            .filter(|(_, m)| wanted(m))
            .map(|(pid, _)| *pid)
            .collect()
    }
}

impl DeadlineMap {
    /// Sends SIGKILL to every member whose deadline has come (re-enumerating first), and reports
    /// survivors of SIGKILL.
    pub fn expire(&mut self, store: &Store, now: Instant) {
        let roots: Vec<i64> = self.trees.keys().copied().collect();
        for root in roots {
            let due = self.trees[&root]
                .members
                .values()
                .any(|m| m.gone_at.is_none() && m.killed_at.is_none() && m.deadline <= now);
            if due {
                // The known first, at their deadline; then what they forked meanwhile (found
                // after: a process killed forks nothing more), at once.
                self.kill_due(store, root, now);
                self.rescan(store, root, now);
                self.kill_due(store, root, now);
            }
            self.report_survivors(store, root, now);
            self.finish_if_empty(store, root);
        }
    }

    /// Moves every deadline to now (a second request to stop escalates at once).
    pub fn hurry(&mut self, store: &Store) {
        let now = Instant::now();
        for tree in self.trees.values_mut() {
            for member in tree.members.values_mut() {
                member.deadline = member.deadline.min(now);
            }
        }
        self.expire(store, now);
    }

    /// Adds processes of the tree that appeared since it began.
    pub(super) fn rescan(&mut self, store: &Store, root: i64, now: Instant) {
        let tree = &self.trees[&root];
        let known: Vec<i32> = tree.members.keys().copied().collect();
        let alive = tree.member_pids(|m| m.gone_at.is_none());
        let rows = tree.rows.clone();
        let new: Vec<(Found, Option<PidRef>)> = self
            .enumerate(root, &alive, &rows, None)
            .into_iter()
            .filter(|(p, _)| !known.contains(&p.identity.pid))
            .collect();
        self.add_late(store, root, new, now);
    }

    /// Sends SIGKILL to every member of tree `root` whose deadline has come, their records
    /// written first, together (whoever reaps one sees why it ended); a record the database
    /// refuses is kept, and the signal sent all the same: a deadline never waits on it.
    pub(super) fn kill_due(&mut self, store: &Store, root: i64, now: Instant) {
        let tree = self.trees.get_mut(&root).expect("exists");
        let due: Vec<i32> =
            tree.member_pids(|m| m.gone_at.is_none() && m.killed_at.is_none() && m.deadline <= now);
        let at = now_ms();
        let mut notes: Vec<Unwritten> = due
            .iter()
            .filter_map(|pid| {
                let member = &tree.members[pid];
                let row = member.row_id.filter(|_| member.pinned.is_some())?;
                Some(Unwritten::Signal {
                    row,
                    signal: Signal::KILL,
                    at,
                    kill_at: None,
                })
            })
            .collect();
        write_all(store, &mut notes);
        for note in notes {
            tree.keep(note);
        }
        let Tree {
            members, cgroups, ..
        } = tree;
        for pid in due {
            let member = members.get_mut(&pid).expect("listed above");
            member.killed_at = Some(now);
            if let Some(pinned) = &member.pinned {
                pinned.send(Signal::KILL);
            }
            // A hook's (or a descendant's) cgroup goes whole: also what forks during the kill
            // and what hides in another PID namespace.
            let contained = member.row_id.and_then(|row| cgroups.get(&row));
            if let Some((kind, cgroup)) = contained.filter(|(kind, _)| !kind.is_worker()) {
                if let Err(err) = cgroup.kill() {
                    log::warn!(
                        "cannot kill cgroup {} ({kind}): {err}",
                        cgroup.dir.display()
                    );
                }
            }
        }
    }

    pub(super) fn report_survivors(&mut self, store: &Store, root: i64, now: Instant) {
        let tree = self.trees.get_mut(&root).expect("exists");
        for member in tree.members.values_mut() {
            let Some(killed) = member.killed_at else {
                continue;
            };
            if member.gone_at.is_some() || killed + SURVIVOR_WAIT > now {
                continue;
            }
            if identity::check(&member.identity) != identity::Liveness::Alive {
                member.gone_at = Some(now);
                continue;
            }
            let pid = member.identity.pid;
            let state = proctree::read(pid).map(|p| p.state).unwrap_or('?');
            let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan"))
                .ok()
                .filter(|w| !w.is_empty() && w != "0")
                .unwrap_or_else(|| "?".into());
            let detail = EndDetail::Unkillable {
                after_secs: SURVIVOR_WAIT.as_secs(),
                state,
                wchan,
            };
            log::error!(
                "teardown of row {root}: pid {pid} ({}): {detail}",
                member.command
            );
            if let Some(row) = member.row_id {
                let detail = detail.clone();
                store
                    .outbox()
                    .write(format!("row {row}'s unkillable flag"), move |store| {
                        store.processes().set_unkillable(row, &detail)
                    });
            }
            // Reported: the tree finishes as incomplete.
            member.gone_at = Some(now);
            member.survived = Some(state);
        }
    }

    /// Adds processes of the tree found after it began: signalled at once, killed at `deadline`.
    fn add_late(
        &mut self,
        store: &Store,
        root: i64,
        found: Vec<(Found, Option<PidRef>)>,
        deadline: Instant,
    ) {
        let Self { watches, trees, .. } = self;
        let Some(tree) = trees.get_mut(&root) else {
            return;
        };
        // Their records in one transaction, committed before any of them is signalled; inside
        // the batch of a teardown's beginning, that beginning signals them after its commit.
        let signal_now = !store.in_batch();
        store.batch(|store| {
            for (process, pinned) in found {
                let pid = process.identity.pid;
                log::info!("teardown of row {root}: found pid {pid} late");
                let candidate = Candidate::found(process, pinned, deadline);
                add_member(store, watches, tree, candidate, false);
            }
        });
        if signal_now {
            let signal = tree.request.signal;
            for member in tree.members.values_mut() {
                if std::mem::take(&mut member.unsignalled) {
                    signal_member(member, signal);
                }
            }
        }
    }

    /// Whether tree `root` must wait for a cgroup of its rows to empty (`populated 0`): a process
    /// is still in one though no member lives and enumeration found none (it is exiting, or hides
    /// where no scan reaches). Waits by watching `cgroup.events`, never by polling; does not wait
    /// for a tree with a survivor of SIGKILL (reported instead) or when the watch cannot be made.
    fn waits_for_cgroups(&mut self, root: i64) -> bool {
        let tree = &self.trees[&root];
        if tree.members.values().any(|m| m.survived.is_some()) {
            return false;
        }
        let populated: Vec<Cgroup> = tree
            .cgroups
            .values()
            .map(|(_, cgroup)| cgroup)
            .filter(|cgroup| cgroup.populated() == Some(true))
            .cloned()
            .collect();
        if populated.is_empty() {
            return false;
        }
        let Some(watch) = self.cgroup_watch() else {
            return false;
        };
        // Watched first, read again after: an emptying between the two is not missed.
        let watching = populated.iter().all(|cgroup| watch.watch(cgroup));
        watching
            && populated
                .iter()
                .any(|cgroup| cgroup.populated() == Some(true))
    }

    /// The cgroup watch, made and registered with the loop when first needed.
    fn cgroup_watch(&mut self) -> Option<&mut EventsWatch> {
        if self.cgroup_watch.is_none() {
            let watch = EventsWatch::new()
                .and_then(|watch| {
                    let fd = watch.raw_fd();
                    self.watches
                        .registry
                        .register(&mut SourceFd(&fd), CGROUP_WATCH, Interest::READABLE)
                        .map(|()| watch)
                })
                .map_err(|err| log::error!("cannot watch cgroups: {err}"))
                .ok()?;
            self.cgroup_watch = Some(watch);
        }
        self.cgroup_watch.as_mut()
    }

    fn unwatch(&mut self, cgroup: &Cgroup) {
        if let Some(watch) = &mut self.cgroup_watch {
            watch.unwatch(cgroup);
        }
    }

    /// Finishes the tree when no member is alive and a fresh enumeration finds nothing.
    /// For a tree whose rows are all ours to record (orphans of a previous incarnation): every
    /// row of it still live names a process that is gone — its own reaper died before writing
    /// its end — so it is ended here. Returns whether all is written.
    fn settle_orphan_rows(&mut self, store: &Store, root: i64) -> bool {
        let tree = self.trees.get_mut(&root).expect("exists");
        if tree.request.recording != Recording::AllRows {
            return true;
        }
        let Ok(rows) = store.processes().live_subtree(root) else {
            return false;
        };
        for row in rows {
            let gone = row
                .identity
                .as_ref()
                .is_none_or(|id| !identity::check(id).is_alive());
            if gone {
                tree.unwritten.push(Unwritten::End {
                    row: row.id,
                    kind: row.kind,
                    pid: None,
                    reason: tree.request.reason,
                    recording: Recording::AllRows,
                    detail: "exit status unknown: its supervisor ended before recording it",
                });
            }
        }
        write_all(store, &mut tree.unwritten);
        tree.unwritten.is_empty()
    }

    pub(super) fn finish_if_empty(&mut self, store: &Store, root: i64) {
        let Some(tree) = self.trees.get_mut(&root) else {
            return;
        };
        if tree.members.values().any(|m| m.gone_at.is_none()) {
            return;
        }
        write_all(store, &mut tree.unwritten);
        if !tree.unwritten.is_empty() {
            return;
        }
        let rows = tree.rows.clone();
        let last_gone = tree.members.values().filter_map(|m| m.gone_at).max();
        // (A survivor of SIGKILL, reported already, is found again: it is not new.)
        let survivors = tree.member_pids(|m| m.survived.is_some());
        let late: Vec<(Found, Option<PidRef>)> = self
            .enumerate(root, &[], &rows, last_gone)
            .into_iter()
            .filter(|(process, _)| !survivors.contains(&process.identity.pid))
            .collect();
        if !late.is_empty() {
            let now = Instant::now();
            let tree = &self.trees[&root];
            let killing = tree.members.values().any(|m| m.killed_at.is_some());
            let deadline = if killing {
                now
            } else {
                now + tree.request.grace
            };
            self.add_late(store, root, late, deadline);
            if killing {
                self.kill_due(store, root, now);
            }
            return;
        }
        if self.waits_for_cgroups(root) {
            return;
        }
        if !self.settle_orphan_rows(store, root) {
            return;
        }
        let tree = self.trees.remove(&root).expect("exists");
        for (_, cgroup) in tree.cgroups.values() {
            self.unwatch(cgroup);
        }
        let mut complete = true;
        let processes = tree
            .members
            .into_iter()
            .map(|(pid, m)| {
                let since = |at: Instant| {
                    m.gone_at
                        .map(|g| g.saturating_duration_since(at).as_millis() as u64)
                        .unwrap_or(0)
                };
                let fate = match (m.survived, m.signalled_at, m.killed_at) {
                    (Some(state), ..) => {
                        complete = false;
                        Fate::Survived {
                            state: state.to_string(),
                        }
                    }
                    (None, None, _) => Fate::AlreadyGone,
                    (None, Some(signalled), None) => Fate::ExitedOnSignal {
                        after_ms: since(signalled),
                    },
                    (None, Some(signalled), Some(_)) => Fate::KilledAtDeadline {
                        after_ms: since(signalled),
                    },
                };
                ProcessFate {
                    row_id: m.row_id,
                    pid,
                    command: m.command,
                    fate,
                }
            })
            .collect();
        for token in self
            .watches
            .tokens
            .iter()
            .filter(|(_, (r, _))| *r == root)
            .map(|(t, _)| *t)
            .collect::<Vec<_>>()
        {
            self.watches.tokens.remove(&token);
        }
        self.completed.push(Report {
            root_row: root,
            complete,
            processes,
        });
    }
}
