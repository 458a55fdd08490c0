//! `abxctl retry`, `pause`, `resume`: act on a crawl — through the daemon when it runs, in the
//! database when it does not (for its next start).

use super::{ask, unexpected, CtlError, Out, Result};
use crate::config::Config;
use crate::control::client::ClientError;
use crate::control::protocol::{ErrorCode, Request, Response};
use crate::exit;
use crate::store::{RetryScope, Store};
use serde_json::json;

pub(super) fn retry(
    config: &Config,
    crawl_id: i64,
    which: RetryScope,
    hook: Option<String>,
    out: Out,
) -> Result<i32> {
    let request = Request::Retry {
        crawl_id,
        which,
        hook: hook.clone(),
    };
    let mut running = true;
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
            running = false;
            results
        }
        Err(err) => return Err(err),
    };
    out.answer(
        || {
            if !running {
                println!("abxd is not running: the crawl runs again when it starts");
            }
            println!("crawl {crawl_id} queued again: {results} results to run");
        },
        || json!({"crawl_id": crawl_id, "results": results, "daemon_running": running}),
    );
    Ok(exit::OK)
}

pub(super) fn pause(config: &Config, crawl_id: i64, paused: bool, out: Out) -> Result<i32> {
    let request = if paused {
        Request::Pause { crawl_id }
    } else {
        Request::Resume { crawl_id }
    };
    let mut running = true;
    match ask(config, &request) {
        Ok(Response::PauseSet { .. }) => {}
        Ok(other) => return Err(unexpected(other)),
        Err(CtlError::Client(ClientError::NotRunning { .. })) => {
            Store::open_existing(&config.database)?
                .set_paused(crawl_id, paused)?
                .map_err(|message| CtlError::Refused {
                    code: ErrorCode::NotAllowed,
                    message,
                })?;
            running = false;
        }
        Err(err) => return Err(err),
    }
    out.answer(
        || {
            if !running {
                println!("abxd is not running: written to the database");
            }
            if paused {
                println!("crawl {crawl_id} paused: no more of its hooks start; running ones go on");
            } else {
                println!("crawl {crawl_id} resumed");
            }
        },
        || json!({"crawl_id": crawl_id, "paused": paused, "daemon_running": running}),
    );
    Ok(exit::OK)
}
