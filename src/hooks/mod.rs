//! Hooks: running one scope's hooks — a crawl's, or one snapshot's — by abx-dl's lifecycle (this
//! file), starting each (`start`, with what it waits for: `order`), the environment each gets
//! (`request`), turning each run into a result (`result`, `ended`), and the crawl hooks a crawl
//! cannot go on without (`resource`).
//!
//! The lifecycle (`abxd-hooks(7)`, HOW A HOOK RUNS; abx-dl's `snapshot_service` /
//! `crawl_service`, 1.13 where it differs from 1.12): hooks start in (NN, stem) order; a
//! foreground hook runs alone until it exits or its timeout; after a background hook starts, the
//! next hook waits until it has written its first stdout byte or exited, bounded by its timeout;
//! a hook whose plugin reads from others waits for their running hooks to end, and one that
//! reads the whole snapshot for its background hooks to be stopped; background hooks have no
//! lifetime limit while their scope runs. When the scope ends, each background hook still alive
//! gets SIGTERM with its timeout as grace, then SIGKILL, with all its descendants (a scope of
//! background hooks only first waits for them, up to their timeout). One that exits from that
//! SIGTERM ended as if it exited 0.
//!
//! Invariants: a hook whose result is already final (succeeded, noresults, failed or skipped) is
//! never started again — only interrupted ones are, and the sessions a run needs (`sessions`);
//! a run that ended by itself is never started again either, also when its worker died before
//! recording its result (`unrecorded`);
//! every run that ends gets its result recorded from its exit, its records and its deadline, by
//! the rules of [`interpret`]; a database that is busy or out of reach (a server restarting)
//! fails no step of the lifecycle — what could not be read or written is tried again at a later
//! turn, with nothing lost meanwhile.

mod ended;
pub mod index;
mod memory;
mod order;
pub mod persona;
mod request;
mod resource;
mod result;
mod scope_end;
mod sessions;
mod start;
mod unrecorded;

pub use request::{crawl_dir, drop_runtime_persona, snapshot_dir, Scope};
pub use result::{bytes_below, interpret, last_line_of, output_files, Outcome};

use crate::plugins::Prepared;
use crate::store::{OrLater, Store, StoreError};
use crate::supervisor::{RunsHooks, Supervisor};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often the first output of a background hook is looked for (abx-dl looks every 50 ms).
const READY_POLL: Duration = Duration::from_millis(50);

/// How much longer than the longest timeout of the hooks a hook waits for it waits (abx-dl's).
const OTHERS_SLACK: Duration = Duration::from_secs(30);

/// How often a worker of a paused crawl (`abxctl pause`) looks whether it was resumed.
pub const PAUSE_POLL: Duration = Duration::from_secs(1);

struct Running {
    prepared: Prepared,
    result_id: i64,
    stdout: PathBuf,
    stderr: PathBuf,
    cwd: PathBuf,
    /// What bounds its tree's memory, if anything does (`memory`).
    memory: Option<memory::Bounded>,
    /// Its argv, its result's and its process row's UUIDv7 and when it started (Unix ms), for
    /// `index.jsonl`.
    argv: Vec<String>,
    result_uuid: Option<String>,
    process_uuid: Option<String>,
    started_at: i64,
    /// Whether its logs' filesystem had no space left when its end was first seen (kept: its
    /// end may be recorded later, once space is freed, and must say why it failed then too).
    no_space_at_end: Option<bool>,
}

/// What keeps the next hook from starting.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Waiting {
    /// Nothing: the next hook may start.
    Nothing,
    /// A foreground hook runs.
    Foreground(i64),
    /// A background hook has not written its first stdout byte yet.
    FirstOutput { row: i64, until: Instant },
    /// The next hook waits for hooks it reads from to end (`order`), at most until then.
    Others { until: Instant },
}

/// Where the scope's end is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    /// Hooks still run in order.
    NotYet,
    /// Every hook started; background hooks are stopped at this moment.
    StopAt(Instant),
    /// Background hooks were sent SIGTERM.
    Stopped,
}

/// Runs one scope's hooks through a [`Supervisor`].
pub struct HookRunner {
    scope: Scope,
    pending: VecDeque<Prepared>,
    waiting: Waiting,
    ending: Ending,
    running: HashMap<i64, Running>,
    /// Whether any foreground hook belongs to the scope.
    has_foreground: bool,
    /// Background hooks sent SIGTERM at the end of their scope.
    stopped_at_end: HashSet<i64>,
    /// The crawl was paused when the next hook was due: it waits (see [`PAUSE_POLL`]).
    paused: bool,
    /// Why the crawl cannot go on, once a crawl hook it needs failed (`resource`).
    fatal: Option<String>,
    /// When the memory of its hooks with a limit was last looked at (`memory`).
    memory_checked_at: Option<Instant>,
    /// Runs that ended before this worker with their results unrecorded, taken over
    /// (`unrecorded`): their exits, for the worker's next turn.
    ended_unrecorded: Vec<unrecorded::Ended>,
    /// The hooks (file names) that run after a session of their plugin that starts again in
    /// this run (`sessions`): an earlier run of theirs is never taken over.
    in_new_session: HashSet<String>,
}

