//! `abxctl crawls` and `abxctl show CRAWL`: the work and its results, read from the database.

use super::{CtlError, Result};
use crate::config::Config;
use crate::render;
use crate::store::Store;

pub(super) fn crawls(config: &Config) -> Result<i32> {
    let store = Store::open_read_only(&config.database)?;
    print!("{}", render::crawls_table(&store)?);
    Ok(0)
}

pub(super) fn run(config: &Config, id: i64) -> Result<i32> {
    let store = Store::open_read_only(&config.database)?;
    match render::crawl_report(&store, &config.data_dir, id)? {
        Some(report) => {
            print!("{report}");
            Ok(0)
        }
        None => Err(CtlError::BadInput(format!(
            "no crawl {id} (see abxctl crawls)"
        ))),
    }
}
