//! `add`: enqueue a crawl a client asked for, and look for due crawls at once.
//!
//! Invariant: an `add` is answered accepted, or refused saying why. Its write never waits for
//! another process's lock (`store::busy`): one the busy database refused is parked and handled
//! again (see `handlers`), the loop turning meanwhile.

use super::{failed, refused, State};
use crate::control::protocol::{ErrorCode, Response};
use crate::domain::CrawlSpec;
use crate::store::StoreError;
use crate::verbs::{self, crawl::Admitted};

pub(super) fn handle(state: &mut State, spec: CrawlSpec) -> Response {
    state.check_database();
    if let Some(lost) = &state.database_lost {
        return failed(lost.explain());
    }
    if let Err(why) = &state.hooks {
        return refused(ErrorCode::NotAllowed, why.clone());
    }
    let crawl = match verbs::crawl::admit(&state.config, spec) {
        Ok(crawl) => crawl,
        Err(refusal) => return refused(refusal.code, refusal.message),
    };
    if let Some(why) = crate::daemon::egress::refusal(&crawl.spec().rules, &state.egress) {
        return refused(ErrorCode::NotAllowed, why);
    }
    let added = verbs::crawl::enqueue(&state.store, &state.config, &crawl);
    state.wake |= added.is_ok();
    answer_of(added, &crawl)
}

fn answer_of(added: Result<i64, StoreError>, crawl: &Admitted) -> Response {
    match added {
        Ok(crawl_id) => {
            let spec = crawl.spec();
            match &spec.input {
                Some(input) => {
                    log::info!("crawl {crawl_id} added: {} bytes to import", input.len())
                }
                None => log::info!("crawl {crawl_id} added: {} URLs", spec.urls.len()),
            }
            Response::Added { crawl_id }
        }
        Err(err) if err.is_full() => failed(format!(
            "cannot enqueue the crawl: {err}; nothing was queued: try again once space is freed"
        )),
        Err(err) if err.is_busy() => failed(format!(
            "cannot enqueue the crawl: {err}; nothing was queued: try again once it is released"
        )),
        Err(err) => failed(format!("cannot enqueue the crawl: {err}")),
    }
}
