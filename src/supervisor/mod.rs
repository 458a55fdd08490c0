//! The supervising core shared by every abxd process that has children: the daemon, crawl
//! workers and snapshot workers. It owns the `mio` loop, the signal pipe, the children, their
//! deadlines, the teardown map, the descendant scan and the lease its process holds.
//!
//! One file per concern: `event` (what the loop tells its caller, and who owns a child),
//! `children` (the registry, deadlines, delayed stops), `policy` (how a child is watched, the
//! timing), `reaping` (every end made final here), `descendants` (scans, leftovers), `escapees`
//! (what was re-parented here), `log_cap`, `above` (a teardown left to the process above),
//! `lease`, `unrecorded` (ends a failed write left unwritten), and `decide` — the rules, as
//! functions of state that return actions. This file is the loop: it turns readiness into
//! facts, asks `decide`, and applies the answer. Each turn first writes what the store's outbox
//! kept while the database was busy, and the loop wakes when the store's back-off ends if
//! anything waits for it (`store::engine::busy`, `store::engine::outbox`).
//!
//! Invariants: the process that spawned a child is the one that reaps it, here and only here;
//! a reaped child's row is made final here (one writer per row's lifecycle) before the caller
//! hears of it, and so is the row of a descendant re-parented here (this process is a child
//! subreaper). With nothing to wait for, [`Supervisor::wait`] blocks in `poll` with no timeout:
//! the only timers are real deadlines (hook timeouts, SIGKILL deadlines, the descendant scan
//! while hooks run, lease renewal, a write the busy database refused, and the caller's own).

mod above;
mod children;
mod decide;
mod descendants;
mod escapees;
mod event;
mod lease;
mod log_cap;
mod policy;
mod reaping;
mod unrecorded;

use crate::cgroup::Cgroup;
use crate::liveness;

use crate::domain::{EndReason, Lease};
use crate::signal::Signal;
use crate::spawn::{self, SpawnError, SpawnRequest, Spawned};
use crate::store::Store;
use crate::teardown::{self, DeadlineMap};
use children::{Child, Children};

pub use event::{CrawlWorkerChild, DaemonChild, Event, Owner, RunsHooks, SnapshotWorkerChild};
use lease::LeaseKeeper;
use mio::{Events, Interest, Poll, Registry, Token};
pub use policy::{ChildPolicy, Timing};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
use signal_hook_mio::v1_0::Signals;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use unrecorded::Unrecorded;

/// How long a just-started child may live before the end of its snapshot, crawl or daemon
/// sends it SIGTERM.
pub const STARTUP_ALLOWANCE: Duration = Duration::from_millis(250);

/// The token of the signal pipe; callers register their own sources with tokens from 1 up to
/// [`teardown::FIRST_TOKEN`].
pub const SIGNALS: Token = Token(0);

pub struct Supervisor<O> {
    poll: Poll,
    signals: Signals,
    events: Events,
    children: Children<O>,
    teardown: DeadlineMap,
    timing: Timing,
    lease: LeaseKeeper,
    next_scan: Option<Instant>,
    /// The time between two descendant scans now (`decide::next_scan_interval`).
    scan_every: Duration,
    /// Rows whose leaked processes are torn down with everything else, at the end.
    leftovers: Vec<i64>,
    instance: String,
    /// The row of this process, the root of what it supervises.
    own_row: Option<i64>,
    /// `stop_all` ran: what a child leaves from now on is torn down at once.
    ending: bool,
    /// A teardown from above that covers everything below (see `above`).
    above: Option<above::Above>,
    /// Ends that failed to be written, retried once writes succeed again.
    unrecorded: Unrecorded,
    /// Under cgroup containment: the cgroup of this process's row, below which each child gets
    /// its own.
    cgroup: Option<Cgroup>,
    /// What exempts each worker it starts from its crawl's egress policy (`egress::crawl`).
    exempt_workers: Option<crate::egress::kernel::Exemption>,
    /// This process is a child subreaper: what its children leave alive is re-parented to it.
    subreaper: bool,
    /// The owner of each child whose teardown is under way: its report goes to that owner, as
    /// its exit does.
    stopping: HashMap<i64, O>,
}

