//! Serving an ArchiveBox collection's queue (`[archivebox] serve_queue`): abxd as the
//! collection's runner. Every `queue_interval` a turn runs — ArchiveBox's own Python, in the
//! collection, as its owner, a process row under the orchestrator like an export's steps — that
//! writes back what abxd's crawls did (Snapshot and ArchiveResult rows, their files, seals),
//! renews the leases abxd holds, follows what ArchiveBox changed (a pause or cancel in its UI),
//! keeps abxd's daemon visible as the collection's runner (a RUNNING orchestrator Process row),
//! dispatches its due schedules and claims its due Crawls with its own compare-and-set. The
//! daemon then enqueues a crawl for each claimed Crawl (`said`), carrying its frozen config.
//!
//! The turn's program is `serve_queue.py` (built into abxd, so that it always matches it); it
//! reads itself and the turn's facts (`facts`) from its standard input, a file abxd writes and
//! opens for it: nothing of abxd's is left for the collection's owner to read.
//!
//! Invariants: one turn at a time, the next due `queue_interval` after the last one ended (or at
//! once when work was claimed or changed); a turn is idempotent, so a turn cut off — by a crash,
//! a timeout, ArchiveBox's database locked — is only late, and the next one writes what it did
//! not; a claimed Crawl is enqueued with its link in one transaction, or (the store busy) kept
//! and enqueued at the next turn, never twice (`store::work::served`); a Crawl abxd refuses is
//! told to ArchiveBox (sealed, saying why) by the next turn.

mod facts;
mod peek;
mod program;
mod said;

use super::State;
use crate::domain::ExitOutcome;
use crate::export::Collection;
use crate::spawn::SpawnRequest;
use crate::store::HeldCrawl;
use crate::supervisor::{ChildPolicy, DaemonChild, Supervisor};
use said::{Claimed, Control, Said};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often ArchiveBox's retention is applied (as its runner loop applies it).
const RETENTION_EVERY: Duration = Duration::from_secs(60);
/// The most a turn may take (ArchiveBox's leases last 60 s: a turn that takes longer is late).
const TURN_TIMEOUT: Duration = Duration::from_secs(300);

/// A step of a turn: first the copies of what abxd sealed into the collection, a held crawl
/// each (`abxd worker export`, as abxd's user, the files handed to the collection's owner),
/// then ArchiveBox's side (`serve_queue.py`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Copy,
    Python,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::Copy => "a copy into the collection",
            Step::Python => "ArchiveBox's side of the turn",
        })
    }
}

/// The step under way.
struct Turn {
    row: i64,
    step: Step,
    /// Its log files (stdout, stderr).
    logs: (PathBuf, PathBuf),
}

/// A claimed Crawl (or a redo of some of its Snapshots) abxd refused.
struct Refused {
    archivebox_crawl: String,
    why: String,
    /// The Snapshots of a redo (their ids): let go of, the Crawl left as it is.
    redo: Vec<String>,
}

#[derive(Default)]
pub(super) struct QueueServer {
    running: Option<Turn>,
    /// The held crawls whose sealed snapshots are copied before this turn's Python step.
    to_copy: Vec<HeldCrawl>,
    /// When the next turn is due (none yet: at once).
    next_at: Option<Instant>,
    /// Claimed Crawls the store refused to enqueue so far (busy): tried at the next turn.
    unqueued: Vec<Claimed>,
    /// Claimed Crawls abxd refused, and why: told to ArchiveBox by the next turn.
    refused: Vec<Refused>,
    /// When ArchiveBox's side last ran (see `peek::IDLE_EVERY`).
    last_python: Option<Instant>,
    /// When ArchiveBox's side last applied ArchiveBox's retention (once a minute, as its
    /// runner does).
    last_retention: Option<Instant>,
    /// What the last turn said went wrong, and what this one has said: a problem said turn
    /// after turn (ArchiveBox's own runner holding the collection) is logged once as a warning
    /// while it lasts.
    errors: (Vec<String>, Vec<String>),
}

