//! `abxctl crawls` and `abxctl show CRAWL`: the work and its results, read from the database.

use super::{CtlError, Out, Result};
use crate::config::Config;
use crate::render;
use crate::store::Store;

pub(super) fn crawls(config: &Config, out: Out) -> Result<i32> {
    let store = Store::open_read_only_at(&config.database)?;
    if out.json {
        println!("{}", render::json::crawls(&store)?);
    } else {
        print!("{}", render::crawls_table(&store)?);
    }
    Ok(0)
}

pub(super) fn run(config: &Config, id: i64, out: Out) -> Result<i32> {
    let store = Store::open_read_only_at(&config.database)?;
    let shown = if out.json {
        render::json::crawl(&store, id)?.map(|json| format!("{json}\n"))
    } else {
        render::crawl_report(&store, &config.data_dir, id, render::paint::for_stdout())?
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
