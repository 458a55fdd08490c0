//! The supervising core shared by every abxd process that has children: the daemon, crawl
//! workers and snapshot workers. It owns the `mio` loop, the signal pipe, the children, their
//! deadlines, the teardown map, the descendant scan and the lease its process holds.
//!
//! Invariants: the process that spawned a child is the one that reaps it, here and only here;
//! a reaped child's row is made final here (one writer per row's lifecycle) before the caller
//! hears of it, and so is the row of a descendant re-parented here (this process is a child
//! subreaper). With nothing to wait for, [`Supervisor::wait`] blocks in `poll` with no timeout:
//! the only timers are real deadlines (hook timeouts, SIGKILL deadlines, the descendant scan
//! while hooks run, lease renewal, and the caller's own).

use crate::identity::{self, Identity};
use crate::proctree;
use crate::reaper;
use crate::spawn::{self, SpawnError, SpawnRequest, Spawned};
use crate::store::{EndReason, ExitOutcome, Kind, Lease, Store};
use crate::teardown::{self, DeadlineMap, Report};
use crate::unrecorded::Unrecorded;
use mio::{Events, Interest, Poll, Registry, Token};
use rustix::process::Signal;
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
use signal_hook_mio::v1_0::Signals;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a just-started child may live before the end of its snapshot, crawl or daemon
/// sends it SIGTERM.
pub const STARTUP_ALLOWANCE: Duration = Duration::from_millis(250);

/// The end detail of a descendant that ended where no one here could see its exit status.
const UNKNOWN_EXIT: &str = "ended; exit status unknown (not a child of its supervisor)";

/// The token of the signal pipe; callers register their own sources with tokens from 1 up to
/// [`teardown::FIRST_TOKEN`].
pub const SIGNALS: Token = Token(0);

/// Something the caller must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A child was reaped and its row made final. `leaked`: processes it started live on.
    Exited {
        row_id: i64,
        pid: i32,
        outcome: ExitOutcome,
        reason: EndReason,
        leaked: bool,
    },
    /// SIGTERM, SIGINT or SIGHUP arrived.
    Signal(i32),
    /// A source the caller registered is ready.
    Ready(Token),
    /// The caller's timer passed.
    Timer,
    /// The lease could not be renewed: someone else owns the work now.
    LeaseLost,
    /// A teardown finished.
    TornDown(Report),
}

/// How a child is watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildPolicy {
    /// Record its descendants as `child` rows while it runs, and flag it leaking if it exits
    /// while they live on.
    pub scan_descendants: bool,
    /// Tear what it leaks down as soon as it exits (else with everything else, at the end).
    pub leftovers_now: bool,
}

impl ChildPolicy {
    pub const WORKER: ChildPolicy = ChildPolicy {
        scan_descendants: false,
        leftovers_now: true,
    };
    pub const FOREGROUND_HOOK: ChildPolicy = ChildPolicy {
        scan_descendants: true,
        leftovers_now: true,
    };
    pub const BACKGROUND_HOOK: ChildPolicy = ChildPolicy {
        scan_descendants: true,
        leftovers_now: false,
    };
}

struct Child {
    row_id: i64,
    /// When it must be stopped for running too long.
    deadline: Option<Instant>,
    policy: ChildPolicy,
    /// Descendants recorded so far: pid → (row, identity).
    descendants: HashMap<i32, (i64, Identity)>,
    /// Its stdout and stderr log files.
    logs: (std::path::PathBuf, std::path::PathBuf),
    started: Instant,
}

/// Timing settings the supervisor applies.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub kill_grace: Duration,
    pub min_grace: Duration,
    pub descendant_scan: Duration,
    /// The most a scanned child's log file may grow to before it is truncated.
    pub max_log_bytes: u64,
}

pub struct Supervisor {
    poll: Poll,
    signals: Signals,
    events: Events,
    children: HashMap<i32, Child>,
    teardown: DeadlineMap,
    timing: Timing,
    lease: Option<(Lease, Instant)>,
    next_scan: Option<Instant>,
    /// Rows whose leaked processes are torn down with everything else, at the end.
    leftovers: Vec<i64>,
    /// Stops of children too young to be signalled yet: (when, row, reason).
    delayed_stops: Vec<(Instant, i64, EndReason)>,
    instance: String,
    /// Ends that failed to be written, retried once writes succeed again.
    unrecorded: Unrecorded,
}

