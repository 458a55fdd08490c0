//! `abxctl retry`: run a sealed crawl's unsuccessful results again — through the daemon when it
//! runs, in the database when it does not (they run when it starts).

use super::{ask, unexpected, CtlError, Result};
use crate::config::Config;
use crate::control::client::ClientError;
use crate::control::protocol::{ErrorCode, Request, Response};
use crate::exit;
use crate::store::{RetryScope, Store};

pub(super) fn run(
    config: &Config,
    crawl_id: i64,
    which: RetryScope,
    hook: Option<String>,
) -> Result<i32> {
    let request = Request::Retry {
        crawl_id,
        which,
        hook: hook.clone(),
    };
    let results = match ask(config, &request) {
        Ok(Response::Retried { results, .. }) => results,
        Ok(other) => return Err(unexpected(other)),
        Err(CtlError::Client(ClientError::NotRunning { .. })) => {
            let mut store = Store::open_existing(&config.database)?;
            let results = store
                .retry_results(crawl_id, which, hook.as_deref())?
                .map_err(|message| CtlError::Refused {
                    code: ErrorCode::NotAllowed,
                    message,
                })?;
            println!("abxd is not running: the crawl runs again when it starts");
            results
        }
        Err(err) => return Err(err),
    };
    println!("crawl {crawl_id} queued again: {results} results to run");
    Ok(exit::OK)
}
