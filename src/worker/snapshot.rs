//! `abxd worker snapshot ID`: one snapshot's hooks, in order, and the snapshots they discover.

use super::{hooks_for, Context, Exit, WorkerError};
use crate::config::Config;
use crate::hooks::{HookRunner, Scope};
use crate::plugins::HookEvent;
use crate::store::{Queue, StoreError};

/// Runs snapshot `snapshot_id`; returns the worker's exit code.
pub fn run_snapshot_worker(config: Config, snapshot_id: i64) -> Result<i32, WorkerError> {
    let mut cx = Context::open(config, Queue::Snapshots, snapshot_id)?;
    let snapshot = cx
        .store
        .snapshot(snapshot_id)?
        .ok_or_else(|| WorkerError::Setup(format!("no snapshot {snapshot_id}")))?;
    let crawl = cx
        .store
        .crawl(snapshot.crawl_id)?
        .ok_or_else(|| WorkerError::Setup(format!("no crawl {}", snapshot.crawl_id)))?;
    let hooks = hooks_for(
        &mut cx.store,
        &cx.config,
        HookEvent::Snapshot,
        &crawl,
        Some(snapshot_id),
    )?;
    log::info!(
        "snapshot {snapshot_id} ({}): {} hooks",
        snapshot.url,
        hooks.len()
    );
    let (max_depth, depth, crawl_id) = (crawl.max_depth, snapshot.depth, crawl.id);
    let scope = Scope {
        crawl,
        snapshot: Some(snapshot),
        parent_row: cx.row_id,
    };
    let mut runner = HookRunner::new(&mut cx.store, scope, hooks)?;
    let record =
        |cx: &mut Context, runner: &mut HookRunner, exit: Exit| -> Result<(), StoreError> {
            for url in cx.record_hook(runner, exit)? {
                if depth < max_depth {
                    if let Some(id) = cx.store.add_snapshot(crawl_id, &url, depth + 1)? {
                        log::info!("discovered {url} (snapshot {id}, depth {})", depth + 1);
                    }
                }
            }
            Ok(())
        };
    runner.start_next(&cx.config, &mut cx.supervisor, &mut cx.store)?;
    while !cx.interrupted && !runner.foreground_done() {
        for exit in cx.next_exits(None)? {
            record(&mut cx, &mut runner, exit)?;
        }
    }
    cx.drain(|cx, exit| record(cx, &mut runner, exit))?;
    cx.finish(Queue::Snapshots, snapshot_id)
}
