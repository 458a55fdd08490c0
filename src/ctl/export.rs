//! `abxctl export --archivebox DIR [CRAWL…]`: queue crawls' exports into an ArchiveBox
//! collection — through the daemon when it runs, in the database when it does not (they run
//! when it starts) — and with `--wait` follow them until ArchiveBox imported them or they
//! failed.

use super::{client, unexpected, CtlError, Out, Result, FOLLOW_INTERVAL};
use crate::config::Config;
use crate::control::client::ClientError;
use crate::control::protocol::{Request, Response};
use crate::domain::ExportStatus;
use crate::exit;
use crate::store::{Export, Store};
use serde_json::json;
use std::path::Path;

pub(super) fn run(
    config: &Config,
    target: &Path,
    user: Option<&str>,
    crawls: &[i64],
    wait: bool,
    out: Out,
) -> Result<i32> {
    let target = std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
    let request = Request::Export {
        target: target.clone(),
        user: user.map(str::to_string),
        crawls: crawls.to_vec(),
    };
    let (queued, running) = match client(config).request(&request) {
        Ok(Response::ExportQueued { crawls }) => (crawls, true),
        Ok(Response::Error { code, message }) => {
            return Err(CtlError::Refused { code, message });
        }
        Ok(other) => return Err(unexpected(other)),
        Err(ClientError::NotRunning { .. }) => {
            let store = Store::open_existing_at(&config.database)?;
            let queued = crate::verbs::work::export(&store, config, &target, user, crawls)?;
            (queued, false)
        }
        Err(err) => return Err(err.into()),
    };
    let human = || {
        for id in &queued {
            println!("crawl {id}: export into {} queued", target.display());
        }
        if !running {
            println!("abxd is not running: the exports run when it starts");
        }
    };
    if !wait || !running {
        out.answer(
            human,
            || json!({"crawls": queued, "daemon_running": running}),
        );
        return Ok(exit::OK);
    }
    if !out.json {
        human();
    }
    let ended = follow(config, &target, &queued)?;
    let all_imported = ended.iter().all(|e| e.status == ExportStatus::Imported);
    out.answer(
        || {
            for export in &ended {
                println!(
                    "crawl {}: {}: {}",
                    export.crawl_id,
                    export.status,
                    export.detail.as_deref().unwrap_or("")
                );
            }
        },
        || {
            let exports: Vec<_> = (ended.iter())
                .map(|e| json!({"crawl_id": e.crawl_id, "status": e.status.as_str(), "detail": e.detail}))
                .collect();
            json!({"exports": exports})
        },
    );
    Ok(if all_imported {
        exit::OK
    } else {
        exit::FAILURE
    })
}

/// Waits until the exports of `crawls` into `target` ended; returns them.
fn follow(config: &Config, target: &Path, crawls: &[i64]) -> Result<Vec<Export>> {
    loop {
        let store = Store::open_read_only_at(&config.database)?;
        let mut ended = Vec::new();
        for &id in crawls {
            let export = store
                .exports()
                .of_crawl(id)?
                .into_iter()
                .find(|e| e.target == target);
            match export {
                Some(e) if e.status.is_final() => ended.push(e),
                Some(_) => break,
                None => return Err(CtlError::Unexpected(format!("crawl {id}: no export"))),
            }
        }
        if ended.len() == crawls.len() {
            return Ok(ended);
        }
        drop(store);
        std::thread::sleep(FOLLOW_INTERVAL);
    }
}
