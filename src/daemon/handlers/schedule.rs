//! `schedule_add` and `schedule_set`: add a schedule, or remove, pause or resume one — then
//! look again at when the loop must next wake for one.

use super::{failed, refused, State};
use crate::control::protocol::{ErrorCode, Response, ScheduleAction};
use crate::domain::{Cadence, CrawlRules};
use crate::plugins::Catalog;
use crate::store::NewSchedule;

/// What `schedule_add` asks for.
pub(in crate::daemon) struct AddSchedule {
    pub urls: Vec<String>,
    pub depth: u32,
    pub plugins: Option<Vec<String>>,
    pub rules: CrawlRules,
    pub every_ms: Option<u64>,
    pub cron: Option<String>,
    /// Its one URL is a `file://` to import at each occurrence.
    pub import: bool,
}

pub(super) fn add(state: &mut State, request: AddSchedule) -> Response {
    if request.urls.is_empty() {
        return refused(ErrorCode::Malformed, "a schedule needs at least one URL");
    }
    if let Some(why) = request
        .urls
        .iter()
        .find_map(|url| crate::url_rule::seed_problem(url))
    {
        return refused(ErrorCode::Malformed, why);
    }
    if request.import && !(request.urls.len() == 1 && request.urls[0].starts_with("file:///")) {
        return refused(
            ErrorCode::Malformed,
            "a schedule that imports has one file:// URL: the file",
        );
    }
    if let Some(why) = request.rules.problem() {
        return refused(ErrorCode::Malformed, why);
    }
    let cadence = match Cadence::named(request.every_ms, request.cron.as_deref()) {
        Ok(cadence) => cadence,
        Err(why) => return refused(ErrorCode::Malformed, why),
    };
    if let Some(names) = &request.plugins {
        if let Err(unknown) = Catalog::load(&state.config.plugins_dirs).check_names(names) {
            return refused(ErrorCode::NotFound, unknown.to_string());
        }
    }
    let rules = request.rules.over(&state.config.crawl.rules());
    let new = NewSchedule {
        urls: &request.urls,
        max_depth: request.depth,
        plugins: request.plugins.as_deref(),
        rules: &rules,
        cadence: &cadence,
        import: request.import,
    };
    let zone = jiff::tz::TimeZone::system();
    match state.store.schedules().add(&new, &zone) {
        Ok((id, next_at_ms)) => {
            log::info!("schedule {id} added: {} URLs", request.urls.len());
            state.look_at_schedules();
            Response::ScheduleAdded { id, next_at_ms }
        }
        Err(err) => failed(err),
    }
}

pub(super) fn set(state: &mut State, id: i64, action: ScheduleAction) -> Response {
    let zone = jiff::tz::TimeZone::system();
    let done = match action {
        ScheduleAction::Remove => state.store.schedules().remove(id),
        ScheduleAction::Pause => state.store.schedules().set_paused(id, true, &zone),
        ScheduleAction::Resume => state.store.schedules().set_paused(id, false, &zone),
    };
    match done {
        Ok(true) => {
            let done = match action {
                ScheduleAction::Remove => "removed",
                ScheduleAction::Pause => "paused",
                ScheduleAction::Resume => "resumed",
            };
            log::info!("schedule {id} {done}");
            state.look_at_schedules();
            Response::ScheduleSet { id, action }
        }
        Ok(false) => refused(ErrorCode::NotFound, format!("no schedule {id}")),
        Err(err) => failed(err),
    }
}