impl HookRunner {
    /// Prepares to run `hooks`, recording a result row for each one up front: a scope whose
    /// results are all final has run every hook (which is how recovery tells a finished snapshot
    /// from an interrupted one). The sessions the run needs are queued again (`sessions`);
    /// `dependants_wait`: work beyond the scope needs them (a crawl's unsealed snapshots).
    pub fn new(
        store: &Store,
        scope: Scope,
        hooks: Vec<Prepared>,
        dependants_wait: bool,
    ) -> Result<HookRunner, StoreError> {
        let mut results = Vec::with_capacity(hooks.len());
        for prepared in &hooks {
            let hook = &prepared.hook;
            results.push(store.results().result_for(
                scope.crawl.id,
                scope.snapshot_id(),
                &hook.plugin,
                &hook.file_name,
            )?);
        }
        let in_new_session = sessions::start_again(store, &hooks, &results, dependants_wait)?;
        Ok(HookRunner {
            has_foreground: hooks.iter().any(|p| !p.hook.background),
            scope,
            pending: hooks.into(),
            waiting: Waiting::Nothing,
            ending: Ending::NotYet,
            running: HashMap::new(),
            stopped_at_end: HashSet::new(),
            paused: false,
            fatal: None,
            memory_checked_at: None,
            ended_unrecorded: Vec::new(),
            in_new_session,
        })
    }

    /// Starts hooks in order until one must be waited for or none is left. Hooks whose result
    /// is final already are passed over. If the database is busy (another process holds its
    /// lock, or the server is out of reach), the hook waits at the head of the line and
    /// [`HookRunner::after_turn`] tries again.
    pub fn start_next<O: RunsHooks>(
        &mut self,
        supervisor: &mut Supervisor<O>,
        store: &Store,
    ) -> Result<(), StoreError> {
        while self.waiting == Waiting::Nothing && !self.pending.is_empty() {
            // A paused crawl starts no hook; those running go on.
            let Some(paused) = store.crawls().is_paused(self.scope.crawl.id).or_later()? else {
                log::debug!("the next hook is not started yet: the database is held back");
                return Ok(());
            };
            self.paused = paused;
            if self.paused {
                return Ok(());
            }
            let Some(prepared) = self.pending.pop_front() else {
                return Ok(());
            };
            if let Some(until) = self.must_wait(supervisor, store, &prepared) {
                self.pending.push_front(prepared);
                self.waiting = Waiting::Others { until };
                return Ok(());
            }
            match self.start(supervisor, store, &prepared).or_later()? {
                Some(Some(running)) => {
                    self.running.insert(running.0, running.1);
                }
                Some(None) => {}
                None => {
                    self.pending.push_front(prepared);
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// When the loop must wake for this runner: to look for a background hook's first output,
    /// to stop background hooks at the end of a scope of background hooks only, or to look at
    /// the memory of hooks with a limit, or to start a hook the busy database held back.
    pub fn next_timer(&self, store: &Store) -> Option<Instant> {
        let order = self.next_order_timer(store);
        [
            order,
            self.next_memory_check(),
            self.next_unrecorded_timer(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn next_order_timer(&self, store: &Store) -> Option<Instant> {
        match (self.waiting, self.ending) {
            (Waiting::FirstOutput { until, .. }, _) => {
                Some((Instant::now() + READY_POLL).min(until))
            }
            (Waiting::Others { until }, _) => Some(until),
            (_, Ending::StopAt(at)) => Some(at),
            (Waiting::Nothing, _) if self.paused => Some(Instant::now() + PAUSE_POLL),
            (Waiting::Nothing, _) if !self.pending.is_empty() => Some(store.outbox().next_try()),
            _ => None,
        }
    }

    /// After a turn of the loop: moves on when the awaited background hook has written its
    /// first output (or its wait is over), and stops background hooks when their end is due.
    pub fn after_turn<O: RunsHooks>(
        &mut self,
        supervisor: &mut Supervisor<O>,
        store: &Store,
    ) -> Result<(), StoreError> {
        self.check_memory(supervisor, store)?;
        let now = Instant::now();
        if let Waiting::FirstOutput { row, until } = self.waiting {
            let wrote = self
                .running
                .get(&row)
                .is_some_and(|r| std::fs::metadata(&r.stdout).is_ok_and(|m| m.len() > 0));
            if wrote || now >= until {
                if !wrote {
                    log::warn!("background hook row {row} wrote nothing before its timeout");
                }
                self.waiting = Waiting::Nothing;
                self.start_next(supervisor, store)?;
            }
        }
        if matches!(self.waiting, Waiting::Others { until } if until <= now) {
            log::warn!("the hooks the next one waits for did not end in time: it starts anyway");
            self.waiting = Waiting::Nothing;
            if let Some(prepared) = self.pending.pop_front() {
                match self.start(supervisor, store, &prepared).or_later()? {
                    Some(Some((row, running))) => {
                        self.running.insert(row, running);
                    }
                    Some(None) => {}
                    // (It still starts without waiting again: at a later turn.)
                    None => {
                        self.pending.push_front(prepared);
                        self.waiting = Waiting::Others {
                            until: store.outbox().next_try(),
                        };
                    }
                }
            }
        }
        if self.waiting == Waiting::Nothing && !self.pending.is_empty() {
            // A start the busy database refused, or one a pause held back.
            self.start_next(supervisor, store)?;
        }
        match self.ending {
            Ending::StopAt(at) if at <= now => self.stop_background(supervisor, store),
            Ending::Stopped => self.stop_wave(supervisor, store),
            _ => {}
        }
        Ok(())
    }

    /// Why the crawl cannot go on, if a crawl hook it needs failed (see `resource`).
    pub fn fatal(&self) -> Option<&str> {
        self.fatal.as_deref()
    }

    /// Whether every hook has started and no foreground hook runs.
    pub fn foreground_done(&self) -> bool {
        self.waiting == Waiting::Nothing && self.pending.is_empty()
    }

    /// Whether the scope is over: every hook started and ended, the background ones stopped.
    pub fn done(&self) -> bool {
        self.foreground_done() && self.ending == Ending::Stopped && self.running.is_empty()
    }
}
