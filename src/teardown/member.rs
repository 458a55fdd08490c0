//! One process joining a teardown: recorded (a `child` row if it has none) with the
//! [`PidRef`] it was pinned by (`PidRef::open` for a row, `proctree::pin` for a process found
//! now: opened, then confirmed — from then on it can only mean that process), watched for its
//! end through it, and signalled through it only.

use super::{Candidate, DeadlineMap, Member, PidfdWatches, Request, Tree};
use crate::domain::{EndReason, Kind};
use crate::identity::PidRef;
use crate::liveness::{self, Recording};
use crate::proctree;
use crate::signal::Signal;
use crate::store::{now_ms, ProcessRow, Store};
use mio::unix::SourceFd;
use mio::{Interest, Token};
use std::collections::BTreeMap;
use std::time::Instant;

/// The rows whose markers a tree scans.
pub(super) fn tree_rows(trees: &BTreeMap<i64, Tree>, root: i64) -> Vec<i64> {
    trees.get(&root).map(|t| t.rows.clone()).unwrap_or_default()
}

/// Adds a live process to `tree` with the handle it was pinned by (`None`: it was gone when
/// pinned): records it as a `child` row if it has none, watches it, and — `send_now` — sends it
/// the tree's first signal (and SIGCONT, so a stopped process can act on it).
pub(super) fn add_member(
    store: &Store,
    watches: &mut PidfdWatches,
    tree: &mut Tree,
    candidate: Candidate,
    send_now: bool,
) {
    let Candidate {
        process,
        pinned,
        row_id,
        kind,
        deadline,
    } = candidate;
    let pid = process.identity.pid;
    if let Some(member) = tree.members.get_mut(&pid) {
        member.deadline = member.deadline.min(deadline);
        return;
    }
    let root = tree.request.root_row;
    let signal = tree.request.signal;
    let now = Instant::now();
    let kill_at = now_ms() + deadline.saturating_duration_since(now).as_millis() as i64;
    // A process found without a row gets one that records the signal it is about to be sent
    // (one statement, not two), if it is still there to be sent one.
    let mut signal_recorded = false;
    let row_id = row_id.or_else(|| {
        let parent = tree
            .members
            .values()
            .find(|m| m.identity.pid == process.ppid)
            .and_then(|m| m.row_id)
            .unwrap_or(root);
        let recorded = match pinned {
            Some(_) => store.processes().record_descendant_signalled(
                parent,
                &process,
                (signal, now_ms(), Some(kill_at)),
            ),
            None => store
                .processes()
                .record_descendant(parent, &process)
                .map(|id| (id, false)),
        };
        recorded
            .map(|(id, noted)| {
                signal_recorded = noted;
                id
            })
            .map_err(|err| log::error!("cannot record descendant pid {pid}: {err}"))
            .ok()
    });
    // A descendant whose parent is this supervising process left its hook's process tree (it
    // was re-parented here), whatever still holds it (its cgroup, its marker).
    let is_descendant = kind.is_none_or(|kind| kind == Kind::Child);
    if let Some(row) = row_id.filter(|_| is_descendant && process.ppid == std::process::id() as i32)
    {
        flag_escaped(store, row);
    }
    if row_id.is_some() && !tree.rows.contains(&row_id.unwrap_or_default()) {
        tree.rows.push(row_id.unwrap_or_default());
    }
    let command = process.argv.join(" ");
    let mut member = Member {
        identity: process.identity.clone(),
        row_id,
        kind: kind.unwrap_or(Kind::Child),
        command,
        pinned: None,
        token: None,
        deadline,
        signalled_at: None,
        killed_at: None,
        gone_at: None,
        survived: None,
        unsignalled: false,
    };
    let Some(pinned) = pinned else {
        // Gone before it could be pinned: its row (if it is ours to record) ends
        // here, or no one would ever end it.
        member.gone_at = Some(Instant::now());
        let detail = "exit status unknown: it ended as it was found";
        end_unobserved(tree, store, (member.row_id, member.kind), pid, detail);
        tree.members.insert(pid, member);
        return;
    };
    let token = Token(watches.next_token);
    watches.next_token += 1;
    if watches
        .registry
        .register(&mut SourceFd(&pinned.raw_fd()), token, Interest::READABLE)
        .is_ok()
    {
        watches.tokens.insert(token, (root, pid));
        member.token = Some(token);
    }
    // Recorded just before it is sent, so that whoever reaps the process already sees why it
    // ended.
    if let Some(row) = row_id.filter(|_| !signal_recorded) {
        note_signal(tree, store, row, signal, Some(kill_at));
    }
    member.pinned = Some(pinned);
    if send_now {
        signal_member(&mut member, signal);
    } else {
        member.unsignalled = true;
    }
    tree.members.insert(pid, member);
}

