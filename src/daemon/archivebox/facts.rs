//! A turn's facts: what the daemon tells ArchiveBox's side of a turn — the crawls it holds for
//! ArchiveBox's Crawls, each with its snapshots not yet whole there (where their files are, the
//! hooks that run now), what it refused, and whether to claim more.
//!
//! Invariant: only reads; what a turn is sent of a held crawl is what is not yet whole in
//! ArchiveBox (a snapshot it mirrored is not sent again), so a turn grows with the work under
//! way, not with the crawl's history.

use super::State;
use crate::domain::WorkStatus;
use crate::store::{HeldCrawl, ServedSnapshot, StoreError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The facts of the next turn; it claims Crawls only when `claim` (and room is left), and
/// applies ArchiveBox's retention when `retention`.
pub(super) fn gather(state: &State, claim: bool, retention: bool) -> Result<Value, StoreError> {
    let served = state.store.crawls().served();
    let held = served.held()?;
    let mut crawls = Vec::with_capacity(held.len());
    for crawl in &held {
        crawls.push(crawl_facts(state, crawl)?);
    }
    let running = (held.iter())
        .filter(|crawl| crawl.status != WorkStatus::Sealed)
        .count();
    let room = (state.config.limits.max_crawl_workers as usize).saturating_sub(running);
    let refused: Vec<Value> = (state.queue_server.refused.iter())
        .map(|refused| {
            json!({"archivebox_crawl": refused.archivebox_crawl, "why": refused.why,
                   "redo": refused.redo})
        })
        .collect();
    Ok(json!({
        "version": 1,
        "orchestrator_pid": std::process::id(),
        "lease_seconds": 60,
        "claim": claim && room > 0,
        "maintenance": retention,
        "max_claims": room,
        "crawls": crawls,
        "refused": refused,
    }))
}

/// The held crawls with snapshots under way or sealed that are not whole in ArchiveBox yet —
/// whose files are copied into the collection before the turn (as they go: see
/// `export::Placing`).
pub(super) fn to_copy(state: &State) -> Result<Vec<HeldCrawl>, StoreError> {
    let served = state.store.crawls().served();
    let mut crawls = Vec::new();
    for crawl in served.held()? {
        let snapshots = served.unmirrored(crawl.crawl_id)?;
        let to_place =
            |s: &ServedSnapshot| matches!(s.status, WorkStatus::Sealed | WorkStatus::Started);
        if snapshots.iter().any(to_place) {
            crawls.push(crawl);
        }
    }
    Ok(crawls)
}

/// The snapshots (their UUIDs) the last copy of crawl `crawl_id` left whole in the collection:
/// those its `export::downloaded_file` names. (A snapshot sealed since that copy is not among
/// them: ArchiveBox seals it at the turn after its copy, never before.)
fn copied_whole(state: &State, crawl_id: i64) -> BTreeSet<String> {
    let path = crate::export::downloaded_file(&state.config.data_dir, crawl_id);
    let text = std::fs::read_to_string(path).unwrap_or_default();
    (text.lines())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|record| Some(record["id"].as_str()?.to_string()))
        .collect()
}

/// The Process and ArchiveResult records of the hook runs a snapshot's `index.jsonl` holds, as
/// abx-dl writes them (the collection's owner may not read abxd's files: the daemon reads them
/// for it).
fn runs_of(dir: &std::path::Path) -> Vec<Value> {
    let mut text = String::new();
    if let Ok(mut file) = crate::logs::read_log(&dir.join(crate::hooks::index::FILE)) {
        use std::io::Read;
        let _ = file.read_to_string(&mut text);
    }
    (text.lines())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| matches!(record["type"].as_str(), Some("Process" | "ArchiveResult")))
        // (Not the records in ArchiveBox's own shape its seal adds: the runs are abx-dl's.)
        .filter(|record| record.get("schema_version").is_none())
        .collect()
}

fn crawl_facts(state: &State, crawl: &HeldCrawl) -> Result<Value, StoreError> {
    let served = state.store.crawls().served();
    let mut running: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
    for hook in served.running_hooks(crawl.crawl_id)? {
        let Some(name) = crate::plugins::name::parse(&hook.hook) else {
            continue;
        };
        running.entry(hook.snapshot_id).or_default().push(json!({
            "plugin": hook.plugin,
            "hook_name": name.stem,
            "pid": hook.pid,
            "process_id": hook.process_uuid,
            "started_at": hook.started_at,
            "cmd": hook.argv,
            "timeout": hook.timeout_secs,
        }));
    }
    let data_dir = &state.config.data_dir;
    let copied = copied_whole(state, crawl.crawl_id);
    let snapshots: Vec<Value> = (served.unmirrored(crawl.crawl_id)?.into_iter())
        .map(|snapshot| {
            let dir = crate::hooks::snapshot_dir(data_dir, crawl.crawl_id, snapshot.id);
            json!({
                "uuid": snapshot.uuid,
                "url": snapshot.url,
                "depth": snapshot.depth,
                "parent": snapshot.parent_uuid,
                "status": snapshot.status,
                "created_at": snapshot.created_at,
                "records": runs_of(&dir),
                // (false: sealed before it ran, so nothing to copy.)
                "dir": dir.is_dir(),
                "copied": copied.contains(&snapshot.uuid),
                "running": running.remove(&snapshot.id).unwrap_or_default(),
            })
        })
        .collect();
    Ok(json!({
        "archivebox_crawl": crawl.archivebox_id,
        "crawl": crawl.crawl_id,
        "status": crawl.status,
        "paused": crawl.paused,
        "seen": crawl.seen,
        "snapshots": snapshots,
    }))
}
