//! The daemon's part in a fleet — several hosts sharing one store (PostgreSQL): its machine's
//! heartbeat, taking over the work of machines presumed dead, and lending its free snapshot
//! slots to the crawls other machines run, woken by the store (LISTEN/NOTIFY), not by polling.
//!
//! Invariants: on a store of its own (SQLite) none of this runs and nothing of it wakes the
//! daemon; everything it claims or recovers is fenced (see `store::fence`), so what two hosts
//! do at once happens once; a lent snapshot's worker is this daemon's child, under its
//! orchestrator row, its row linked to its crawl wherever that runs.

use super::database::Retry;
use super::heartbeat::Heartbeat;
use crate::config::Config;
use crate::pool::WorkerPool;
use crate::recovery;
use crate::store::{Store, StoreError};
use crate::supervisor::{DaemonChild, Supervisor};
use std::time::Instant;

pub(super) struct Fleet {
    heartbeat: Heartbeat,
    /// Snapshot workers for other machines' crawls; `None` on a store of its own.
    lent: Option<WorkerPool<DaemonChild>>,
    /// Look for work to borrow at the next turn.
    look: bool,
    /// After the store refused a claim: when to try again.
    retry_at: Option<Instant>,
    /// Since when this machine's heartbeats have been written without a miss.
    heard_since: Option<Instant>,
    /// The shared store's wake-ups, delivered while this is kept.
    _listening: crate::store::listen::Listening,
}

impl Fleet {
    /// This daemon's part: nothing but an idle heartbeat on a store of its own; on a shared
    /// store, the store's wake-ups are delivered to `supervisor`'s loop from now on.
    pub fn join(
        config: &Config,
        machine_id: &str,
        orchestrator_row: i64,
        supervisor: &Supervisor<DaemonChild>,
    ) -> std::io::Result<Fleet> {
        let shared = config.database.is_shared();
        let heartbeat = Heartbeat::new(machine_id, shared, config.timeouts.lease);
        let listening =
            crate::store::listen::wake_on_work_changes(&config.database, supervisor.registry())?;
        Ok(Fleet {
            heartbeat,
            lent: shared.then(|| WorkerPool::lent_snapshots(orchestrator_row)),
            look: shared,
            retry_at: None,
            heard_since: None,
            _listening: listening,
        })
    }

    /// Lends no snapshot slot from now on (`abxd run`: one crawl, then exit).
    pub fn lend_nothing(&mut self) {
        self.lent = None;
    }

    /// Work changed somewhere in the fleet: look for snapshots to borrow at the next turn.
    /// Returns whether the daemon should look for crawls too (always: a host with a free
    /// crawl slot takes a crawl another host had no room for).
    pub fn woken(&mut self) -> bool {
        self.look = self.lent.is_some();
        true
    }

    /// When the loop must wake for the fleet: the next heartbeat, a retry, a lent snapshot
    /// becoming due.
    pub fn next_due(&self, config: &Config, store: &Store) -> Option<Instant> {
        let lent_due = self.lent.as_ref().and_then(|p| p.next_due(config, store));
        [self.heartbeat.next_due(), self.retry_at, lent_due]
            .into_iter()
            .flatten()
            .min()
    }

    /// After each turn: beats (taking over the work of machines gone silent when it does) and,
    /// while `claiming`, borrows due snapshots of other machines' crawls up to its free slots.
    pub fn after_turn(
        &mut self,
        config: &Config,
        supervisor: &mut Supervisor<DaemonChild>,
        store: &Store,
        claiming: bool,
    ) {
        let now = Instant::now();
        match self.heartbeat.beat_if_due(store) {
            None => {}
            Some(false) => self.heard_since = None,
            Some(true) => {
                let heard_since = *self.heard_since.get_or_insert(now);
                if may_judge_others(heard_since, now, config.timeouts.lease) {
                    self.take_over(config, store);
                }
            }
        }
        let Some(lent) = self.lent.as_mut().filter(|_| claiming) else {
            return;
        };
        let due = std::mem::take(&mut self.look)
            || self.retry_at.is_some_and(|at| at <= now)
            || lent.next_due(config, store).is_some_and(|at| at <= now);
        if !due {
            return;
        }
        self.retry_at = None;
        if let Err(err) = lent.fill(config, supervisor, store) {
            log::warn!("cannot borrow snapshots of other machines' crawls yet: {err}");
            self.retry_at = Some(store.outbox().when_to_retry(err.is_busy()));
        }
    }

