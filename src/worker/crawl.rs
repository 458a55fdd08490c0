//! `abxd worker crawl ID`: a crawl's hooks (`CrawlSetup` and `Crawl`), then its snapshots, each
//! by a snapshot worker of a [`WorkerPool`], until every snapshot is sealed; then the end of the
//! crawl's scope stops its background hooks.

use super::selection::{hooks_for, snapshots_launch_browsers};
use super::{Context, Exit, WorkerError};
use crate::config::Config;
use crate::domain::{Limit, Queue, Refusal};
use crate::hooks::{HookRunner, Scope, PAUSE_POLL};
use crate::plugins::Phase;
use crate::pool::WorkerPool;
use crate::store::{now_ms, Added, Crawl, OrLater, StoreError};
use crate::supervisor::CrawlWorkerChild;
use std::time::{Duration, Instant};

/// Runs crawl `crawl_id`; returns the worker's exit code.
pub fn run_crawl_worker(config: Config, crawl_id: i64) -> Result<i32, WorkerError> {
    let Some(mut cx) = Context::open(config, Queue::Crawls, crawl_id)? else {
        return Ok(super::EXIT_INTERRUPTED);
    };
    // In a fleet, other hosts run some of its snapshots: their ends (and what they discover)
    // wake this loop.
    let _listening =
        crate::store::listen::wake_on_work_changes(&cx.config.database, cx.supervisor.registry())?;
    let crawl = cx
        .store
        .crawls()
        .get(crawl_id)?
        .ok_or_else(|| WorkerError::Setup(format!("no crawl {crawl_id}")))?;
    let mut egress_refused = match super::egress::hold_to_policy(&mut cx, &crawl) {
        Ok(refused) => refused,
        Err(why) => {
            // (Nothing of it runs: it ends failed, saying why.)
            log::error!("crawl {crawl_id} not run: {why}");
            cx.failed = true;
            return cx.finish(Queue::Crawls, crawl_id);
        }
    };
    let hooks = hooks_for(&cx.store, &cx.config, Phase::Crawl, &crawl, None, false)?;
    log::info!("crawl {crawl_id}: {} crawl hooks", hooks.len());
    let urls = crawl.urls.clone();
    let (has_input, data_dir) = (crawl.has_input, cx.config.data_dir.clone());
    let input_crawl = crawl.clone();
    watch_limits(&mut cx, &crawl);
    // (A seed is crawled whatever `--only-new` says: it is what was asked for — a feed fetched
    // again to find what is new in it.)
    let seed_rules = crate::domain::CrawlRules {
        only_new: None,
        ..crawl.rules.clone()
    };
    let launches = match snapshots_launch_browsers(&cx.config, &crawl) {
        true => crate::pool::Launches::EachStart,
        false => crate::pool::Launches::Nothing,
    };
    let gate = crate::pool::Gate::new(launches);
    let scope = Scope {
        data_dir: cx.config.data_dir.clone(),
        crawl,
        snapshot: None,
        parent_row: cx.row_id,
        run_as: cx.run_as.clone(),
        personas: cx.config.personas_root(),
    };
    // (Snapshots still to run — retried, or left by a crash — need the crawl's sessions.)
    let snapshots_wait = !cx.store.crawls().all_sealed(crawl_id)?;
    let mut runner = HookRunner::new(&cx.store, scope, hooks, snapshots_wait)?;
    let mut pool = WorkerPool::snapshots(crawl_id, cx.row_id)
        .with_gate(gate)
        .at_most(input_crawl.rules.max_concurrent_snapshots);
    cx.run_foreground(&mut runner, |cx, runner, exit| {
        record(cx, runner, &mut pool, exit)
    })?;
    // A crawl hook it needs failed before its snapshots: none is added.
    let failed_early = runner.fatal().is_some();
    let added = cx.persist(|store| {
        if failed_early {
            return Ok(());
        }
        store.all_or_nothing(|store| {
            if has_input {
                // (Its seeds are what its input snapshot parses.)
                store.crawls().add_input_snapshot(crawl_id, |id| {
                    super::input::input_url_of(&data_dir, &input_crawl, id)
                })?;
            }
            for url in &urls {
                match store
                    .crawls()
                    .add_snapshot_within(crawl_id, url, 0, &seed_rules)?
                {
                    Added::Full => {
                        store.crawls().refuse_url(crawl_id, Refusal::MaxUrls, url)?;
                        store.crawls().note_limit(crawl_id, Limit::MaxUrls)?;
                    }
                    Added::New(_) | Added::Known | Added::Archived => {}
                }
            }
            Ok(())
        })
    })?;
    // What its snapshots wait for, as `abxctl status` last read it (one a dead worker of this
    // crawl left said is cleared first).
    let mut said = Some(String::new());
    while !cx.interrupted && cx.ended_by.is_none() && added.is_some() {
        // Once a crawl hook it needs failed, no new snapshot starts; running ones finish.
        cx.failed = runner.fatal().is_some();
        // A paused crawl claims no snapshot (running snapshot workers go on) and looks again.
        // (Unread: taken as paused until it is read.)
        let paused = cx
            .store
            .crawls()
            .is_paused(crawl_id)
            .or_later()?
            .unwrap_or(true);
        // (An imported crawl's seeds, unread: asked again soon; meanwhile nothing is claimed.)
        let seeds_unread = match egress_refused.as_mut() {
            Some(held) => held
                .widen_to_local_seeds(&cx.store, crawl_id)
                .or_later()?
                .is_none(),
            None => false,
        };
        let refused = seeds_unread
            || (!paused && !cx.failed && {
                let filled = cx.fill(&mut pool);
                cx.unless_lost(filled).or_later()?.is_none()
            });
        let waits = pool.waiting().or(pool.waiting_for_turn());
        say_what_waits(&mut cx, crawl_id, waits, &mut said);
        // (Unread while the database is out of reach: read again soon.)
        let all_sealed = cx.store.crawls().all_sealed(crawl_id).or_later()?;
        if pool.is_idle() && (all_sealed == Some(true) || cx.failed) {
            break;
        }
        // Claims, recoveries or reads the busy database refused are tried again soon.
        let retry = (refused || !cx.torn_down.is_empty() || all_sealed.is_none())
            .then(|| cx.store.outbox().next_try());
        // Wake for a snapshot that is waiting out a back-off, or for the crawl's hooks.
        let back_off = (!paused && !cx.failed)
            .then(|| pool.next_due(&cx.config, &cx.store))
            .flatten();
        let resume = paused.then(|| Instant::now() + PAUSE_POLL);
        let admission = pool
            .waiting()
            .map(|_| Instant::now() + crate::admission::POLL);
        // (What its snapshots cost is watched while they run: see `admission`.)
        let memory_watch = pool.watch_memory(&cx.config);
        let timer = [
            back_off,
            runner.next_timer(&cx.store),
            retry,
            resume,
            admission,
            memory_watch,
        ]
        .into_iter()
        .flatten()
        .min();
        // Exits first: a teardown reported in the same batch may be of a worker that just
        // exited leaving processes behind.
        let exits = cx.next_exits_of(&mut runner, timer)?;
        // (What its egress policy refused is read when a hook or a snapshot worker ended.)
        let ended = !exits.is_empty();
        for exit in exits {
            let handled = record(&mut cx, &mut runner, &mut pool, exit);
            cx.handled(exit, handled)?;
        }
        runner.after_turn(&mut cx.supervisor, &cx.store)?;
        if let Some(counts) = egress_refused.as_mut().filter(|_| ended) {
            // (A busy database: counted at a later turn.)
            counts.record(&cx.store, crawl_id).or_later()?;
        }
        for row in std::mem::take(&mut cx.torn_down) {
            let recovered = pool.on_torn_down(&cx.config, &cx.store, row);
            if cx.unless_lost(recovered).or_later()?.is_none() {
                // Looked at again after the next turn (nothing changed).
                cx.torn_down.push(row);
            }
        }
    }
    say_what_waits(&mut cx, crawl_id, None, &mut said);
    cx.run_scope(&mut runner, |cx, runner, exit| {
        record(cx, runner, &mut pool, exit)
    })?;
    cx.drain(|cx, exit| record(cx, &mut runner, &mut pool, exit))?;
    if let Some(counts) = &mut egress_refused {
        cx.persist(|store| counts.record(store, crawl_id))?;
    }
    if !cx.interrupted {
        let dir = crate::hooks::crawl_dir(&cx.config.data_dir, crawl_id);
        crate::hooks::drop_runtime_persona(&dir, &cx.config.data_dir, cx.run_as.as_ref());
    }
    cx.finish(Queue::Crawls, crawl_id)
}