impl State {
    /// When the next turn is due, if the daemon serves a queue and none runs.
    pub(super) fn next_queue_turn(&self) -> Option<Instant> {
        let server = &self.queue_server;
        (self.config.archivebox.serve_queue && server.running.is_none() && !self.stopping)
            .then(|| server.next_at.unwrap_or_else(Instant::now))
    }

    /// Starts a turn if one is due and none runs.
    pub(super) fn serve_queue(&mut self, supervisor: &mut Supervisor<DaemonChild>) {
        match self.next_queue_turn() {
            Some(at) if at <= Instant::now() => {}
            _ => return,
        }
        // (Until this turn ends; then `queue_interval` after its end.)
        self.queue_server.next_at = Some(Instant::now() + TURN_TIMEOUT);
        enqueue_unqueued(self);
        match facts::to_copy(self) {
            Ok(to_copy) => self.queue_server.to_copy = to_copy,
            Err(err) => log::warn!("ArchiveBox's queue: cannot look for what to copy now: {err}"),
        }
        next_step(self, supervisor);
    }

    /// A child exited: if it was the running turn, does what it said. Returns whether it was.
    pub(super) fn queue_turn_ended(
        &mut self,
        supervisor: &mut Supervisor<DaemonChild>,
        row: i64,
        outcome: ExitOutcome,
    ) -> bool {
        let turn = match self.queue_server.running.take() {
            Some(turn) if turn.row == row => turn,
            other => {
                self.queue_server.running = other;
                return false;
            }
        };
        let (stdout, stderr) = &turn.logs;
        if outcome != ExitOutcome::Code(0) {
            let said = (crate::hooks::last_line_of(stderr))
                .or_else(|| crate::hooks::last_line_of(stdout))
                .unwrap_or_default();
            log::warn!("ArchiveBox's queue: {} ended {outcome}: {said}", turn.step);
        }
        if turn.step == Step::Copy {
            next_step(self, supervisor);
            return true;
        }
        let lines = super::export::said::lines_of(stdout);
        // (The crawls claimed first: what the turn saw of them is noted on their links.)
        let (claims, rest): (Vec<Said>, Vec<Said>) =
            (said::records(&lines).into_iter()).partition(|said| matches!(said, Said::Claimed(_)));
        for said in claims.into_iter().chain(rest) {
            follow(self, supervisor, said);
        }
        let errors = &mut self.queue_server.errors;
        errors.0 = std::mem::take(&mut errors.1);
        turn_over(self, "");
        true
    }
}

/// Starts the turn's next step: a copy, else the Python step; a step that cannot start is
/// skipped (a copy) or ends the turn (the Python step), logged.
fn next_step(state: &mut State, supervisor: &mut Supervisor<DaemonChild>) {
    let collection =
        match (state.config.archivebox.data_dir.as_deref()).map(crate::export::collection) {
            Some(Ok(collection)) => collection,
            Some(Err(why)) => return turn_over(state, &format!("cannot serve its queue: {why}")),
            None => return turn_over(state, "no collection"),
        };
    let (step, request) = match state.queue_server.to_copy.pop() {
        Some(crawl) => (Step::Copy, Ok(copy_request(state, &collection, &crawl))),
        None if !python_needed(state, &collection) => return turn_over(state, ""),
        None => {
            let server = &mut state.queue_server;
            server.last_python = Some(Instant::now());
            let retention =
                (server.last_retention).is_none_or(|at| at.elapsed() >= RETENTION_EVERY);
            if retention {
                server.last_retention = server.last_python;
            }
            let claim = state.claiming() && state.hooks.is_ok();
            let claim = claim && state.queue_server.unqueued.is_empty();
            let request = facts::gather(state, claim, retention)
                .map_err(|err| err.to_string())
                .and_then(|facts| {
                    (turn_request(state, &collection, &facts)).map_err(|err| err.to_string())
                });
            (Step::Python, request)
        }
    };
    let request = match request {
        Ok(request) => request,
        Err(why) => return turn_over(state, &format!("cannot run a turn now: {why}")),
    };
    let spawned = supervisor.spawn(
        &state.store,
        &request,
        (DaemonChild::QueueServer, ChildPolicy::FOREGROUND_HOOK),
        &mut crate::spawn::nothing_more,
    );
    match spawned {
        Ok(spawned) => {
            log::debug!("ArchiveBox's queue: {step} (row {})", spawned.row_id);
            if step == Step::Python {
                state.queue_server.refused.clear();
            }
            state.queue_server.running = Some(Turn {
                row: spawned.row_id,
                step,
                logs: spawned.logs,
            });
        }
        Err(err) if step == Step::Copy => {
            log::warn!("ArchiveBox's queue: cannot start a copy: {err}");
            next_step(state, supervisor);
        }
        Err(err) => turn_over(
            state,
            &format!(
                "cannot run ArchiveBox's Python ({err}): name the archivebox program of \
             ArchiveBox {} or newer in archivebox.command",
                crate::export::OLDEST_ARCHIVEBOX
            ),
        ),
    }
}

