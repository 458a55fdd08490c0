//! `cancel`: seal the crawl as cancelled first (so nothing requeues it), then tear its worker's
//! tree down and answer when it is gone.

use super::{not_done, State};
use crate::control::protocol::{Response, TeardownReport};
use crate::domain::EndReason;
use crate::signal::Signal;
use crate::supervisor::{DaemonChild, Supervisor};
use mio::Token;

pub(super) fn handle(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
    token: Token,
    crawl_id: i64,
) -> Option<Response> {
    match cancel_crawl(state, supervisor, crawl_id) {
        Err(err) => Some(not_done(err)),
        Ok(Some(row)) => {
            state.waiting.entry(row).or_default().push(token);
            None
        }
        Ok(None) => Some(Response::TornDown(TeardownReport {
            root_row: 0,
            complete: true,
            processes: Vec::new(),
        })),
    }
}

/// Cancels `crawl_id` and starts the teardown of its worker's tree, if it has a worker running:
/// returns that worker's row, whose teardown ends the cancel. (`cancel`, and a Crawl cancelled
/// in ArchiveBox's UI.)
pub(in crate::daemon) fn cancel_crawl(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
    crawl_id: i64,
) -> Result<Option<i64>, crate::verbs::VerbError> {
    crate::verbs::work::cancel(&state.store, crawl_id)?;
    log::info!("crawl {crawl_id} cancelled");
    let row = state.crawls.worker_of(crawl_id);
    if let Some(row) = row {
        let grace = state.config.timeouts.kill_grace;
        supervisor.stop(&state.store, row, Signal::TERM, grace, EndReason::Killed);
    }
    Ok(row)
}
