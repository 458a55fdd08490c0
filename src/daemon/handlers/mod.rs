//! One handler per control request, each in its own file, mirrored by one abxctl verb in `ctl`.
//!
//! Invariants: a handler never blocks the loop (a request that waits — `kill`, `cancel` — is
//! parked on `State::waiting` and answered when its teardown finishes); it refuses what makes no
//! sense with an error code and a message naming the state; it answers with protocol types only.

mod add;

pub(super) use actions::apply_retention;
pub(super) use add::{retry_parked as retry_parked_adds, ParkedAdd};
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

/// Answers `request` now (`Some`), or later when the teardown it started finishes (`None`).
pub(super) fn handle(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
    token: Token,
    request: Request,
) -> Option<Response> {
    match request {
        Request::Status => Some(status::handle(state)),
        Request::Add(spec) => add::handle(state, token, spec),
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
        } => Some(schedule::add(state, spec, every_ms, cron, import)),
        Request::ScheduleSet { id, action } => Some(schedule::set(state, id, action)),
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
