//! `abxd worker snapshot ID`: one snapshot's hooks by abx-dl's lifecycle, the snapshots they
//! discover and the tags they report.

use super::selection::hooks_for;
use super::{Context, Exit, WorkerError};
use crate::config::Config;
use crate::domain::Queue;
use crate::domain::{Limit, Refusal};
use crate::hooks::{HookRunner, Scope};
use crate::plugins::Phase;
use crate::store::Added;
use crate::store::{Store, StoreError};
use crate::supervisor::SnapshotWorkerChild;
use crate::url_rule::{host_and_port, CrawlFilter};

/// Runs snapshot `snapshot_id`; returns the worker's exit code.
pub fn run_snapshot_worker(config: Config, snapshot_id: i64) -> Result<i32, WorkerError> {
    let Some(mut cx) = Context::open(config, Queue::Snapshots, snapshot_id)? else {
        return Ok(super::EXIT_INTERRUPTED);
    };
    let snapshot = cx
        .store
        .crawls()
        .snapshot(snapshot_id)?
        .ok_or_else(|| WorkerError::Setup(format!("no snapshot {snapshot_id}")))?;
    let crawl = cx
        .store
        .crawls()
        .get(snapshot.crawl_id)?
        .ok_or_else(|| WorkerError::Setup(format!("no crawl {}", snapshot.crawl_id)))?;
    // Lent by another machine's crawl: no crawl worker here holds its hooks to the crawl's
    // egress policy, so this worker does.
    let mut egress_refused = match super::egress::is_lent(&cx)? {
        true => super::egress::hold_to_policy(&mut cx, &crawl)
            .map_err(|why| WorkerError::Setup(format!("snapshot {snapshot_id} not run: {why}")))?,
        false => None,
    };
    let input = super::input::is_input(&cx.config.data_dir, &crawl, &snapshot);
    let hooks = hooks_for(
        &cx.store,
        &cx.config,
        Phase::Snapshot,
        &crawl,
        Some(snapshot_id),
        input,
    )?;
    // (A file its hooks read themselves, `Crawl::import_url`, is not written here.)
    let text = match input {
        true => cx.store.crawls().crawl_input(crawl.id)?,
        false => None,
    };
    if let Some(text) = text {
        super::input::write_input(&cx.config.data_dir, crawl.id, snapshot_id, &text).map_err(
            |err| {
                WorkerError::Setup(format!(
                    "snapshot {snapshot_id}: cannot write its input: {err}"
                ))
            },
        )?;
    }
    log::info!(
        "snapshot {snapshot_id} ({}): {} hooks",
        snapshot.url,
        hooks.len()
    );
    let (max_depth, depth, crawl_id) = (crawl.max_depth, snapshot.depth, crawl.id);
    let rules = crawl.rules.clone();
    if let Some(max) = crawl.rules.limit(Limit::SnapshotMaxSize) {
        let dir = crate::hooks::snapshot_dir(&cx.config.data_dir, crawl_id, snapshot_id);
        cx.watches.size(Limit::SnapshotMaxSize, dir, max);
    }
    // What its hooks discover passes the URL rule of the crawl's seeds and its own rules.
    let filter = CrawlFilter::new(&crawl.urls, &crawl.rules).map_err(|why| {
        WorkerError::Setup(format!("crawl {crawl_id}: its rules are invalid: {why}"))
    })?;
    // (An import's seed hosts are read only by a snapshot whose finds it keeps.)
    let can_discover = !input && depth < max_depth;
    let filter = match can_discover && crawl.imported_seeds > 0 {
        true => filter.with_imported(cx.store.crawls().seed_hosts(crawl_id)?),
        false => filter,
    };
    // What its index says of its crawl: what was submitted — for an import, the file.
    let indexed_crawl = super::input::as_submitted(&cx.store, &cx.config.data_dir, &crawl)?;
    let dir = crate::hooks::snapshot_dir(&cx.config.data_dir, crawl_id, snapshot_id);
    if let Err(err) =
        crate::hooks::index::begin(&cx.config.data_dir, &dir, &indexed_crawl, &snapshot)
    {
        log::warn!(
            "snapshot {snapshot_id}: cannot begin its {}: {err}",
            crate::hooks::index::FILE
        );
    }
    // (What its index says of it once it is sealed.)
    let indexed = (indexed_crawl, snapshot.clone());
    let throttle_of = (crawl.clone(), snapshot.clone());
    let scope = Scope {
        data_dir: cx.config.data_dir.clone(),
        crawl,
        snapshot: Some(snapshot),
        parent_row: cx.row_id,
        run_as: cx.run_as.clone(),
        personas: cx.config.personas_root(),
    };
    let mut runner = HookRunner::new(&cx.store, scope, hooks, false)?;
    // What an input snapshot finds are the crawl's seeds; what another finds is one level
    // deeper, within the crawl's depth.
    let next_depth = match input {
        true => Some(0),
        false => (depth < max_depth).then_some(depth + 1),
    };
    // (An import's seeds have no parent: the file is the crawl's.)
    let parent = (!input).then_some(snapshot_id);
    // The result, its tags and the snapshots it discovered land together or not at all.
    let record = |cx: &mut Context<SnapshotWorkerChild>,
                  runner: &mut HookRunner,
                  exit: Exit<SnapshotWorkerChild>|
     -> Result<(), StoreError> {
        cx.record_hook(runner, exit, |store, outcome| {
            store.results().add_tags(snapshot_id, &outcome.tags)?;
            let Some(depth) = next_depth else {
                return Ok(());
            };
            // What the rules admit is added in one transaction; what they refuse is counted.
            let mut admitted = Vec::with_capacity(outcome.discovered.len());
            for url in &outcome.discovered {
                let checked = match input {
                    true => super::input::admit_seed(url, &rules),
                    false => filter.admit(url),
                };
                match checked {
                    Ok(url) => admitted.push(url),
                    Err(reason) => refuse(store, crawl_id, reason, url)?,
                }
            }
            let added = store
                .crawls()
                .add_snapshots_within(crawl_id, &admitted, depth, parent, &rules)?;
            // (An import's seeds are counted, and their hosts kept, once for all of them; a
            // line each in the log would be a hundred thousand for a library.)
            let mut seeds = Vec::new();
            for (url, added) in admitted.into_iter().zip(added) {
                match added {
                    Added::New(id) if input => {
                        log::debug!("seed {url} (snapshot {id})");
                        seeds.push(url);
                    }
                    Added::New(id) => log::info!("discovered {url} (snapshot {id}, depth {depth})"),
                    Added::Known => {}
                    Added::Archived => refuse(store, crawl_id, Refusal::Archived, &url)?,
                    Added::Full => {
                        store.crawls().note_limit(crawl_id, Limit::MaxUrls)?;
                        refuse(store, crawl_id, Refusal::MaxUrls, &url)?;
                    }
                }
            }
            if !seeds.is_empty() {
                log::info!(
                    "{} seeds queued from the import ({} of its links refused or known)",
                    seeds.len(),
                    outcome.discovered.len() - seeds.len()
                );
                let hosts = seeds.iter().filter_map(|url| host_and_port(url)).collect();
                store.crawls().add_seeds(crawl_id, seeds.len(), &hosts)?;
            }
            Ok(())
        })
        .map(drop)
    };
    cx.run_foreground(&mut runner, record)?;
    cx.run_scope(&mut runner, record)?;
    cx.drain(|cx, exit| record(cx, &mut runner, exit))?;
    if let Some(counts) = &mut egress_refused {
        cx.persist(|store| counts.record(store, crawl_id))?;
    }
    if !cx.interrupted {
        crate::hooks::drop_runtime_persona(&dir, &cx.config.data_dir, cx.run_as.as_ref());
    }
    // A site that said "slow down" gets its cool-down, and the snapshot runs again after it.
    let (crawl, snapshot) = throttle_of;
    if super::politeness::back_off_if_throttled(&mut cx, &crawl, &snapshot, &dir)? {
        return Ok(super::EXIT_INTERRUPTED);
    }
    let data_dir = cx.config.data_dir.clone();
    // (Its hooks are over: what the title hook said is final.)
    let (results, reported_tags) = cx
        .persist(|store| {
            let results = store.results().snapshot_results(snapshot_id)?;
            Ok((results, store.results().tags(snapshot_id)?))
        })?
        .unwrap_or_default();
    let code = cx.finish(Queue::Snapshots, snapshot_id)?;
    if code == super::EXIT_DONE {
        // (Its index says sealed once the database does.)
        let (crawl, snapshot) = indexed;
        let seal = crate::hooks::index::Seal {
            title: crate::hooks::index::title_of(&results, snapshot_id),
            sealed_at: crate::store::now_ms(),
            size: crate::hooks::bytes_below(&dir),
            tags: crate::hooks::index::tags_of(&crawl, &reported_tags),
        };
        if let Err(err) = crate::hooks::index::seal(&data_dir, &dir, (&crawl, &snapshot), &seal) {
            log::warn!("snapshot {snapshot_id}: its index is not sealed: {err}");
        }
    }
    Ok(code)
}

/// A link the rules or the crawl's limits turned away: logged, and counted among the crawl's
/// refused links.
fn refuse(store: &Store, crawl_id: i64, reason: Refusal, url: &str) -> Result<(), StoreError> {
    log::info!(
        "discovered {}: refused ({reason})",
        crate::printable::line(url)
    );
    store.crawls().refuse_url(crawl_id, reason, url)
}
