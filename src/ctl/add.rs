//! `abxctl add`: queue a crawl — through the daemon when it runs, in the database when it does
//! not — and with `--wait` follow it until it is sealed.

use super::{client, unexpected, CtlError, Out, Result, FOLLOW_INTERVAL};
use crate::cli::CrawlArgs;
use crate::config::Config;
use crate::control::client::ClientError;
use crate::control::protocol::{Request, Response};
use crate::domain::WorkStatus;
use crate::exit;
use crate::render;
use crate::store::Store;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(super) fn run(
    config: &Config,
    urls: &[String],
    crawl: &CrawlArgs,
    wait: bool,
    out: Out,
) -> Result<i32> {
    for url in urls {
        validate_url(url)?;
    }
    // Through the daemon when it runs (it owns the database: members of control.group may add
    // without write access to it); written here when it does not, to run when it starts.
    let request = Request::Add {
        urls: urls.to_vec(),
        depth: crawl.depth,
        plugins: crawl.plugins.clone(),
        rules: crawl.rules(),
    };
    let (id, running) = match client(config).request(&request) {
        Ok(Response::Added { crawl_id }) => (crawl_id, true),
        Ok(Response::Error { code, message }) => {
            return Err(CtlError::Refused { code, message });
        }
        Ok(other) => return Err(unexpected(other)),
        Err(ClientError::NotRunning { .. }) => {
            // The daemon checks the plugin list when it runs; with it down, abxctl does.
            validate_plugins(config, crawl)?;
            (add_while_down(config, urls, crawl)?, false)
        }
        Err(err) => return Err(err.into()),
    };
    let human = || {
        println!("crawl {id} queued");
        if !running {
            println!("abxd is not running: the crawl runs when it starts");
        }
    };
    if !wait {
        out.answer(human, || json!({"crawl_id": id, "daemon_running": running}));
        return Ok(exit::OK);
    }
    if !out.json {
        human();
    }
    follow_crawl(config, id, out)
}

/// Enqueues a crawl by writing the database itself (the daemon is down). Only the daemon's
/// first start creates a database: with none, this says so.
fn add_while_down(config: &Config, urls: &[String], crawl: &CrawlArgs) -> Result<i64> {
    let mut store = Store::open_existing_at(&config.database)?;
    let rules = crawl.rules().over(&config.crawl.rules());
    let export_to = config.archivebox.export_to();
    let plugins = crawl.plugins.as_deref();
    Ok(store.add_crawl_with(urls, crawl.depth, plugins, &rules, export_to)?)
}

/// Prints a crawl's progress until it is sealed, then its report; exits as [`exit::of_crawl`]
/// says, or with [`exit::INTERRUPTED`] at Ctrl-C (the crawl goes on: only the following stops).
fn follow_crawl(config: &Config, id: i64, out: Out) -> Result<i32> {
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))
        .map_err(|err| CtlError::Unexpected(format!("cannot catch SIGINT: {err}")))?;
    let mut follow = (!out.json).then(render::Follow::new);
    loop {
        let store = Store::open_read_only_at(&config.database)?;
        if let Some(follow) = &mut follow {
            follow.update(&store, id)?;
        }
        let crawl = store.crawl(id)?;
        if let Some(crawl) = crawl.filter(|c| c.status == WorkStatus::Sealed) {
            if let Some(follow) = &mut follow {
                follow.finish();
            }
            if out.json {
                println!("{}", render::json::crawl(&store, id)?.unwrap_or_default());
            } else {
                println!();
                print!(
                    "{}",
                    render::crawl_report(
                        &store,
                        &config.data_dir,
                        id,
                        render::paint::for_stdout()
                    )?
                    .unwrap_or_default()
                );
            }
            return Ok(exit::of_crawl(&crawl, &store.results(id)?));
        }
        drop(store);
        if interrupted.load(Ordering::Relaxed) {
            if let Some(follow) = &mut follow {
                follow.finish();
            }
            eprintln!(
                "abxctl: interrupted: no longer following crawl {id}, which goes on \
                 (abxctl cancel {id} stops it)"
            );
            return Ok(exit::INTERRUPTED);
        }
        std::thread::sleep(FOLLOW_INTERVAL);
    }
}

/// Refuses a plugin list that names plugins that do not exist, before anything is written.
pub fn validate_plugins(config: &Config, crawl: &CrawlArgs) -> Result<()> {
    let Some(names) = &crawl.plugins else {
        return Ok(());
    };
    crate::plugins::Catalog::load(&config.plugins_dirs)
        .check_names(names)
        .map_err(|unknown| CtlError::BadInput(unknown.to_string()))
}

/// Refuses what cannot be a URL to crawl, before anything is written.
pub fn validate_url(url: &str) -> Result<()> {
    match crate::url_rule::seed_problem(url) {
        None => Ok(()),
        Some(why) => Err(CtlError::BadInput(why)),
    }
}
