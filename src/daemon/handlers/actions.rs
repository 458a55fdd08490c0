//! `retry`: queue a sealed crawl's failed (or all unsuccessful) results again, and look for due
//! crawls at once; `pause` and `resume` a crawl (its workers look for themselves).

use super::{failed, refused, State};
use crate::control::protocol::{ErrorCode, Response};
use crate::store::RetryScope;

pub(super) fn handle(
    state: &mut State,
    crawl_id: i64,
    which: RetryScope,
    hook: Option<&str>,
) -> Response {
    match state.store.retry_results(crawl_id, which, hook) {
        Ok(Ok(results)) => {
            log::info!("crawl {crawl_id}: {results} results queued again");
            state.wake = true;
            Response::Retried { crawl_id, results }
        }
        Ok(Err(why)) => refused(ErrorCode::NotAllowed, why),
        Err(err) => failed(err),
    }
}

pub(super) fn pause(state: &mut State, crawl_id: i64, paused: bool) -> Response {
    match state.store.set_paused(crawl_id, paused) {
        Ok(Ok(())) => {
            log::info!(
                "crawl {crawl_id} {}",
                if paused { "paused" } else { "resumed" }
            );
            // A queued crawl is claimable again.
            state.wake = true;
            Response::PauseSet { crawl_id, paused }
        }
        Ok(Err(why)) => refused(ErrorCode::NotAllowed, why),
        Err(err) => failed(err),
    }
}
