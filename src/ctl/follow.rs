//! `abxctl follow [CRAWL]`, and `abxctl add --wait`: a crawl followed until it is sealed — a
//! line for each result that starts or ends (with `--json`, a JSON document a line), then its
//! report — exiting as [`exit::of_crawl`] says; Ctrl-C stops the following, never the crawl.

use super::{CtlError, Out, Result, FOLLOW_INTERVAL};
use crate::config::Config;
use crate::domain::{Crawl, WorkStatus};
use crate::exit;
use crate::render;
use crate::store::Store;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What following prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shown {
    /// A line for each change (a live status line on a terminal), then the crawl's report.
    Lines,
    /// Nothing until the end, then the crawl as `show --json` prints it (`add --wait --json`).
    Report,
    /// A JSON document a line: each change, then the seal (`follow --json`).
    JsonLines,
}

impl Shown {
    /// What `add --wait` prints, as asked.
    pub(super) fn of_add(out: Out) -> Shown {
        match out.json {
            true => Shown::Report,
            false => Shown::Lines,
        }
    }
}

/// `abxctl follow [CRAWL]`: crawl `id`, or the newest crawl not sealed yet.
pub(super) fn run(config: &Config, id: Option<i64>, out: Out) -> Result<i32> {
    let id = match id {
        Some(id) => id,
        None => {
            let store = Store::open_read_only_at(&config.database)?;
            let crawls = store.crawls().recent_crawls(1000)?;
            let running = crawls.iter().find(|c| c.status != WorkStatus::Sealed);
            running.map(|c| c.id).ok_or_else(|| {
                CtlError::BadInput(
                    "no crawl runs or waits to run: name one to follow (see abxctl crawls)".into(),
                )
            })?
        }
    };
    let shown = match out.json {
        true => Shown::JsonLines,
        false => Shown::Lines,
    };
    follow_crawl(config, id, shown)
}

/// Prints crawl `id`'s progress until it is sealed, then its report; exits as
/// [`exit::of_crawl`] says, or with [`exit::INTERRUPTED`] at Ctrl-C (the crawl goes on).
pub(super) fn follow_crawl(config: &Config, id: i64, shown: Shown) -> Result<i32> {
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))
        .map_err(|err| CtlError::Unexpected(format!("cannot catch SIGINT: {err}")))?;
    let mut follow = (shown == Shown::Lines).then(render::Follow::new);
    let mut progress = render::Progress::default();
    loop {
        let store = Store::open_read_only_at(&config.database)?;
        let crawl = store.crawls().get(id)?;
        if crawl.is_none() {
            return Err(CtlError::BadInput(format!(
                "no crawl {id} (see abxctl crawls)"
            )));
        }
        match (&mut follow, shown) {
            (Some(follow), _) => follow.update(&store, id)?,
            (None, Shown::JsonLines) => {
                for change in progress.changes(&store, id)?.0 {
                    let mut line = json!({"event": "result", "crawl_id": id});
                    let fields = serde_json::to_value(&change).expect("a change serializes");
                    merge(&mut line, fields);
                    println!("{line}");
                }
            }
            (None, _) => {}
        }
        if let Some(crawl) = crawl.filter(|c| c.status == WorkStatus::Sealed) {
            if let Some(follow) = &mut follow {
                follow.finish();
            }
            let results = store.results().of_crawl(id)?;
            print_end(&store, config, &crawl, shown)?;
            return Ok(exit::of_crawl(&crawl, &results));
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

/// What following prints once the crawl is sealed.
fn print_end(store: &Store, config: &Config, crawl: &Crawl, shown: Shown) -> Result<()> {
    let id = crawl.id;
    match shown {
        Shown::Report => println!(
            "{}",
            render::json::crawl(store, id, &Default::default())?.unwrap_or_default()
        ),
        Shown::JsonLines => {
            let (_, results) = store.crawls().work_counts(id)?;
            let counts: serde_json::Map<String, serde_json::Value> = (results.into_iter())
                .map(|(status, n)| (status.to_string(), json!(n)))
                .collect();
            let sealed = json!({
                "event": "sealed",
                "crawl_id": id,
                "outcome": crawl.outcome,
                "ended_by": crawl.ended_by,
                "results": counts,
            });
            println!("{sealed}");
        }
        Shown::Lines => {
            println!();
            let paint = render::paint::for_stdout();
            let page = Default::default();
            let report = render::crawl_report(store, &config.data_dir, id, &page, paint)?;
            print!("{}", report.unwrap_or_default());
        }
    }
    Ok(())
}

/// `into` (an object) with the keys of `more` (an object) added.
fn merge(into: &mut serde_json::Value, more: serde_json::Value) {
    if let (Some(into), serde_json::Value::Object(more)) = (into.as_object_mut(), more) {
        into.extend(more);
    }
}
