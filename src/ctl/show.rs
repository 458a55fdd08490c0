//! `abxctl crawls` and `abxctl show CRAWL`: the work and its results, read from the database.

use super::{CtlError, Out, Result};
use crate::config::Config;
use crate::domain::CrawlState;
use crate::render;
use crate::store::Store;

pub(super) fn crawls(
    config: &Config,
    status: Option<CrawlState>,
    limit: Option<u32>,
    out: Out,
) -> Result<i32> {
    let store = Store::open_read_only_at(&config.database)?;
    let crawls = store.crawls().listed(status, limit)?;
    if out.json {
        println!("{}", render::json::crawls(&store, &crawls)?);
    } else {
        print!("{}", render::crawls_table(&store, &crawls)?);
    }
    Ok(0)
}

/// `abxctl hosts`: the host keys politeness holds, read from the database.
pub(super) fn hosts(config: &Config, out: Out) -> Result<i32> {
    let store = Store::open_read_only_at(&config.database)?;
    let hosts = store.queue().hosts().list()?;
    if out.json {
        let document = serde_json::json!({ "hosts": hosts });
        println!("{}", render::json::document(document));
    } else {
        print!("{}", render::hosts_table(&hosts));
    }
    Ok(0)
}

/// `abxctl find URL`: every snapshot of the URL, as it was crawled (without its fragment).
pub(super) fn find(config: &Config, url: &str, out: Out) -> Result<i32> {
    let url = match url::Url::parse(url.trim()) {
        Ok(mut parsed) => {
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.trim().to_string(),
    };
    let store = Store::open_read_only_at(&config.database)?;
    let snapshots = store.crawls().snapshots_of_url(&url)?;
    if out.json {
        println!("{}", render::json::found(&config.data_dir, &snapshots));
    } else {
        print!(
            "{}",
            render::found_table(&config.data_dir, &url, &snapshots)
        );
    }
    Ok(0)
}

/// `abxctl show CRAWL`: `page` of it (see `render::ShowPage`).
pub(super) fn run(config: &Config, id: i64, page: &render::ShowPage, out: Out) -> Result<i32> {
    let store = Store::open_read_only_at(&config.database)?;
    let shown = if out.json {
        render::json::crawl(&store, id, page)?.map(|json| format!("{json}\n"))
    } else {
        let colour = render::paint::for_stdout();
        render::crawl_report(&store, &config.data_dir, id, page, colour)?
    };
    match shown {
        Some(text) => {
            print!("{text}");
            Ok(0)
        }
        None => Err(CtlError::BadInput(format!(
            "no crawl {id} (see abxctl crawls)"
        ))),
    }
}
