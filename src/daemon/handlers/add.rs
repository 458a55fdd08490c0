//! `add`: enqueue a crawl a client asked for, and look for due crawls at once.
//!
//! Invariant: an `add` is answered within [`ADD_PATIENCE`]: accepted, or refused saying why. One
//! the busy database refused (another process holds its write lock) is parked and tried again
//! every turn meanwhile, so the loop never waits for the lock on a client's behalf.

use super::{failed, refused, State};
use crate::control::protocol::{ErrorCode, Response};
use crate::domain::CrawlRules;
use crate::plugins::Catalog;
use crate::store::StoreError;
use mio::Token;
use std::time::{Duration, Instant};

/// How long an `add` the busy database refused is tried again before it is refused.
const ADD_PATIENCE: Duration = Duration::from_millis(800);

/// What a client asks to enqueue.
pub(in crate::daemon) struct Add {
    pub urls: Vec<String>,
    pub depth: u32,
    pub plugins: Option<Vec<String>>,
    pub rules: CrawlRules,
    /// What to import instead of `urls`.
    pub input: Option<String>,
}

/// A crawl to enqueue, waiting for the database's lock.
pub(in crate::daemon) struct ParkedAdd {
    token: Token,
    /// Its rules over `[crawl]`'s defaults.
    add: Add,
    until: Instant,
}

pub(super) fn handle(state: &mut State, token: Token, add: Add) -> Option<Response> {
    let Add {
        urls,
        depth,
        plugins,
        rules,
        input,
    } = add;
    match (&input, urls.is_empty()) {
        (None, true) => {
            return Some(refused(
                ErrorCode::Malformed,
                "a crawl needs at least one URL",
            ))
        }
        (Some(_), false) => {
            return Some(refused(
                ErrorCode::Malformed,
                "a crawl takes URLs or an input to import, not both",
            ))
        }
        (Some(text), true) if text.trim().is_empty() => {
            return Some(refused(
                ErrorCode::Malformed,
                "the input to import is empty",
            ))
        }
        _ => {}
    }
    state.check_database();
    if let Some(lost) = &state.database_lost {
        return Some(failed(lost.explain()));
    }
    if let Some(why) = urls
        .iter()
        .find_map(|url| crate::url_rule::seed_problem(url))
    {
        return Some(refused(ErrorCode::Malformed, why));
    }
    if let Some(why) = rules.problem() {
        return Some(refused(ErrorCode::Malformed, why));
    }
    if let Err(why) = &state.hooks {
        return Some(refused(ErrorCode::NotAllowed, why.clone()));
    }
    if let Some(names) = &plugins {
        let catalog = Catalog::load(&state.config.plugins_dirs);
        if let Err(unknown) = catalog.check_names(names) {
            return Some(refused(ErrorCode::NotFound, unknown.to_string()));
        }
    }
    let parked = ParkedAdd {
        token,
        add: Add {
            urls,
            depth,
            plugins,
            rules: rules.over(&state.config.crawl.rules()),
            input,
        },
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
    let add = &parked.add;
    let (plugins, export_to) = (add.plugins.as_deref(), state.config.archivebox.export_to());
    match &add.input {
        Some(input) => {
            let store = &mut state.store;
            store
                .crawls()
                .add_of_input(input, add.depth, plugins, &add.rules, export_to)
        }
        None => {
            let store = &mut state.store;
            store
                .crawls()
                .add_with(&add.urls, add.depth, plugins, &add.rules, export_to)
        }
    }
}

fn answer_of(added: Result<i64, StoreError>, add: &ParkedAdd) -> Response {
    match added {
        Ok(crawl_id) => {
            match &add.add.input {
                Some(input) => {
                    log::info!("crawl {crawl_id} added: {} bytes to import", input.len())
                }
                None => log::info!("crawl {crawl_id} added: {} URLs", add.add.urls.len()),
            }
            Response::Added { crawl_id }
        }
        Err(err) if err.is_busy() => failed(format!(
            "cannot enqueue the crawl: {err}; nothing was queued: try again once it is released"
        )),
        Err(err) => failed(format!("cannot enqueue the crawl: {err}")),
    }
}
