//! `retry`: queue a sealed crawl's failed (or all unsuccessful) results again, and look for due
//! crawls at once.

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