/// Whether ArchiveBox's side of the turn has anything to do: a crawl abxd holds, a claim or a
/// refusal to tell, a due Crawl or Snapshot there — else it runs every `peek::IDLE_EVERY`.
fn python_needed(state: &State, collection: &Collection) -> bool {
    let server = &state.queue_server;
    if !server.unqueued.is_empty() || !server.refused.is_empty() {
        return true;
    }
    match state.store.crawls().served().held() {
        Ok(held) if held.is_empty() => {}
        _ => return true,
    }
    let idle_turn_due = (server.last_python).is_none_or(|at| at.elapsed() >= peek::IDLE_EVERY);
    idle_turn_due || peek::waiting(&collection.dir, crate::store::now_ms()).due
}

/// The turn is over (`why` not: it failed): the next one is due `queue_interval` on.
fn turn_over(state: &mut State, why: &str) {
    if !why.is_empty() {
        log::error!("ArchiveBox's queue: {why}");
    }
    state.queue_server.to_copy.clear();
    state.queue_server.next_at = Some(Instant::now() + state.config.archivebox.queue_interval);
}

/// The copy of `crawl`'s snapshots into the collection, filed under its owner: as they go (a
/// plugin's files once its hooks ended, the rest at the seal), or, for a redo, replacing the
/// files of ArchiveBox's Snapshots when sealed.
fn copy_request(state: &State, collection: &Collection, crawl: &HeldCrawl) -> SpawnRequest {
    let (id, target) = (
        crawl.crawl_id.to_string(),
        collection.dir.display().to_string(),
    );
    let mut args = vec!["export", &id, "--to", &target, "--user", &crawl.owner];
    args.push(match crawl.redo {
        true => "--replace",
        false => "--as-it-goes",
    });
    let argv = crate::pool::worker_argv(&state.config, &args);
    let cwd = state.config.data_dir.display().to_string();
    let mut request = state.errand(argv, cwd, TURN_TIMEOUT, "archivebox-queue");
    request.env = crate::pool::worker_env(&state.config);
    request
}

/// The turn's process: ArchiveBox's Python reading its program and facts from a file.
fn turn_request(
    state: &State,
    collection: &Collection,
    facts: &serde_json::Value,
) -> std::io::Result<SpawnRequest> {
    let python = program::archivebox_python(&state.config.archivebox.command)?;
    let input = (state.config.data_dir.join("tmp")).join("archivebox-queue-turn.py");
    let program = program::with_facts(facts);
    crate::logs::replace(&state.config.data_dir, &input, program.as_bytes())
        .map_err(std::io::Error::other)?;
    let argv = vec![python.display().to_string(), "-".into()];
    let cwd = collection.dir.display().to_string();
    let mut request = state.errand(argv, cwd, TURN_TIMEOUT, "archivebox-queue");
    request.env = super::export::said::archivebox_env(collection);
    request.inherit_env = false;
    request.run_as = collection.run_as;
    request.stdin = Some(input);
    Ok(request)
}

