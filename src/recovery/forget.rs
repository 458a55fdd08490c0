//! Forgetting a machine of a fleet that will not come back (`abxd machine forget`): a host
//! powered off for good keeps its process rows live for ever — shown as `unknown (machine silent
//! since T)` — and its row in `machines`. An operator who knows it is gone ends them.
//!
//! Invariants: only another machine, silent for longer than the lease (as the others judge it
//! presumed dead), is forgotten; in one transaction its work is recovered as a take-over
//! recovers it (a result that succeeded is never touched), its live rows become `lost`, and its
//! machine row is removed — or, if it was heard meanwhile, nothing changes. No process is
//! signalled: a machine's processes are only ever its own daemon's to signal.

use super::work::{apply_work, plan, WorkPlan};
use super::{describe, Reconciliation};
use crate::config::Config;
use crate::store::{Machine, Store, StoreError};
use std::collections::BTreeSet;
use std::time::Duration;

/// Why a machine was not forgotten.
#[derive(Debug, thiserror::Error)]
pub enum ForgetError {
    #[error("{0} is this machine: its rows are its own daemon's to end")]
    ThisMachine(String),
    #[error("no machine {0} is registered (abxctl status lists them)")]
    Unknown(String),
    #[error(
        "machine {id} was heard {} ago: stop its daemon (or the host) first, and forget it once \
         it has been silent for the lease ({})",
        humantime::format_duration(*.ago),
        humantime::format_duration(*.lease)
    )]
    Heard {
        id: String,
        ago: Duration,
        lease: Duration,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What forgetting a machine did.
#[derive(Debug)]
pub struct Forgotten {
    pub machine: Machine,
    /// Its rows that were live, now lost.
    pub rows: Vec<i64>,
    /// Its work recovered.
    pub work: WorkPlan,
}

impl Forgotten {
    /// One line per action, as recovery says them.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "mark {} live rows of machine {} lost",
            self.rows.len(),
            self.machine.id
        )];
        lines.extend(describe(&Reconciliation::default(), &self.work));
        lines
    }
}

/// Forgets machine `id` (see the module's text).
pub fn forget_machine(store: &Store, config: &Config, id: &str) -> Result<Forgotten, ForgetError> {
    if id == crate::identity::machine_id() {
        return Err(ForgetError::ThisMachine(id.to_string()));
    }
    let machine = store
        .machines()
        .all()?
        .into_iter()
        .find(|m| m.id == id)
        .ok_or_else(|| ForgetError::Unknown(id.to_string()))?;
    let lease = config.timeouts.lease;
    let now = store.shared_now();
    let forgotten = store.all_or_nothing(|store| {
        if !store
            .machines()
            .remove_silent(id, now - lease.as_millis() as i64)?
        {
            return Ok(None);
        }
        let rows = store.machines().live_rows_of_machine(id)?;
        let dead: BTreeSet<i64> = rows.iter().copied().collect();
        let work = plan(store, config, None, |owner, _| {
            Ok(owner.is_some_and(|owner| dead.contains(&owner)))
        })?;
        apply_work(store, config, &work, false)?;
        let why = format!("machine {id} forgotten by an operator");
        let lost: Vec<(i64, &str)> = rows.iter().map(|&row| (row, why.as_str())).collect();
        crate::liveness::finish_lost(store, &lost)?;
        Ok(Some((rows, work)))
    })?;
    match forgotten {
        Some((rows, work)) => Ok(Forgotten {
            machine,
            rows,
            work,
        }),
        None => Err(ForgetError::Heard {
            id: id.to_string(),
            ago: Duration::from_millis((now - machine.heartbeat_at).max(0) as u64),
            lease,
        }),
    }
}
