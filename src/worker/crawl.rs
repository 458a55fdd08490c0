//! `abxd worker crawl ID`: a crawl's hooks, then its snapshots, each by a snapshot worker of a
//! [`WorkerPool`], until every snapshot is sealed.

use super::{hooks_for, Context, Exit, WorkerError};
use crate::config::Config;
use crate::hooks::{HookRunner, Scope};
use crate::plugins::HookEvent;
use crate::pool::{WorkerEnd, WorkerPool};
use crate::store::{Queue, StoreError, WorkStatus};

/// Runs crawl `crawl_id`; returns the worker's exit code.
pub fn run_crawl_worker(config: Config, crawl_id: i64) -> Result<i32, WorkerError> {
    let mut cx = Context::open(config, Queue::Crawls, crawl_id)?;
    let crawl = cx
        .store
        .crawl(crawl_id)?
        .ok_or_else(|| WorkerError::Setup(format!("no crawl {crawl_id}")))?;
    let hooks = hooks_for(&mut cx.store, &cx.config, HookEvent::Crawl, &crawl, None)?;
    log::info!("crawl {crawl_id}: {} crawl hooks", hooks.len());
    let urls = crawl.urls.clone();
    let scope = Scope {
        crawl,
        snapshot: None,
        parent_row: cx.row_id,
    };
    let mut runner = HookRunner::new(&mut cx.store, scope, hooks)?;
    let mut pool = WorkerPool::snapshots(crawl_id, cx.row_id);
    let record = |cx: &mut Context,
                  runner: &mut HookRunner,
                  pool: &mut WorkerPool,
                  exit: Exit|
     -> Result<(), StoreError> {
        // An interrupted crawl worker leaves the recovery of its snapshots to the daemon, which
        // recovers the whole crawl once this worker is gone.
        let recover = !cx.interrupted;
        match pool.on_exit(&cx.config, &mut cx.store, exit.row, exit.leaked, recover)? {
            Some(WorkerEnd::Sealed { .. }) => {}
            Some(end) => log::warn!(
                "snapshot worker row {} ended ({}) before sealing: {end:?}",
                exit.row,
                exit.outcome
            ),
            None => {
                cx.record_hook(runner, exit)?;
            }
        }
        Ok(())
    };

    runner.start_next(&cx.config, &mut cx.supervisor, &mut cx.store)?;
    while !cx.interrupted && !runner.foreground_done() {
        for exit in cx.next_exits(None)? {
            record(&mut cx, &mut runner, &mut pool, exit)?;
        }
    }
    for url in &urls {
        cx.store.add_snapshot(crawl_id, url, 0)?;
    }
    while !cx.interrupted {
        cx.fill(&mut pool)?;
        let snapshots = cx.store.snapshots(crawl_id)?;
        if pool.is_idle() && snapshots.iter().all(|s| s.status == WorkStatus::Sealed) {
            break;
        }
        // Wake for a snapshot that is waiting out a back-off, if nothing else wakes us first.
        let timer = pool
            .is_empty()
            .then(|| pool.next_due(&cx.config, &cx.store))
            .flatten();
        // Exits first: a teardown reported in the same batch may be of a worker that just
        // exited leaving processes behind.
        for exit in cx.next_exits(timer)? {
            record(&mut cx, &mut runner, &mut pool, exit)?;
        }
        for row in std::mem::take(&mut cx.torn_down) {
            pool.on_torn_down(&cx.config, &mut cx.store, row)?;
        }
    }
    cx.drain(|cx, exit| record(cx, &mut runner, &mut pool, exit))?;
    cx.finish(Queue::Crawls, crawl_id)
}