/// Makes the row of a member seen gone final — if the teardown's request covers it and no abxd
/// reaper will record it, judged now, while a zombie still shows its parent — at the end of this
/// turn of the loop, with the turn's other records in one transaction
/// ([`DeadlineMap::write_records`](super::DeadlineMap::write_records)); what could not be
/// written is kept on the tree, which does not finish before it is.
pub(super) fn end_unobserved(
    tree: &mut Tree,
    store: &Store,
    (row_id, kind): (Option<i64>, Kind),
    pid: i32,
    detail: &'static str,
) {
    let Some(row) = row_id else {
        return;
    };
    let recording = tree.request.recording;
    if !recording.covers(kind) || liveness::left_to_reaper(store, pid) {
        return;
    }
    // (Another teardown covering it — of an abxd process above or below this one — saw it
    // first: nothing to write, and no wait for the write lock.)
    if matches!(store.processes().get(row), Ok(Some(r)) if !r.status.is_live()) {
        return;
    }
    tree.unwritten.push(Unwritten::End {
        row,
        kind,
        // (Judged above: whose it is to write does not change with a late write.)
        pid: None,
        reason: tree.request.reason,
        recording,
        detail,
    });
}

/// Flags row `row` escaped (it left its hook's process tree), now or, if the database is busy,
/// through the store's outbox.
pub fn flag_escaped(store: &Store, row: i64) {
    store
        .outbox()
        .write(format!("row {row}'s escaped flag"), move |store| {
            store.processes().set_escaped(row)
        });
}

/// Writes `records` in one transaction, keeping in it what was not written (all of it when the
/// commit failed: nothing is dropped on a failed batch).
pub(super) fn write_all(store: &Store, records: &mut Vec<Unwritten>) {
    if records.is_empty() {
        return;
    }
    let written = store.all_or_nothing(|store| Ok(write_each(store, records)));
    match written {
        Ok(kept) => *records = kept,
        Err(err) => log::warn!("teardown records are written later: {err}"),
    }
}

/// How much later than a new teardown's a SIGKILL time already on a row may be and still stand
/// (the same deadline computed by two processes differs by milliseconds).
const ANNOUNCED_SLACK_MS: i64 = 1_000;

/// Records that `signal` went to row `row` now (`kill_at`: when SIGKILL is due), or keeps the
/// record on the tree to write later: a signal is sent on time whatever the database does.
pub(super) fn note_signal(
    tree: &mut Tree,
    store: &Store,
    row: i64,
    signal: Signal,
    kill_at: Option<i64>,
) {
    let announced = tree.announced.get(&row);
    let already_said = |at: i64| announced.is_some_and(|&was| was <= at + ANNOUNCED_SLACK_MS);
    if signal != Signal::KILL && kill_at.is_some_and(already_said) {
        return;
    }
    let note = Unwritten::Signal {
        row,
        signal,
        at: now_ms(),
        kill_at,
    };
    note.write_or_keep(store, tree);
}

/// A record of the teardown that could not be written yet (e.g. the database was busy).
#[derive(Clone, Copy)]
pub(super) enum Unwritten {
    /// The end of a row seen gone.
    End {
        row: i64,
        kind: Kind,
        pid: Option<i32>,
        reason: EndReason,
        recording: Recording,
        detail: &'static str,
    },
    /// A signal sent, with when (wall-clock ms), and when SIGKILL is due.
    Signal {
        row: i64,
        signal: Signal,
        at: i64,
        kill_at: Option<i64>,
    },
}

impl Unwritten {
    /// Writes it; returns whether it is written (or not ours to write).
    pub fn write(&self, store: &Store) -> bool {
        match *self {
            Unwritten::End {
                row,
                kind,
                pid,
                reason,
                recording,
                detail,
            } => liveness::finish_unobserved(store, row, kind, pid, recording, reason, detail),
            Unwritten::Signal {
                row,
                signal,
                at,
                kill_at,
            } => store
                .processes()
                .record_signal(row, signal, at, kill_at)
                .is_ok(),
        }
    }

    /// Writes it, or keeps it on `tree` to be written before the tree finishes.
    pub fn write_or_keep(self, store: &Store, tree: &mut Tree) {
        if !self.write(store) {
            tree.keep(self);
        }
    }
}

/// Writes each of `records` (within the caller's transaction); returns those not written.
fn write_each(store: &Store, records: &[Unwritten]) -> Vec<Unwritten> {
    records
        .iter()
        .filter(|r| !r.write(store))
        .copied()
        .collect()
}