impl Supervisor {
    /// Sets up the loop and the signal pipe. `instance` is the store's instance id (the marker
    /// namespace); `own_row` the row of this process, the root of what it supervises.
    pub fn new(
        timing: Timing,
        instance: String,
        own_row: Option<i64>,
    ) -> std::io::Result<Supervisor> {
        let poll = Poll::new()?;
        let mut signals = Signals::new([SIGCHLD, SIGTERM, SIGINT, SIGHUP])?;
        poll.registry()
            .register(&mut signals, SIGNALS, Interest::READABLE)?;
        let teardown = DeadlineMap::new(poll.registry().try_clone()?, instance.clone());
        Ok(Supervisor {
            poll,
            signals,
            events: Events::with_capacity(256),
            children: HashMap::new(),
            teardown,
            timing,
            lease: None,
            next_scan: None,
            leftovers: Vec::new(),
            delayed_stops: Vec::new(),
            unrecorded: Unrecorded::new(own_row, instance.clone()),
            instance,
        })
    }

    pub fn registry(&self) -> &Registry {
        self.poll.registry()
    }

    pub fn set_timing(&mut self, timing: Timing) {
        self.timing = timing;
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
        policy: ChildPolicy,
    ) -> Result<Spawned, SpawnError> {
        let spawned = spawn::spawn(store, request)?;
        let deadline = request
            .process
            .timeout_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms.max(0) as u64));
        self.children.insert(
            spawned.identity.pid,
            Child {
                row_id: spawned.row_id,
                deadline,
                policy,
                descendants: HashMap::new(),
                logs: spawned.logs.clone(),
                started: Instant::now(),
            },
        );
        if policy.scan_descendants && self.next_scan.is_none() {
            self.next_scan = Some(Instant::now() + self.timing.descendant_scan);
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

    /// Row ids of the live children.
    pub fn child_rows(&self) -> Vec<i64> {
        self.children.values().map(|c| c.row_id).collect()
    }

    /// Tears down the subtree of row `row_id`: `signal` now, SIGKILL `grace` later.
    pub fn stop(
        &mut self,
        store: &mut Store,
        row_id: i64,
        signal: Signal,
        grace: Duration,
        reason: EndReason,
    ) {
        self.teardown.begin(
            store,
            teardown::Request {
                root_row: row_id,
                signal,
                grace,
                own_deadlines: false,
                reason,
                record_all: false,
            },
        );
    }

    /// Tears down the trees of orphan rows left by a previous incarnation (one marker scan for
    /// all): every row of them is recorded `orphan_reaped` when its process goes.
    pub fn stop_orphans(&mut self, store: &mut Store, rows: &[i64]) {
        let requests = rows
            .iter()
            .map(|&root_row| teardown::Request {
                root_row,
                signal: Signal::TERM,
                grace: self.timing.kill_grace,
                own_deadlines: false,
                reason: EndReason::OrphanReaped,
                record_all: true,
            })
            .collect();
        self.teardown.start_sharing_scans();
        self.teardown.begin_all(store, requests);
        self.teardown.stop_sharing_scans();
    }

    /// Tears down every child's subtree and every leftover at once, each process until its own
    /// deadline but at least `min_grace` (SPEC §5).
    ///
    /// A child younger than [`STARTUP_ALLOWANCE`] (or `min_grace`, if less) is signalled only
    /// once it is that old: a process just started has not yet had the chance to set up its
    /// SIGTERM handler.
    pub fn stop_all(&mut self, store: &mut Store, reason: EndReason) {
        let now = Instant::now();
        let allowance = self.timing.min_grace.min(STARTUP_ALLOWANCE);
        let mut roots: Vec<(i64, Instant)> = self
            .children
            .values()
            .map(|c| (c.row_id, c.started + allowance))
            .collect();
        roots.extend(self.leftovers.drain(..).map(|row| (row, now)));
        for (root, not_before) in roots {
            if not_before > now {
                self.delayed_stops.push((not_before, root, reason));
            } else {
                self.stop_at_end(store, root, reason);
            }
        }
    }

    fn stop_at_end(&mut self, store: &mut Store, root: i64, reason: EndReason) {
        self.teardown.begin(
            store,
            teardown::Request {
                root_row: root,
                signal: Signal::TERM,
                grace: self.timing.min_grace,
                own_deadlines: true,
                reason,
                record_all: false,
            },
        );
    }

    /// Begins the delayed stops that are due.
    fn run_delayed_stops(&mut self, store: &mut Store, now: Instant) {
        let due: Vec<(Instant, i64, EndReason)> = self
            .delayed_stops
            .iter()
            .filter(|(at, ..)| *at <= now)
            .copied()
            .collect();
        self.delayed_stops.retain(|(at, ..)| *at > now);
        for (_, row, reason) in due {
            if self.children.values().any(|c| c.row_id == row) {
                self.stop_at_end(store, row, reason);
            }
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
            self.next_scan,
            self.delayed_stops.iter().map(|(at, ..)| *at).min(),
            self.unrecorded.next_deadline(),
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
        Ok(self.handle_events(store, timer))
    }

    /// Acts on what `poll` returned, and on whatever is due; every teardown of this turn shares
    /// one marker scan.
    fn handle_events(&mut self, store: &mut Store, timer: Option<Instant>) -> Vec<Event> {
        self.teardown.start_sharing_scans();
        let out = self.handle_events_sharing_scans(store, timer);
        self.teardown.stop_sharing_scans();
        out
    }

    fn handle_events_sharing_scans(
        &mut self,
        store: &mut Store,
        timer: Option<Instant>,
    ) -> Vec<Event> {
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
            for signal in pending {
                match signal {
                    SIGCHLD => self.reap(store, &mut out),
                    other => out.push(Event::Signal(other)),
                }
            }
        }
        // Reap first, so a child's exit status is recorded before its pidfd says it is gone.
        self.reap(store, &mut out);
        for token in gone {
            self.teardown.on_ready(store, token);
        }
        let now = Instant::now();
        self.enforce_deadlines(store, now);
        self.run_delayed_stops(store, now);
        self.teardown.expire(store, now);
        if self.next_scan.is_some_and(|at| at <= now) {
            self.scan_descendants(store);
        }
        self.renew_lease(store, now, &mut out);
        let children = &self.children;
        self.unrecorded
            .after_turn(store, now, |row| children.values().any(|c| c.row_id == row));
        out.extend(
            self.teardown
                .take_completed()
                .into_iter()
                .map(Event::TornDown),
        );
        if timer.is_some_and(|t| t <= now) {
            out.push(Event::Timer);
        }
        out
    }

    /// For the last moment before this process exits: writes the ends a failed write left
    /// unrecorded, retrying while writes fail, for at most `patience` (after which the daemon's
    /// own pass settles them).
    pub fn settle_before_exit(&mut self, store: &mut Store, patience: Duration) {
        let give_up = Instant::now() + patience;
        while !self.unrecorded.settle_now(store, |_| false) {
            if Instant::now() >= give_up {
                log::error!("exiting with ends still unrecorded: the database is not writable");
                return;
            }
            std::thread::sleep(crate::unrecorded::RETRY);
        }
    }

    /// Reaps whatever has ended now, without waiting: for the last moment before this process
    /// exits, so that nothing re-parented to it goes unrecorded.
    pub fn reap_now(&mut self, store: &mut Store) -> Vec<Event> {
        let mut out = Vec::new();
        self.reap(store, &mut out);
        out
    }

    fn reap(&mut self, store: &mut Store, out: &mut Vec<Event>) {
        for reaped in reaper::reap_ready() {
            if reaped.outcome != ExitOutcome::Code(0) {
                // A supervisor that failed may have left ends unwritten: look again soon.
                self.unrecorded.look_again(Instant::now());
            }
            let Some(child) = self.children.remove(&reaped.pid) else {
                self.reaped_descendant(store, reaped.pid, reaped.outcome);
                self.teardown.on_reaped(store, reaped.pid);
                continue;
            };
            let row_id = child.row_id;
            let reason = self.teardown.reason_for(row_id).unwrap_or_else(|| {
                // Signalled by someone else's teardown (e.g. `abxctl kill`): killed by request.
                match store.process(row_id) {
                    Ok(Some(row)) if row.sigterm_at.is_some() || row.sigkill_at.is_some() => {
                        EndReason::Killed
                    }
                    _ => EndReason::Exited,
                }
            });
            log::debug!(
                "row {row_id} (pid {}) ended: {:?}",
                reaped.pid,
                reaped.outcome
            );
            if let Err(err) = store.record_end(row_id, Some(reaped.outcome), reason, None) {
                log::error!("row {row_id}: cannot record its end (kept to retry): {err}");
                self.unrecorded.end_failed(row_id, reaped.outcome, reason);
            }
            self.teardown.on_reaped(store, reaped.pid);
            if child.policy.scan_descendants {
                for log in [&child.logs.0, &child.logs.1] {
                    cap_log(log, self.timing.max_log_bytes);
                }
            }
            let leaked = self.settle_leftovers(store, &child);
            out.push(Event::Exited {
                row_id,
                pid: reaped.pid,
                outcome: reaped.outcome,
                reason,
                leaked,
            });
        }
    }

    /// A process re-parented to us (we are a subreaper: its parent died first) ended: we are the
    /// only one who can know its status, so record it on its row, whatever its kind.
    fn reaped_descendant(&mut self, store: &mut Store, pid: i32, outcome: ExitOutcome) {
        match store.live_row_by_pid(pid) {
            Ok(Some(row)) => {
                let reason = self
                    .teardown
                    .reason_for(row.id)
                    .unwrap_or(EndReason::Exited);
                let detail = "re-parented to its supervisor, which reaped it";
                let _ = store.record_end(row.id, Some(outcome), reason, Some(detail));
            }
            _ => log::debug!("reaped pid {pid} (re-parented, not recorded)"),
        }
    }

    /// After a child exited: settles what it leaves. Rows below it whose process is gone are
    /// made final (no one else will see them end); if processes of its subtree live on — by row,
    /// or by marker for scanned children — the child is flagged leaking and they are torn down
    /// now or at the end, by its policy. Returns whether it leaked.
    fn settle_leftovers(&mut self, store: &mut Store, child: &Child) -> bool {
        let mut alive = 0;
        let below = store.live_subtree(child.row_id).unwrap_or_default();
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
            proctree::marked(&self.instance, &unidentified)
        };
        alive += running_unidentified.values().map(Vec::len).sum::<usize>();
        for row in below.iter().filter(|r| r.id != child.row_id) {
            let live = row
                .identity
                .as_ref()
                .is_some_and(|id| identity::check(id).is_alive());
            // A zombie is reaped (and recorded) by its parent or by the abxd process it is
            // re-parented to; a hook or worker row likewise. Only a descendant that is gone
            // entirely is recorded here.
            let zombie = row.pid.and_then(proctree::zombie_parent).is_some();
            if live {
                alive += 1;
            } else if row.kind == Kind::Child && !zombie {
                let _ = store.record_end(row.id, None, EndReason::Unknown, Some(UNKNOWN_EXIT));
            } else if row.identity.is_none()
                && !running_unidentified.contains_key(&row.id)
                && !parent_alive(store, row)
            {
                // Its parent died while starting it: it never ran, and no one else will say so.
                let detail = "never started: its parent ended while starting it";
                let _ = store.record_end(row.id, None, EndReason::Lost, Some(detail));
            }
        }
        if child.policy.scan_descendants {
            alive += proctree::marked(&self.instance, &[child.row_id])
                .values()
                .map(Vec::len)
                .sum::<usize>();
        }
        if alive == 0 {
            return false;
        }
        log::warn!("row {} exited leaving processes behind", child.row_id);
        if let Err(err) = store.set_leaking(child.row_id) {
            log::error!("row {}: cannot flag it leaking: {err}", child.row_id);
        }
        if child.policy.leftovers_now {
            self.stop(
                store,
                child.row_id,
                Signal::TERM,
                self.timing.kill_grace,
                EndReason::Killed,
            );
        } else {
            self.leftovers.push(child.row_id);
        }
        true
    }

    fn enforce_deadlines(&mut self, store: &mut Store, now: Instant) {
        let overdue: Vec<i64> = self
            .children
            .values_mut()
            .filter(|c| c.deadline.is_some_and(|d| d <= now))
            .map(|c| {
                c.deadline = None;
                c.row_id
            })
            .collect();
        for row in overdue {
            log::info!("row {row} passed its deadline: stopping it");
            self.stop(
                store,
                row,
                Signal::TERM,
                self.timing.kill_grace,
                EndReason::Timeout,
            );
        }
    }

    /// Records the descendants of scanned children that appeared since the last scan, and the
    /// end of those that went.
    fn scan_descendants(&mut self, store: &mut Store) {
        let scanned: Vec<i32> = self
            .children
            .iter()
            .filter(|(_, c)| c.policy.scan_descendants)
            .map(|(pid, _)| *pid)
            .collect();
        self.next_scan =
            (!scanned.is_empty()).then(|| Instant::now() + self.timing.descendant_scan);
        for pid in scanned {
            let child = self.children.get_mut(&pid).expect("listed above");
            for log in [&child.logs.0, &child.logs.1] {
                cap_log(log, self.timing.max_log_bytes);
            }
            let mut rows: Vec<i64> = vec![child.row_id];
            rows.extend(child.descendants.values().map(|(row, _)| *row));
            let mut now_found: HashMap<i32, proctree::Found> = proctree::descendants_of(&[pid])
                .into_iter()
                .map(|f| (f.identity.pid, f))
                .collect();
            for found in proctree::marked(&self.instance, &rows)
                .into_values()
                .flatten()
            {
                now_found.entry(found.identity.pid).or_insert(found);
            }
            now_found.remove(&pid);
            // Parents first, so a child's parent row exists when it is recorded.
            let mut new: Vec<&proctree::Found> = now_found
                .values()
                .filter(|f| !child.descendants.contains_key(&f.identity.pid))
                .collect();
            new.sort_by_key(|f| f.identity.start_ticks);
            for found in new {
                let parent = child
                    .descendants
                    .get(&found.ppid)
                    .map(|(row, _)| *row)
                    .unwrap_or(child.row_id);
                match store.record_descendant(parent, found) {
                    Ok(row) => {
                        child
                            .descendants
                            .insert(found.identity.pid, (row, found.identity.clone()));
                    }
                    Err(err) => log::error!("cannot record pid {}: {err}", found.identity.pid),
                }
            }
            let ended: Vec<(i32, i64)> = child
                .descendants
                .iter()
                .filter(|(pid, _)| !now_found.contains_key(pid))
                .map(|(pid, (row, _))| (*pid, *row))
                .collect();
            for (gone, row) in ended {
                child.descendants.remove(&gone);
                if !proctree::is_unreaped_child(gone) {
                    // (An unreaped one is recorded, with its status, by the reaper.)
                    let _ = store.record_end(row, None, EndReason::Unknown, Some(UNKNOWN_EXIT));
                }
            }
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

/// Whether the process of `row`'s parent row is alive.
pub(crate) fn parent_alive(store: &Store, row: &crate::store::ProcessRow) -> bool {
    row.parent_id
        .and_then(|p| store.process(p).ok().flatten())
        .and_then(|p| p.identity)
        .is_some_and(|id| identity::check(&id).is_alive())
}

/// Truncates a log file that grew past `max` bytes, leaving a line that says so. The child keeps
/// writing to it (it appends), so its size stays bounded by `max` plus what it writes between
/// two scans.
fn cap_log(path: &std::path::Path, max: u64) {
    use std::io::Write;
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.len() <= max {
        return;
    }
    let truncated = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut file| {
            file.set_len(0)?;
            writeln!(
                file,
                "[abxd: log truncated: it passed limits.max_log_bytes ({max} bytes)]"
            )
        });
    match truncated {
        Ok(()) => log::warn!("{} passed {max} bytes: truncated", path.display()),
        Err(err) => log::error!("cannot truncate {}: {err}", path.display()),
    }
}
