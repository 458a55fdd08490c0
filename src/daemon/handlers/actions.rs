//! `retry`: queue a sealed crawl's failed (or all unsuccessful) results again, and look for due
//! crawls at once; `pause` and `resume` a crawl (its workers look for themselves); `prune` the
//! process rows of finished work, and `[retention]` applied when a crawl seals (never on a timer:
//! an idle daemon does not wake for it).

use super::{not_done, State};
use crate::control::protocol::Response;
use crate::store::{Compact, RetryScope};
use crate::verbs;
use std::time::{Duration, Instant};

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

/// Rows `[retention]` prunes in one turn of the loop: a share small enough that the loop never
/// waits long on it (a long history's first prune, all at once, could outlast the watchdog).
const PRUNE_PER_TURN: u64 = 2_000;

/// Applies `[retention]`: the rows of finished work older than `keep_days` go, a share a turn;
/// while more are left, the next turn prunes on (`prune_more_at`).
pub(in crate::daemon) fn apply_retention(state: &mut State) {
    state.prune_more_at = None;
    match verbs::work::prune_some(&state.store, &state.config, PRUNE_PER_TURN) {
        Ok(pruned) if pruned.rows > 0 => {
            let more = pruned.rows >= PRUNE_PER_TURN;
            log::info!(
                "retention: {} process rows that ended over {} days ago pruned{}",
                pruned.rows,
                state.config.retention.keep_days,
                if more { "; more at the next turn" } else { "" }
            );
            state.prune_more_at = more.then(Instant::now);
        }
        Ok(_) => {}
        Err(err) => log::warn!("retention: cannot prune old rows now: {err}"),
    }
}

/// Goes on with a prune `apply_retention` left unfinished, once its turn has come.
pub(in crate::daemon) fn prune_if_due(state: &mut State) {
    if state.prune_more_at.is_some_and(|at| at <= Instant::now()) {
        apply_retention(state);
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
