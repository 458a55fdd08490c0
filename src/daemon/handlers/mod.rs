//! One handler per control request, each in its own file, mirrored by one abxctl verb in `ctl`.
//!
//! Invariants: a handler never blocks the loop (a request that waits — `kill`, `cancel` — is
//! parked on `State::waiting` and answered when its teardown finishes); it refuses what makes no
//! sense with an error code and a message naming the state; it answers with protocol types only.
//! A request whose write the busy database refused (its handler wrote nothing: every verb is all
//! or nothing) is parked and handled again when the store's back-off ends, for up to
//! [`REQUEST_PATIENCE`]; only then is the client told the database is busy.

mod add;

pub(super) use actions::{apply_retention, prune_if_due};
pub(super) use cancel::cancel_crawl;
mod actions;
mod cancel;
mod install;
mod kill;
mod schedule;
mod spawn;
mod status;

use super::State;
use crate::control::protocol::{ErrorCode, Fate, ProcessFate, Request, Response, TeardownReport};
use crate::supervisor::{DaemonChild, Supervisor};
use crate::teardown;
use mio::Token;
use std::time::{Duration, Instant};

/// How long a request the busy database refused is handled again before the client is told.
const REQUEST_PATIENCE: Duration = Duration::from_secs(2);

/// A request the busy database refused, to be handled again.
pub(in crate::daemon) struct ParkedRequest {
    token: Token,
    request: Request,
    until: Instant,
}

/// Answers `request` now (`Some`), or later (`None`): when the teardown it started finishes, or
/// once the busy database took its write.
pub(super) fn handle(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
    token: Token,
    request: Request,
) -> Option<Response> {
    let parked = ParkedRequest {
        token,
        request,
        until: Instant::now() + REQUEST_PATIENCE,
    };
    handle_or_park(state, supervisor, parked)
}

/// Handles the parked requests again; returns the answers of those now settled.
pub(super) fn retry_parked(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
) -> Vec<(Token, Response)> {
    std::mem::take(&mut state.parked_requests)
        .into_iter()
        .filter_map(|parked| {
            let token = parked.token;
            handle_or_park(state, supervisor, parked).map(|answer| (token, answer))
        })
        .collect()
}

fn handle_or_park(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
    parked: ParkedRequest,
) -> Option<Response> {
    let busy_before = crate::store::write_counts();
    let answer = dispatch(state, supervisor, parked.token, parked.request.clone());
    // (A failure is the busy database's when its handler's last write found it so.)
    let refused_busy = crate::store::write_counts() != busy_before
        && state.store.outbox().busy_since().is_some()
        && matches!(
            answer,
            Some(Response::Error {
                code: ErrorCode::Failed,
                ..
            })
        );
    if refused_busy && Instant::now() < parked.until {
        state.parked_requests.push(parked);
        return None;
    }
    answer
}

fn dispatch(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
    token: Token,
    request: Request,
) -> Option<Response> {
    match request {
        Request::Status => Some(status::handle(state)),
        Request::Add(spec) => Some(add::handle(state, spec)),
        Request::Spawn {
            argv,
            cwd,
            timeout_ms,
        } => Some(spawn::handle(state, supervisor, argv, cwd, timeout_ms)),
        Request::Kill {
            row,
            pid,
            signal,
            grace_ms,
            wait,
        } => {
            let kill = kill::Kill {
                row,
                pid,
                signal,
                grace_ms,
                wait,
            };
            kill::handle(state, supervisor, token, kill)
        }
        Request::Cancel { crawl_id } => cancel::handle(state, supervisor, token, crawl_id),
        Request::Prune {
            older_than_ms,
            dry_run,
        } => Some(actions::prune(state, older_than_ms, dry_run)),
        Request::Pause { crawl_id } => Some(actions::pause(state, crawl_id, true)),
        Request::Resume { crawl_id } => Some(actions::pause(state, crawl_id, false)),
        Request::Retry {
            crawl_id,
            which,
            hook,
        } => Some(actions::handle(state, crawl_id, which, hook.as_deref())),
        Request::Install { plugins } => install::handle(state, supervisor, token, plugins),
        Request::Export {
            target,
            user,
            crawls,
        } => Some(actions::export(state, &target, user, &crawls)),
        Request::ScheduleAdd {
            spec,
            every_ms,
            cron,
            import,
            zone,
        } => Some(schedule::add(state, spec, (every_ms, cron), zone, import)),
        Request::ScheduleSet { id, action } => Some(schedule::set(state, id, action)),
        Request::PluginEnv { plugin } => {
            let environ = crate::plugins::env::process_environ;
            Some(
                match crate::verbs::plugin_env::report(&state.config, &plugin, &environ) {
                    Ok(report) => Response::PluginEnv(report),
                    Err(refusal) => refused(refusal.code, refusal.message),
                },
            )
        }
    }
}

/// The answer to whoever waits for a teardown.
pub(super) fn torn_down(report: &teardown::Report) -> Response {
    let processes = report
        .processes
        .iter()
        .map(|p| ProcessFate {
            row_id: p.row_id,
            pid: p.pid,
            command: p.command.clone(),
            fate: match &p.fate {
                teardown::Fate::AlreadyGone => Fate::AlreadyGone,
                teardown::Fate::ExitedOnSignal { after_ms } => Fate::ExitedOnSignal {
                    after_ms: *after_ms,
                },
                teardown::Fate::KilledAtDeadline { after_ms } => Fate::KilledAtDeadline {
                    after_ms: *after_ms,
                },
                teardown::Fate::Survived { state } => Fate::Survived {
                    state: state.clone(),
                },
            },
        })
        .collect();
    Response::TornDown(TeardownReport {
        root_row: report.root_row,
        complete: report.complete,
        processes,
    })
}

fn failed(message: impl std::fmt::Display) -> Response {
    refused(ErrorCode::Failed, message.to_string())
}

/// What a client is told of a verb that did not do what it asked.
fn not_done(err: crate::verbs::VerbError) -> Response {
    match err {
        crate::verbs::VerbError::Refused(refusal) => refused(refusal.code, refusal.message),
        crate::verbs::VerbError::Store(err) => failed(err),
    }
}

fn refused(code: ErrorCode, message: impl Into<String>) -> Response {
    Response::Error {
        code,
        message: message.into(),
    }
}
