//! `add`: enqueue a crawl a client asked for, and look for due crawls at once.

use super::{failed, refused, State};
use crate::control::protocol::{ErrorCode, Response};
use crate::plugins::Catalog;
use crate::store::Store;

pub(super) fn handle(
    state: &mut State,
    urls: &[String],
    depth: u32,
    plugins: Option<&[String]>,
) -> Response {
    if urls.is_empty() {
        return refused(ErrorCode::Malformed, "a crawl needs at least one URL");
    }
    state.check_database();
    if let Some(lost) = &state.database_lost {
        return failed(lost.explain());
    }
    if let Some(why) = urls.iter().find_map(|url| Store::invalid_url(url)) {
        return refused(ErrorCode::Malformed, why);
    }
    if let Some(names) = plugins {
        let catalog = Catalog::load(&state.config.plugins_dirs);
        if let Err(unknown) = catalog.check_names(names) {
            return refused(ErrorCode::NotFound, unknown.to_string());
        }
    }
    match state.store.add_crawl(urls, depth, plugins) {
        Ok(crawl_id) => {
            log::info!("crawl {crawl_id} added: {} URLs", urls.len());
            state.wake = true;
            Response::Added { crawl_id }
        }
        Err(err) => failed(format!("cannot enqueue the crawl: {err}")),
    }
}
