//! `status`: is the daemon up, since when, what runs.

use super::{failed, State};
use crate::control::protocol::{MachineInfo, Response, StatusInfo};
use crate::store::{now_ms, OrLater};

/// What `status` counts as the last day.
const LAST_DAY_MS: i64 = 24 * 3600 * 1000;

pub(super) fn handle(state: &mut State) -> Response {
    let live = match state.store.processes().live_counts_by_kind().or_later() {
        Ok(counts) => (counts.unwrap_or_default().into_iter())
            .map(|(kind, n)| (kind.to_string(), n))
            .collect(),
        // (Out of reach or locked, it counts none: the status says so, and since when, below.)
        Err(err) => return failed(err),
    };
    Response::Status(Box::new(StatusInfo {
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        started_at_ms: state.started_at_ms,
        uptime_ms: now_ms() - state.started_at_ms,
        database: state.config.database.to_string(),
        socket: state.config.control.socket.display().to_string(),
        live,
        recovering: !state.orphans.is_empty(),
        containment: state.containment.describe(),
        database_lost: state.database_lost.as_ref().map(|lost| lost.explain()),
        database_busy_since_ms: state.store.probe_busy(),
        machines: machines(state),
        hooks: crate::hook_user::describe(&state.hooks),
        admission: admission(state),
        plugins_dirs: (state.config.plugins_dirs.iter())
            .map(|dir| dir.display().to_string())
            .collect(),
        egress: crate::daemon::egress::describe(&state.config, &state.egress),
        work: (state.store.crawls())
            .tally(now_ms() - LAST_DAY_MS)
            .map_err(|err| log::debug!("status: work not counted: {err}"))
            .ok(),
    }))
}

/// What admission says now: open, or what waits for what; then what it measured; then what
/// each running crawl's snapshots wait for, as its crawl worker said it.
fn admission(state: &State) -> String {
    let crawls = state.store.crawls().admission_waits().unwrap_or_default();
    let daemon = daemon_admission(state);
    crawls.into_iter().fold(daemon, |line, (crawl, why)| {
        format!("{line}; crawl {crawl}'s snapshots wait for {why}")
    })
}

/// What admission says now of the daemon's own starts (crawls), and what it measured.
fn daemon_admission(state: &State) -> String {
    use crate::admission::{decide, describe, Decision};
    let bounds = state.config.admission();
    let Ok(measured) =
        crate::pool::measure(&state.config, &state.store, &state.crawls.gate().cgroups)
    else {
        return "not measured (the database did not answer)".into();
    };
    let seen = describe(bounds, &measured);
    // (What the daemon's own crawls wait for, first: it may be a browser the next one launches.)
    if let Some(why) = state.crawls.waiting() {
        return format!("crawls wait for {why} — {seen}");
    }
    match (
        decide(bounds, &measured, false),
        decide(bounds, &measured, true),
    ) {
        (Decision::Wait(why), _) => format!("new crawls and snapshots wait for {why} — {seen}"),
        (_, Decision::Wait(why)) => format!("new browsers wait for {why} — {seen}"),
        _ => format!("open — {seen}"),
    }
}

/// The machines of a shared store, each silent or not by the lease (none on a store of one
/// host, or while the store does not answer).
fn machines(state: &State) -> Vec<MachineInfo> {
    if !state.store.is_shared() {
        return Vec::new();
    }
    let heard_since = state.store.shared_now() - state.config.timeouts.lease.as_millis() as i64;
    let this = crate::identity::machine_id();
    let machines = state.store.machines().all().unwrap_or_default();
    machines
        .into_iter()
        .map(|m| MachineInfo {
            silent: m.heartbeat_at < heard_since,
            this_machine: m.id == this,
            heartbeat_at_ms: m.heartbeat_at,
            id: m.id,
            hostname: m.hostname,
            version: m.version,
        })
        .collect()
}