impl Tree {
    /// Keeps a record the database refused, to be written before the tree finishes.
    pub(super) fn keep(&mut self, record: Unwritten) {
        if self.unwritten.is_empty() {
            log::warn!(
                "teardown of row {}: records the database refused are written later",
                self.request.root_row
            );
        }
        self.unwritten.push(record);
    }
}

/// Pins the process of each recorded row of a tree: a pidfd confirmed to be it, with its
/// deadline. A row whose process is gone is to end now (if it is ours to record), or no one
/// would ever end it; a row whose process runs as another user than it recorded is never
/// signalled and ends `lost` (before its tree finishes). Returns what was pinned, the ends of
/// rows whose process is gone (to write now), and those lost (to write with the tree's records).
pub(super) fn pin_rows(
    rows: &[ProcessRow],
    request: &Request,
    deadline_of: impl Fn(Option<i64>) -> Instant,
) -> (Vec<Candidate>, Vec<Unwritten>, Vec<Unwritten>) {
    let mut found: Vec<Candidate> = Vec::new();
    let mut gone = Vec::new();
    let mut unwritten = Vec::new();
    for row in rows {
        let Some(identity) = &row.identity else {
            continue;
        };
        let pinned = PidRef::open(identity)
            .and_then(|pinned| Some((proctree::read_known(identity, row.argv.clone())?, pinned)));
        let Some((process, pinned)) = pinned else {
            // Already gone, unseen (or its pid is another process's now): end its row now
            // (if it is ours), or no one ever will.
            let end = Unwritten::End {
                row: row.id,
                kind: row.kind,
                pid: row.pid,
                reason: request.reason,
                recording: request.recording,
                detail: "exit status unknown: it ended unobserved",
            };
            gone.push(end);
            continue;
        };
        if let Some(runs_as) = other_owner(row, &pinned) {
            // Never signalled: the row cannot be telling the truth about it (a database
            // swapped or edited under abxd). The row ends here, saying so.
            log::error!(
                "row {}: pid {} runs as uid {runs_as}, not uid {} as its row says: \
                 not signalled",
                row.id,
                identity.pid,
                row.uid.unwrap_or_default()
            );
            unwritten.push(Unwritten::End {
                row: row.id,
                kind: row.kind,
                pid: None,
                reason: EndReason::Lost,
                recording: Recording::AllRows,
                detail: "its process runs as another user than its row says: not signalled",
            });
            continue;
        }
        found.push(Candidate {
            process,
            pinned: Some(pinned),
            row_id: Some(row.id),
            kind: Some(row.kind),
            deadline: deadline_of(row.deadline_clock),
        });
    }
    (found, gone, unwritten)
}

/// The real uid row `row`'s process runs as, if that is not the uid the row recorded (rows
/// from before uids were recorded are not judged).
fn other_owner(row: &ProcessRow, pinned: &PidRef) -> Option<u32> {
    let recorded = row.uid?;
    pinned.real_uid().filter(|&runs_as| runs_as != recorded)
}

/// Sends a member its first signal (and SIGCONT, so a stopped process can act on it).
pub(super) fn signal_member(member: &mut Member, signal: Signal) {
    let Some(pinned) = &member.pinned else {
        return;
    };
    if pinned.send(signal) {
        let now = Instant::now();
        member.signalled_at = Some(now);
        if signal != Signal::CONT && signal != Signal::KILL {
            let _ = pinned.send(Signal::CONT);
        }
        if signal == Signal::KILL {
            member.killed_at = Some(now);
        }
    }
}

impl DeadlineMap {
    /// At the end of a turn of the loop: writes every tree's records of the turn (the ends of
    /// members seen gone) and those refused before, in one transaction — one commit per turn,
    /// not one per process; what is refused is kept (nothing is lost on a failed commit) — then
    /// finishes the trees that waited only for them.
    pub fn write_records(&mut self, store: &Store) {
        let waiting: Vec<i64> = self
            .trees
            .iter()
            .filter(|(_, tree)| !tree.unwritten.is_empty())
            .map(|(root, _)| *root)
            .collect();
        if waiting.is_empty() {
            return;
        }
        let trees = &self.trees;
        let written = store.all_or_nothing(|store| {
            Ok(waiting
                .iter()
                .map(|root| (*root, write_each(store, &trees[root].unwritten)))
                .collect::<Vec<_>>())
        });
        match written {
            Ok(kept) => {
                for (root, kept) in kept {
                    if let Some(tree) = self.trees.get_mut(&root) {
                        tree.unwritten = kept;
                    }
                }
            }
            Err(err) => log::warn!("teardown records are written later: {err}"),
        }
        for root in waiting {
            self.finish_if_empty(store, root);
        }
    }
}
