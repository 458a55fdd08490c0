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
    if let Err(err) = crate::verbs::work::cancel(&state.store, crawl_id) {
        return Some(not_done(err));
    }
    log::info!("crawl {crawl_id} cancelled");
    match state.crawls.worker_of(crawl_id) {
        Some(row) => {
            let grace = state.config.timeouts.kill_grace;
            supervisor.stop(&state.store, row, Signal::TERM, grace, EndReason::Killed);
            state.waiting.entry(row).or_default().push(token);
            None
        }
        None => Some(Response::TornDown(TeardownReport {
            root_row: 0,
            complete: true,
            processes: Vec::new(),
        })),
    }
}
