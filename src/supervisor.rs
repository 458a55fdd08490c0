//! The supervising core shared by every abxd process that has children: the daemon, crawl
//! workers and snapshot workers. It owns the `mio` loop, the signal pipe, the children, their
//! deadlines, the teardown map and the lease its process holds.
//!
//! Invariants: the process that spawned a child is the one that reaps it, here and only here;
//! a reaped child's row is made final here (one writer per row's lifecycle) before the caller
//! hears of it; with nothing to wait for, [`Supervisor::wait`] blocks in `poll` with no timeout —
//! the only timers are real deadlines (hook timeouts, SIGKILL deadlines, lease renewal, and the
//! caller's own).

use crate::reaper;
use crate::spawn::{self, SpawnError, SpawnRequest, Spawned};
use crate::store::{EndReason, ExitOutcome, Lease, Store};
use crate::teardown::{DeadlineMap, Target};
use mio::{Events, Interest, Poll, Registry, Token};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
use signal_hook_mio::v1_0::Signals;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The token of the signal pipe; callers register their own sources with other tokens.
pub const SIGNALS: Token = Token(0);

/// Something the caller must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A child was reaped and its row made final.
    Exited {
        row_id: i64,
        pid: i32,
        outcome: ExitOutcome,
        reason: EndReason,
    },
    /// SIGTERM, SIGINT or SIGHUP arrived.
    Signal(i32),
    /// A source the caller registered is ready.
    Ready(Token),
    /// The caller's timer passed.
    Timer,
    /// The lease could not be renewed: someone else owns the work now.
    LeaseLost,
}

struct Child {
    target: Target,
    /// When it must be stopped for running too long.
    deadline: Option<Instant>,
}

pub struct Supervisor {
    poll: Poll,
    signals: Signals,
    events: Events,
    children: HashMap<i32, Child>,
    teardown: DeadlineMap,
    kill_grace: Duration,
    lease: Option<(Lease, Instant)>,
}

impl Supervisor {
    /// Sets up the loop and the signal pipe. `kill_grace` is the time between SIGTERM and SIGKILL
    /// for a child stopped at its deadline.
    pub fn new(kill_grace: Duration) -> std::io::Result<Supervisor> {
        let poll = Poll::new()?;
        let mut signals = Signals::new([SIGCHLD, SIGTERM, SIGINT, SIGHUP])?;
        poll.registry()
            .register(&mut signals, SIGNALS, Interest::READABLE)?;
        Ok(Supervisor {
            poll,
            signals,
            events: Events::with_capacity(256),
            children: HashMap::new(),
            teardown: DeadlineMap::default(),
            kill_grace,
            lease: None,
        })
    }

    pub fn registry(&self) -> &Registry {
        self.poll.registry()
    }

    pub fn set_kill_grace(&mut self, grace: Duration) {
        self.kill_grace = grace;
    }

    /// Holds `lease` from now on: it is renewed every third of its duration while we wait.
    pub fn hold_lease(&mut self, lease: Lease) {
        self.lease = Some((lease, Instant::now() + lease.duration / 3));
    }