impl<O: Owner> Supervisor<O> {
    /// Sets up the loop and the signal pipe. `instance` is the store's instance id (the marker
    /// namespace); `own_row` the row of this process, the root of what it supervises.
    pub fn new(
        timing: Timing,
        instance: String,
        own_row: Option<i64>,
    ) -> std::io::Result<Supervisor<O>> {
        let poll = Poll::new()?;
        let mut signals = Signals::new([SIGCHLD, SIGTERM, SIGINT, SIGHUP])?;
        poll.registry()
            .register(&mut signals, SIGNALS, Interest::READABLE)?;
        let subreaper = nix::sys::prctl::get_child_subreaper().unwrap_or(false);
        let registry = poll.registry().try_clone()?;
        let teardown = DeadlineMap::new(registry, instance.clone(), own_row.filter(|_| subreaper));
        Ok(Supervisor {
            poll,
            signals,
            events: Events::with_capacity(256),
            children: Children::default(),
            teardown,
            timing,
            lease: LeaseKeeper::default(),
            next_scan: None,
            scan_every: timing.descendant_scan,
            leftovers: Vec::new(),
            unrecorded: Unrecorded::new(own_row, instance.clone()),
            instance,
            own_row,
            ending: false,
            above: None,
            cgroup: None,
            exempt_workers: None,
            subreaper,
            stopping: HashMap::new(),
        })
    }

    pub fn registry(&self) -> &Registry {
        self.poll.registry()
    }

    /// Contains every child from now on in a cgroup of its own below `cgroup` (this process's
    /// row's cgroup).
    pub fn contain_in(&mut self, cgroup: Cgroup) {
        self.cgroup = Some(cgroup);
    }

    /// Exempts each worker it starts from now on from its crawl's egress policy.
    pub fn exempt_workers(&mut self, exemption: crate::egress::kernel::Exemption) {
        self.exempt_workers = Some(exemption);
    }

    /// The cgroup children are contained in, under cgroup containment.
    pub fn cgroup(&self) -> Option<&Cgroup> {
        self.cgroup.as_ref()
    }

    pub fn set_timing(&mut self, timing: Timing) {
        self.scan_every = timing.descendant_scan;
        self.timing = timing;
    }

    /// Holds `lease` from now on: it is renewed every third of its duration while we wait.
    pub fn hold_lease(&mut self, lease: Lease) {
        self.lease.hold(lease, Instant::now());
    }

    /// Spawns a child for `owner` (`with_row`: what to write with its row, see
    /// `spawn::spawn`); if its row has a timeout, it is stopped at its deadline. Its exit comes
    /// back tagged with `owner`.
    pub fn spawn(
        &mut self,
        store: &Store,
        request: &SpawnRequest,
        (owner, policy): (O, ChildPolicy),
        with_row: spawn::WithRow<'_>,
    ) -> Result<Spawned, SpawnError> {
        let below = spawn::Below::of(self.cgroup.as_ref(), self.exempt_workers.as_ref());
        let spawned = spawn::spawn(store, request, below, with_row)?;
        if !spawned.recorded {
            self.unrecorded.start_failed(&spawned);
        }
        let now = Instant::now();
        let deadline = request
            .process
            .timeout_ms
            .map(|ms| now + Duration::from_millis(ms.max(0) as u64));
        self.children.insert(
            spawned.identity.pid,
            Child {
                row_id: spawned.row_id,
                owner,
                deadline,
                policy,
                descendants: HashMap::new(),
                logs: spawned.logs.clone(),
                started: now,
                cgroup: spawned.cgroup.clone(),
            },
        );
        if policy.scan_descendants {
            // A new tree grows: scans come at the base rate again.
            self.scan_every = self.timing.descendant_scan;
            let due = now + self.scan_every;
            self.next_scan = Some(self.next_scan.map_or(due, |at| at.min(due)));
        }
        Ok(spawned)
    }

