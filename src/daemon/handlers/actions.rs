//! `retry`: queue a sealed crawl's failed (or all unsuccessful) results again, and look for due
//! crawls at once; `pause` and `resume` a crawl (its workers look for themselves); `prune` the
//! process rows of finished work, and `[retention]` applied when a crawl seals (never on a timer:
//! an idle daemon does not wake for it).

use super::{not_done, State};
use crate::control::protocol::Response;
use crate::store::{Compact, RetryScope};
use crate::verbs;
use std::time::Duration;

pub(super) fn handle(
    state: &mut State,
    crawl_id: i64,
    which: RetryScope,
    hook: Option<&str>,
) -> Response {
    match verbs::work::retry(&state.store, crawl_id, which, hook) {
        Ok(results) => {
            log::info!("crawl {crawl_id}: {results} results queued again");
            state.wake = true;
            Response::Retried { crawl_id, results }
        }
        Err(err) => not_done(err),
    }
}

pub(super) fn pause(state: &mut State, crawl_id: i64, paused: bool) -> Response {
    match verbs::work::pause(&state.store, crawl_id, paused) {
        Ok(()) => {
            log::info!(
                "crawl {crawl_id} {}",
                if paused { "paused" } else { "resumed" }
            );
            // A queued crawl is claimable again.
            state.wake = true;
            Response::PauseSet { crawl_id, paused }
        }
        Err(err) => not_done(err),
    }
}

pub(super) fn prune(state: &mut State, older_than_ms: Option<u64>, dry_run: bool) -> Response {
    let older_than = older_than_ms.map(Duration::from_millis);
    let store = &state.store;
    match verbs::work::prune(store, &state.config, older_than, dry_run, Compact::IfCheap) {
        Ok(pruned) => {
            if !dry_run {
                log::info!("pruned {} process rows (asked)", pruned.rows);
            }
            Response::Pruned(pruned)
        }
        Err(err) => not_done(err),
    }
}

/// Applies `[retention]`: the rows of finished work older than `keep_days` go.
pub(in crate::daemon) fn apply_retention(state: &mut State) {
    if state.config.retention.keep().is_none() {
        return;
    }
    match verbs::work::prune(&state.store, &state.config, None, false, Compact::IfCheap) {
        Ok(pruned) if pruned.rows > 0 => log::info!(
            "retention: {} process rows that ended over {} days ago pruned",
            pruned.rows,
            state.config.retention.keep_days
        ),
        Ok(_) => {}
        Err(err) => log::warn!("retention: cannot prune old rows now: {err}"),
    }
}

/// `export`: queues the crawls' exports into an ArchiveBox collection; they run from the next
/// turn, each once its crawl is sealed.
pub(super) fn export(
    state: &mut State,
    target: &std::path::Path,
    user: Option<String>,
    crawls: &[i64],
) -> Response {
    let user = user.as_deref();
    match verbs::work::export(&state.store, &state.config, target, user, crawls) {
        Ok(crawls) => {
            state.wake = true;
            Response::ExportQueued { crawls }
        }
        Err(err) => not_done(err),
    }
}