    /// Spawns a child; if its row has a timeout, it is stopped at its deadline.
    pub fn spawn(
        &mut self,
        store: &mut Store,
        request: &SpawnRequest,
    ) -> Result<Spawned, SpawnError> {
        let spawned = spawn::spawn(store, request)?;
        let deadline = request
            .process
            .timeout_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms.max(0) as u64));
        self.children.insert(
            spawned.identity.pid,
            Child {
                target: Target {
                    row_id: spawned.row_id,
                    identity: spawned.identity.clone(),
                    pgid: spawned.identity.pid,
                },
                deadline,
            },
        );
        Ok(spawned)
    }

    pub fn has_children(&self) -> bool {
        !self.children.is_empty()
    }

    pub fn child_count(&self) -> usize {
        self.children.len()
    }

    /// Whether row `row_id` is a live child of this process.
    pub fn is_running(&self, row_id: i64) -> bool {
        self.children.values().any(|c| c.target.row_id == row_id)
    }

    /// Stops child row `row_id`: SIGTERM now, SIGKILL `grace` later.
    pub fn stop(&mut self, store: &mut Store, row_id: i64, grace: Duration, reason: EndReason) {
        if let Some(child) = self.children.values().find(|c| c.target.row_id == row_id) {
            self.teardown
                .begin(store, child.target.clone(), grace, reason);
        }
    }

    /// Stops every child, each with `grace` — or, if it has a deadline, until its own deadline,
    /// but never less than `min_grace`.
    pub fn stop_all(&mut self, store: &mut Store, min_grace: Duration, reason: EndReason) {
        let now = Instant::now();
        let targets: Vec<(Target, Duration)> = self
            .children
            .values()
            .map(|c| {
                let remaining = c
                    .deadline
                    .map(|d| d.saturating_duration_since(now))
                    .unwrap_or_default();
                (c.target.clone(), remaining.max(min_grace))
            })
            .collect();
        for (target, grace) in targets {
            self.teardown.begin(store, target, grace, reason);
        }
    }

    /// Moves every SIGKILL deadline to now.
    pub fn hurry(&mut self, store: &mut Store) {
        self.teardown.hurry(store);
    }

    /// Waits for something to act on (or `timer`), then returns what happened. Reaped children
    /// have their rows made final before they are returned.
    pub fn wait(
        &mut self,
        store: &mut Store,
        timer: Option<Instant>,
    ) -> std::io::Result<Vec<Event>> {
        let next_deadline = self.children.values().filter_map(|c| c.deadline).min();
        let lease_due = self.lease.map(|(_, at)| at);
        let wake_at = [
            timer,
            next_deadline,
            lease_due,
            self.teardown.next_deadline(),
        ]
        .into_iter()
        .flatten()
        .min();
        let timeout = wake_at.map(|at| at.saturating_duration_since(Instant::now()));
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => return Ok(Vec::new()),
            Err(err) => return Err(err),
        }
        let mut out = Vec::new();
        let mut signalled = false;
        for event in self.events.iter() {
            match event.token() {
                SIGNALS => signalled = true,
                token => out.push(Event::Ready(token)),
            }
        }
        if signalled {
            let pending: Vec<i32> = self.signals.pending().collect();
            for signal in pending {
                match signal {
                    SIGCHLD => self.reap(store, &mut out),
                    other => out.push(Event::Signal(other)),
                }
            }
        }
        let now = Instant::now();
        self.enforce_deadlines(store, now);
        self.teardown.expire(store, now);
        self.renew_lease(store, now, &mut out);
        if timer.is_some_and(|t| t <= now) {
            out.push(Event::Timer);
        }
        Ok(out)
    }

    fn reap(&mut self, store: &mut Store, out: &mut Vec<Event>) {
        for reaped in reaper::reap_ready() {
            let Some(child) = self.children.remove(&reaped.pid) else {
                log::debug!(
                    "reaped pid {} (re-parented, not a recorded child)",
                    reaped.pid
                );
                continue;
            };
            let row_id = child.target.row_id;
            let reason = self.teardown.finished(row_id).unwrap_or(EndReason::Exited);
            log::debug!(
                "row {row_id} (pid {}) ended: {:?}",
                reaped.pid,
                reaped.outcome
            );
            if let Err(err) = store.record_end(row_id, Some(reaped.outcome), reason, None) {
                log::error!("row {row_id}: cannot record its end: {err}");
            }
            out.push(Event::Exited {
                row_id,
                pid: reaped.pid,
                outcome: reaped.outcome,
                reason,
            });
        }
    }

    fn enforce_deadlines(&mut self, store: &mut Store, now: Instant) {
        let overdue: Vec<Target> = self
            .children
            .values_mut()
            .filter(|c| c.deadline.is_some_and(|d| d <= now))
            .map(|c| {
                c.deadline = None;
                c.target.clone()
            })
            .collect();
        for target in overdue {
            log::info!("row {} passed its deadline: stopping it", target.row_id);
            self.teardown
                .begin(store, target, self.kill_grace, EndReason::Timeout);
        }
    }

    fn renew_lease(&mut self, store: &mut Store, now: Instant, out: &mut Vec<Event>) {
        let Some((lease, due)) = self.lease else {
            return;
        };
        if due > now {
            return;
        }
        match store.renew(&lease) {
            Ok(true) => self.lease = Some((lease, now + lease.duration / 3)),
            Ok(false) => {
                log::error!("lost the lease on {:?} {}", lease.queue, lease.id);
                self.lease = None;
                out.push(Event::LeaseLost);
            }
            Err(err) => {
                log::error!(
                    "cannot renew the lease on {:?} {}: {err}",
                    lease.queue,
                    lease.id
                );
                self.lease = Some((lease, now + lease.duration / 10));
            }
        }
    }
}