fn follow(state: &mut State, supervisor: &mut Supervisor<DaemonChild>, said: Said) {
    let served = state.store.crawls().served();
    let noted = match said {
        Said::Claimed(claimed) => {
            state.queue_server.unqueued.push(claimed);
            enqueue_unqueued(state);
            Ok(())
        }
        Said::Seen {
            archivebox_crawl,
            status,
        } => served.seen(&archivebox_crawl, &status),
        Said::Mirrored {
            archivebox_crawl,
            snapshot,
        } => served.mirrored(&archivebox_crawl, &snapshot),
        Said::Released { archivebox_crawl } => {
            log::info!("ArchiveBox's Crawl {archivebox_crawl} is sealed there: let go");
            served.release(&archivebox_crawl)
        }
        Said::Control {
            archivebox_crawl,
            action,
        } => return follow_control(state, supervisor, &archivebox_crawl, action),
        Said::Error { message } => {
            let errors = &mut state.queue_server.errors;
            match errors.0.contains(&message) {
                true => log::debug!("ArchiveBox's queue, still: {message}"),
                false => log::warn!("ArchiveBox's queue: {message}"),
            }
            errors.1.push(message);
            Ok(())
        }
    };
    if let Err(err) = noted {
        // (The next turn says it again: every record of a turn is idempotent.)
        log::warn!("ArchiveBox's queue: cannot note what a turn did now: {err}");
    }
}

/// A pause, resume or cancel made in ArchiveBox, done here.
fn follow_control(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
    archivebox_crawl: &str,
    action: Control,
) {
    let crawl_id = match state.store.crawls().served().crawl_of(archivebox_crawl) {
        Ok(Some(crawl_id)) => crawl_id,
        Ok(None) => return,
        Err(err) => return log::warn!("ArchiveBox's queue: {err}"),
    };
    log::info!("crawl {crawl_id}: {action} in ArchiveBox (its Crawl {archivebox_crawl})");
    let done = match action {
        Control::Cancel => super::handlers::cancel_crawl(state, supervisor, crawl_id).map(drop),
        Control::Pause | Control::Resume => {
            crate::verbs::work::pause(&state.store, crawl_id, action == Control::Pause)
        }
    };
    match done {
        Ok(()) => state.wake = true,
        Err(err) => {
            log::warn!("crawl {crawl_id}: cannot follow the Crawl {action} in ArchiveBox: {err}")
        }
    }
}

/// Enqueues the claimed Crawls not enqueued yet, each with its link; one abxd refuses is
/// told to ArchiveBox by the next turn.
fn enqueue_unqueued(state: &mut State) {
    for claimed in std::mem::take(&mut state.queue_server.unqueued) {
        let id = claimed.archivebox_crawl.clone();
        match state.store.crawls().served().crawl_of(&id) {
            Ok(Some(crawl_id)) => {
                // (Held already — claimed again by a turn that did not know it yet.)
                log::debug!("ArchiveBox's Crawl {id} is held by crawl {crawl_id} already");
                continue;
            }
            Ok(None) => {}
            Err(err) => {
                log::warn!("ArchiveBox's queue: {err}");
                state.queue_server.unqueued.push(claimed);
                continue;
            }
        }
        let admitted = match crate::verbs::crawl::admit(&state.config, claimed.spec()) {
            Ok(admitted) => admitted,
            Err(refusal) => {
                log::warn!("ArchiveBox's Crawl {id} refused: {}", refusal.message);
                state.queue_server.refused.push(Refused {
                    archivebox_crawl: id,
                    why: refusal.message,
                    redo: (claimed.redo.iter()).map(|s| s.uuid.clone()).collect(),
                });
                continue;
            }
        };
        match crate::verbs::crawl::enqueue(&state.store, &state.config, &admitted) {
            Ok(crawl_id) => {
                log::info!("crawl {crawl_id} added: ArchiveBox's Crawl {id}");
                state.wake = true;
            }
            Err(err) => {
                log::warn!("ArchiveBox's Crawl {id} not added yet: {err}");
                state.queue_server.unqueued.push(claimed);
            }
        }
    }
}