    /// Recovers the work of the machines presumed dead (see `recovery::take_over_silent`).
    fn take_over(&mut self, config: &Config, store: &Store) {
        match recovery::take_over_silent(store, config) {
            Ok(plan) => {
                for line in recovery::describe(&Default::default(), &plan) {
                    log::warn!("taking over from a silent machine: {line}");
                }
                self.look |= !plan.is_empty();
            }
            Err(err) => log::warn!("cannot take over from silent machines yet: {err}"),
        }
    }

    /// A child of the daemon exited: `None` if it was not a lent snapshot's worker, else
    /// whether its work was sealed or recovered here (an error: the caller recovers later).
    pub fn on_exit(
        &mut self,
        config: &Config,
        store: &Store,
        row: i64,
        leaked: bool,
    ) -> Option<Result<(), StoreError>> {
        let lent = self.lent.as_mut()?;
        let ended = match lent.on_exit(config, store, row, leaked, true) {
            Ok(None) => return None,
            Ok(Some(end)) => {
                lent.log_end(row, end);
                Ok(())
            }
            Err(err) => {
                lent.give_up_on(row, leaked);
                Err(err)
            }
        };
        self.look = true;
        Some(ended)
    }

    /// A teardown finished: if it was a lent worker's leftovers, its work is recovered now (an
    /// error: the caller recovers later).
    pub fn on_torn_down(
        &mut self,
        config: &Config,
        store: &Store,
        row: i64,
    ) -> Result<(), StoreError> {
        let Some(lent) = self.lent.as_mut() else {
            return Ok(());
        };
        lent.on_torn_down(config, store, row)
            .map(drop)
            .inspect_err(|_| {
                lent.give_up_on(row, false);
            })
    }
}

impl super::State {
    /// The fleet's part of a turn of the daemon's loop (see [`Fleet::after_turn`]).
    pub(super) fn fleet_turn(&mut self, supervisor: &mut Supervisor<DaemonChild>) {
        let claiming = self.claiming();
        (self.fleet).after_turn(&self.config, supervisor, &self.store, claiming);
    }

    /// A lent snapshot's worker exited. Work the store kept from
    /// being recovered now (a server out of reach) is recovered by the daemon's retry, as a
    /// crawl worker's is.
    pub(super) fn lent_worker_ended(&mut self, row: i64, leaked: bool) {
        let Some(ended) = (self.fleet).on_exit(&self.config, &self.store, row, leaked) else {
            log::error!("row {row}: no lent snapshot worker of the daemon's");
            return;
        };
        self.retry_later_on(ended, Retry::Recovery);
    }

    /// A teardown finished: a lent worker's leftovers' work is recovered (or, failing, later).
    pub(super) fn lent_torn_down(&mut self, row: i64) {
        let recovered = (self.fleet).on_torn_down(&self.config, &self.store, row);
        self.retry_later_on(recovered, Retry::Recovery);
    }
}

/// Whether a host whose heartbeats have been written since `heard_since` may judge the others
/// silent: only once it has been heard for a whole lease itself. After an outage of its own or
/// of the server, the others need that long to be heard again — taking their work over before
/// would kill hooks for an outage, not for a lost lease.
fn may_judge_others(heard_since: Instant, now: Instant, lease: std::time::Duration) -> bool {
    now.duration_since(heard_since) >= lease
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_host_judges_others_only_after_being_heard_itself_for_a_whole_lease() {
        let lease = Duration::from_secs(60);
        let since = Instant::now();
        assert!(!may_judge_others(since, since, lease));
        assert!(!may_judge_others(since, since + lease / 2, lease));
        assert!(may_judge_others(since, since + lease, lease));
    }
}
