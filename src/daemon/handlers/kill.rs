//! `kill`: tear down a live process of the table and its subtree.

use super::{failed, refused, State};
use crate::control::protocol::{ErrorCode, Response};
use crate::domain::EndReason;
use crate::signal::Signal;
use crate::supervisor::{DaemonChild, Supervisor};
use mio::Token;
use std::time::Duration;

/// A kill request, as the protocol carries it.
pub(super) struct Kill {
    pub row: Option<i64>,
    pub pid: Option<i32>,
    pub signal: Option<Signal>,
    pub grace_ms: Option<u64>,
    pub wait: bool,
}

pub(super) fn handle(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
    token: Token,
    kill: Kill,
) -> Option<Response> {
    let row = match resolve_live_row(state, kill.row, kill.pid) {
        Ok(row) => row,
        Err(refusal) => return Some(refusal),
    };
    let signal = kill.signal.unwrap_or(Signal::TERM);
    let grace = kill
        .grace_ms
        .map(Duration::from_millis)
        .unwrap_or(state.config.timeouts.kill_grace);
    log::info!(
        "kill request: row {row}, signal {signal}, grace {}",
        humantime::format_duration(grace)
    );
    supervisor.stop(&state.store, row, signal, grace, EndReason::Killed);
    if kill.wait {
        state.waiting.entry(row).or_default().push(token);
        None
    } else {
        Some(Response::TeardownStarted { row })
    }
}

/// The row a kill request names, if it is a live process of the table (and not abxd itself).
fn resolve_live_row(state: &State, row: Option<i64>, pid: Option<i32>) -> Result<i64, Response> {
    let found = match (row, pid) {
        (Some(id), None) => state
            .store
            .processes()
            .get(id)
            .map_err(failed)?
            .ok_or_else(|| {
                refused(
                    ErrorCode::NotFound,
                    format!("no process row {id} (see abxctl ps --all)"),
                )
            })?,
        (None, Some(pid)) => state
            .store
            .processes()
            .live_row_by_pid(pid)
            .map_err(failed)?
            .ok_or_else(|| {
                let why = format!(
                    "pid {pid} is not a live process of abxd's table: refusing to signal it"
                );
                refused(ErrorCode::NotFound, why)
            })?,
        _ => {
            return Err(refused(
                ErrorCode::Malformed,
                "name exactly one of a row id or a pid",
            ))
        }
    };
    // (Another machine's process: its pid means nothing here, and it is not ours to signal.)
    if let Some(machine) = found
        .machine_id
        .as_deref()
        .filter(|_| !found.on_this_machine())
    {
        return Err(refused(
            ErrorCode::NotAllowed,
            format!(
                "row {} runs on machine {machine}: kill it with abxctl there",
                found.id
            ),
        ));
    }
    let alive = found
        .identity
        .as_ref()
        .is_some_and(|id| crate::identity::check(id).is_alive());
    if !found.status.is_live() || !alive {
        let gone = if found.status.is_live() {
            ", but its process is gone"
        } else {
            ""
        };
        return Err(refused(
            ErrorCode::NotFound,
            format!(
                "row {} is not a live process (status {}{gone}): nothing to kill",
                found.id, found.status
            ),
        ));
    }
    if found.id == state.orchestrator_id {
        return Err(refused(
            ErrorCode::NotAllowed,
            format!(
                "row {} is abxd itself: stop it with SIGTERM (systemctl stop abxd)",
                found.id
            ),
        ));
    }
    Ok(found.id)
}
