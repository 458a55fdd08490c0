//! `add`: enqueue a crawl a client asked for, and look for due crawls at once.
//!
//! Invariant: an `add` is answered within [`ADD_PATIENCE`]: accepted, or refused saying why. Its
//! write waits for another process's lock at most `CLIENT_WAIT` (`store::answer_soon`); one the
//! busy database still refused is parked and tried again every turn meanwhile, so the loop waits
//! for the lock on a client's behalf only that long.

use super::{failed, refused, State};
use crate::control::protocol::{ErrorCode, Response};
use crate::domain::CrawlSpec;
use crate::store::StoreError;
use crate::verbs::{self, crawl::Admitted};
use mio::Token;
use std::time::{Duration, Instant};

/// How long an `add` the busy database refused is tried again before it is refused.
const ADD_PATIENCE: Duration = Duration::from_millis(800);

/// A crawl to enqueue, waiting for the database's lock.
pub(in crate::daemon) struct ParkedAdd {
    token: Token,
    crawl: Admitted,
    until: Instant,
}

pub(super) fn handle(state: &mut State, token: Token, spec: CrawlSpec) -> Option<Response> {
    state.check_database();
    if let Some(lost) = &state.database_lost {
        return Some(failed(lost.explain()));
    }
    if let Err(why) = &state.hooks {
        return Some(refused(ErrorCode::NotAllowed, why.clone()));
    }
    let crawl = match verbs::crawl::admit(&state.config, spec) {
        Ok(crawl) => crawl,
        Err(refusal) => return Some(refused(refusal.code, refusal.message)),
    };
    let parked = ParkedAdd {
        token,
        crawl,
        until: Instant::now() + ADD_PATIENCE,
    };
    match try_add(state, &parked) {
        Err(err) if err.is_busy() => {
            state.parked_adds.push(parked);
            None
        }
        answer => {
            state.wake = answer.is_ok();
            Some(answer_of(answer, &parked))
        }
    }
}

/// Tries the parked adds again; returns the answers of those that are settled (enqueued, or
/// refused because their time is up).
pub(in crate::daemon) fn retry_parked(state: &mut State) -> Vec<(Token, Response)> {
    let now = Instant::now();
    let mut answers = Vec::new();
    for parked in std::mem::take(&mut state.parked_adds) {
        match try_add(state, &parked) {
            Err(err) if err.is_busy() && now < parked.until => state.parked_adds.push(parked),
            answer => answers.push((parked.token, answer_of(answer, &parked))),
        }
    }
    answers
}

fn try_add(state: &mut State, parked: &ParkedAdd) -> Result<i64, StoreError> {
    // A client waits for this write: it must not wait long for another process's lock.
    crate::store::answer_soon();
    verbs::crawl::enqueue(&state.store, &state.config, &parked.crawl)
}

fn answer_of(added: Result<i64, StoreError>, add: &ParkedAdd) -> Response {
    match added {
        Ok(crawl_id) => {
            let spec = add.crawl.spec();
            match &spec.input {
                Some(input) => {
                    log::info!("crawl {crawl_id} added: {} bytes to import", input.len())
                }
                None => log::info!("crawl {crawl_id} added: {} URLs", spec.urls.len()),
            }
            Response::Added { crawl_id }
        }
        Err(err) if err.is_busy() => failed(format!(
            "cannot enqueue the crawl: {err}; nothing was queued: try again once it is released"
        )),
        Err(err) => failed(format!("cannot enqueue the crawl: {err}")),
    }
}