/// Tells `abxctl status` what the crawl's snapshots wait for, when that changed since it was
/// last `said`. (Best effort: a write the database refused is tried at the next turn, and a
/// failure is only logged — it is a report, not the work.)
fn say_what_waits(
    cx: &mut Context<CrawlWorkerChild>,
    crawl_id: i64,
    waits_for: Option<&str>,
    said: &mut Option<String>,
) {
    if said.as_deref() == waits_for {
        return;
    }
    match cx
        .store
        .crawls()
        .note_admission(crawl_id, waits_for)
        .or_later()
    {
        Ok(Some(())) => *said = waits_for.map(str::to_owned),
        Ok(None) => {}
        Err(err) => log::warn!("crawl {crawl_id}: cannot say what its snapshots wait for: {err}"),
    }
}

/// Watches the crawl's `--timeout` (from its first start) and `--max-size`.
fn watch_limits(cx: &mut Context<CrawlWorkerChild>, crawl: &Crawl) {
    if let Some(seconds) = crawl.rules.limit(Limit::Timeout) {
        let started = crawl.started_at.unwrap_or_else(now_ms);
        let left_ms = (started + (seconds as i64).saturating_mul(1000) - now_ms()).max(0);
        cx.watches
            .deadline(Limit::Timeout, Duration::from_millis(left_ms as u64));
    }
    if let Some(max) = crawl.rules.limit(Limit::MaxSize) {
        let dir = crate::hooks::crawl_dir(&cx.config.data_dir, crawl.id);
        cx.watches.size(Limit::MaxSize, dir, max);
    }
}

/// A child of the crawl worker exited: a snapshot worker (its work sealed or recovered) or one
/// of the crawl's hooks (its result recorded).
fn record(
    cx: &mut Context<CrawlWorkerChild>,
    runner: &mut HookRunner,
    pool: &mut WorkerPool<CrawlWorkerChild>,
    exit: Exit<CrawlWorkerChild>,
) -> Result<(), StoreError> {
    // An interrupted crawl worker leaves the recovery of its snapshots to the daemon, which
    // recovers the whole crawl once this worker is gone; one a limit ended seals them.
    let recover = !cx.interrupted && cx.ended_by.is_none();
    match exit.owner {
        CrawlWorkerChild::SnapshotWorkers => {
            match pool.on_exit(&cx.config, &cx.store, exit.row, exit.leaked, recover)? {
                Some(end) => pool.log_end(exit.row, end),
                None => log::error!("row {}: no snapshot worker of this crawl's pool", exit.row),
            }
        }
        CrawlWorkerChild::Hooks => {
            cx.record_hook(runner, exit, |_, _| Ok(()))?;
        }
    }
    Ok(())
}
