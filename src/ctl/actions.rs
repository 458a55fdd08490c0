//! `abxctl retry`, `pause`, `resume`, `prune`: act on the work — through the daemon when it
//! runs, in the database when it does not (for its next start), by the same verbs (`verbs::work`).

use super::{ask_or_do_locally, Out, Result};
use crate::config::Config;
use crate::control::protocol::{Request, Response};
use crate::exit;
use crate::store::{Compact, RetryScope};
use crate::verbs;
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
    let (results, running) = ask_or_do_locally(
        config,
        &request,
        |response| match response {
            Response::Retried { results, .. } => Ok(results),
            other => Err(other),
        },
        |store| Ok(verbs::work::retry(store, crawl_id, which, hook.as_deref())?),
    )?;
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
    let ((), running) = ask_or_do_locally(
        config,
        &request,
        |response| match response {
            Response::PauseSet { .. } => Ok(()),
            other => Err(other),
        },
        |store| Ok(verbs::work::pause(store, crawl_id, paused)?),
    )?;
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

pub(super) fn prune(
    config: &Config,
    older_than: Option<std::time::Duration>,
    dry_run: bool,
    out: Out,
) -> Result<i32> {
    let request = Request::Prune {
        older_than_ms: older_than.map(|d| d.as_millis() as u64),
        dry_run,
    };
    let (pruned, running) = ask_or_do_locally(
        config,
        &request,
        |response| match response {
            Response::Pruned(pruned) => Ok(pruned),
            other => Err(other),
        },
        // abxd is down: the file may be rewritten whole to give the space back.
        |store| {
            let compact = Compact::Rewrite;
            Ok(verbs::work::prune(
                store, config, older_than, dry_run, compact,
            )?)
        },
    )?;
    out.answer(
        || {
            let rows = pruned.rows;
            if dry_run {
                println!("{rows} process rows would be pruned");
            } else {
                println!(
                    "{rows} process rows pruned; database {} -> {}",
                    crate::render::bytes(pruned.bytes_before),
                    crate::render::bytes(pruned.bytes_after)
                );
            }
        },
        || {
            json!({"dry_run": dry_run, "rows": pruned.rows, "bytes_before": pruned.bytes_before,
                   "bytes_after": pruned.bytes_after, "daemon_running": running})
        },
    );
    Ok(exit::OK)
}
