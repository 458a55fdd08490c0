//! `schedule_add` and `schedule_set`: add a schedule, or remove, pause or resume one — then
//! look again at when the loop must next wake for one.

use super::{failed, refused, State};
use crate::control::protocol::{Response, ScheduleAction};
use crate::domain::CrawlSpec;
use crate::verbs::{self, VerbError};

pub(super) fn add(
    state: &mut State,
    spec: CrawlSpec,
    (every_ms, cron): (Option<u64>, Option<String>),
    zone: Option<String>,
    import: bool,
) -> Response {
    let when = (every_ms, cron.as_deref());
    let admitted = verbs::schedule::admit(&state.config, spec, when, zone.as_deref(), import);
    let schedule = match admitted {
        Ok(schedule) => schedule,
        Err(refusal) => return refused(refusal.code, refusal.message),
    };
    match verbs::schedule::add(&state.store, &schedule) {
        Ok((id, next_at_ms)) => {
            log::info!("schedule {id} added: {} URLs", schedule.spec().urls.len());
            state.look_at_schedules();
            Response::ScheduleAdded { id, next_at_ms }
        }
        Err(err) => failed(err),
    }
}

pub(super) fn set(state: &mut State, id: i64, action: ScheduleAction) -> Response {
    match verbs::schedule::set(&state.store, id, action) {
        Ok(()) => {
            let done = match action {
                ScheduleAction::Remove => "removed",
                ScheduleAction::Pause => "paused",
                ScheduleAction::Resume => "resumed",
            };
            log::info!("schedule {id} {done}");
            state.look_at_schedules();
            Response::ScheduleSet { id, action }
        }
        Err(VerbError::Refused(refusal)) => refused(refusal.code, refusal.message),
        Err(VerbError::Store(err)) => failed(err),
    }
}