    /// Whether a child is still running or a teardown still under way.
    pub fn has_work(&self) -> bool {
        !self.children.is_empty() || !self.teardown.is_empty()
    }

    pub fn child_count(&self) -> usize {
        self.children.len()
    }

    /// The next moment this loop must act whatever the database does: a child's deadline or a
    /// delayed stop, a SIGKILL or survivor check, a lease renewal.
    fn hard_deadline(&self) -> Option<Instant> {
        [
            self.children.next_deadline(),
            self.teardown.next_deadline(),
            self.lease.next_deadline(),
            self.above_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Tears down the subtree of row `row_id`: `signal` now, SIGKILL `grace` later. Its report
    /// comes back with the owner of the row, if the row is a child of this process.
    pub fn stop(
        &mut self,
        store: &Store,
        row_id: i64,
        signal: Signal,
        grace: Duration,
        reason: EndReason,
    ) {
        let request = teardown::Request {
            root_row: row_id,
            signal,
            grace,
            own_deadlines: false,
            reason,
            recording: liveness::Recording::ChildRows,
        };
        self.begin_teardowns(store, vec![request]);
    }

    /// Tears down the trees of orphan rows left by a previous incarnation (one marker scan for
    /// all): every row of them is recorded `orphan_reaped` when its process goes.
    pub fn stop_orphans(&mut self, store: &Store, rows: &[i64]) {
        let requests = rows
            .iter()
            .map(|&root_row| teardown::Request {
                root_row,
                signal: Signal::TERM,
                grace: self.timing.kill_grace,
                own_deadlines: false,
                reason: EndReason::OrphanReaped,
                recording: liveness::Recording::AllRows,
            })
            .collect();
        self.teardown.start_sharing_scans();
        self.teardown.begin_all(store, requests);
        self.teardown.stop_sharing_scans();
    }

    /// Tears down every child's subtree and every leftover at once, each process until its own
    /// deadline but at least `min_grace` (`supervisor.toml(5)`, `[timeouts]`) — unless a teardown from above covers them
    /// (see `above`).
    ///
    /// A child younger than [`STARTUP_ALLOWANCE`] (or `min_grace`, if less) is signalled only
    /// once it is that old: a process just started has not yet had the chance to set up its
    /// SIGTERM handler.
    pub fn stop_all(&mut self, store: &Store, reason: EndReason) {
        self.ending = true;
        if self.covered_from_above() {
            return;
        }
        let allowance = self.timing.min_grace.min(STARTUP_ALLOWANCE);
        let leftovers = std::mem::take(&mut self.leftovers);
        // A child whose teardown is under way keeps its deadlines (e.g. a background hook
        // stopped at the end of its scope with its timeout as grace).
        let roots: Vec<(i64, Instant)> = self
            .children
            .roots()
            .into_iter()
            .filter(|(row, _)| !self.teardown.is_tearing_down(*row))
            .collect();
        let stops = decide::stop_all(&roots, &leftovers, Instant::now(), allowance);
        let mut now = Vec::new();
        for stop in stops {
            match stop.not_before {
                Some(_) => self.children.delay(stop, reason),
                None => now.push(self.timing.stop_at_end(stop.row, reason)),
            }
        }
        // (All in one transaction: one wait for the write lock, however many children.)
        self.begin_teardowns(store, now);
        self.sweep_escapees(store);
    }

    fn stop_at_end(&mut self, store: &Store, root: i64, reason: EndReason) {
        let request = self.timing.stop_at_end(root, reason);
        self.begin_teardowns(store, vec![request]);
    }

    /// Begins `requests`, remembering the owner of each root row that is a child here, so that
    /// its report goes to that owner (see [`Event::TornDown`]). (The owner of an exited child's
    /// leftovers is remembered as they are settled: the child is no longer here.)
    fn begin_teardowns(&mut self, store: &Store, requests: Vec<teardown::Request>) {
        for request in &requests {
            if let Some(owner) = self.children.owner_of_row(request.root_row) {
                self.stopping.insert(request.root_row, owner);
            }
        }
        self.teardown.begin_all(store, requests);
    }

    /// Moves every SIGKILL deadline to now.
    pub fn hurry(&mut self, store: &Store) {
        self.teardown.hurry(store);
    }

    /// Waits for something to act on (or `timer`), then returns what happened. Reaped children
    /// have their rows made final before they are returned (torn down from above, their ends
    /// may be held to be written together a moment later: see `above`).
    pub fn wait(
        &mut self,
        store: &Store,
        timer: Option<Instant>,
    ) -> std::io::Result<Vec<Event<O>>> {
        let hard_deadline = self.hard_deadline();
        let wake_at = [
            timer,
            hard_deadline,
            self.next_scan,
            self.unrecorded.next_deadline(),
            store.outbox().retry_at(),
            self.teardown.retry_at(store),
        ]
        .into_iter()
        .flatten()
        .min();
        let timeout = if self.teardown.has_completed() {
            Some(Duration::ZERO)
        } else {
            wake_at.map(|at| at.saturating_duration_since(Instant::now()))
        };
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => return Ok(Vec::new()),
            Err(err) => return Err(err),
        }
        // What waited for a busy database is written first, before what this turn writes.
        store.outbox().write_kept();
        // Every teardown of this turn shares one marker scan.
        self.teardown.start_sharing_scans();
        let out = self.handle_events(store, timer);
        self.teardown.stop_sharing_scans();
        Ok(out)
    }

    /// Acts on what `poll` returned, and on whatever is due.
    fn handle_events(&mut self, store: &Store, timer: Option<Instant>) -> Vec<Event<O>> {
        let mut out = Vec::new();
        let mut signalled = false;
        let mut gone = Vec::new();
        for event in self.events.iter() {
            match event.token() {
                SIGNALS => signalled = true,
                token if self.teardown.owns(token) => gone.push(token),
                token => out.push(Event::Ready(token)),
            }
        }
        if signalled {
            let pending: Vec<i32> = self.signals.pending().collect();
            for signal in pending.into_iter().filter(|s| *s != SIGCHLD) {
                out.extend(Signal::from_raw(signal).map(Event::Signal));
            }
        }
        // Reap first (also without SIGCHLD: signals coalesce), so a child's exit status is
        // recorded before its pidfd says it is gone.
        self.reap(store, &mut out);
        self.teardown.on_ready_all(store, &gone);
        let now = Instant::now();
        for row in self.children.take_overdue(now) {
            log::info!("row {row} passed its deadline: stopping it");
            let grace = self.timing.kill_grace;
            self.stop(store, row, Signal::TERM, grace, EndReason::Timeout);
        }
        for (row, reason) in self.children.take_due_stops(now) {
            self.stop_at_end(store, row, reason);
        }
        self.teardown.expire(store, now);
        self.after_turn_above(store, now);
        if self.next_scan.is_some_and(|at| at <= now) {
            self.scan_descendants(store);
        }
        self.teardown.write_records(store);
        if self.lease.renew_if_due(store, now) {
            out.push(Event::LeaseLost);
        }
        let children = &self.children;
        self.unrecorded
            .after_turn(store, now, |row| children.has_row(row));
        for report in self.teardown.take_completed() {
            self.give_up_unkillable(&report, &mut out);
            let owner = self.stopping.remove(&report.root_row);
            out.push(Event::TornDown { report, owner });
        }
        if timer.is_some_and(|t| t <= now) {
            out.push(Event::Timer);
        }
        out
    }
}
