//! The machine shapes of abxctl's `--json` (and `abxd check-config --json`, `recover --dry-run
//! --json`): every document is one JSON object whose `version` is [`JSON_VERSION`], documented
//! in `docs/json.md` and pinned by snapshot tests.
//!
//! Invariant: a field's meaning never changes within a version; a field may be added, and
//! anything else bumps the version. Times are Unix milliseconds, ids are the database's.

use super::{CrawlPage, ShowPage};
use crate::domain::{ResultStatus, WorkCounts, WorkStatus};
use crate::store::{Crawl, HookResult, ProcessRow, Snapshot, Store, StoreError};
use serde_json::{json, Map, Value};

/// The version of every `--json` shape but `ps --json`'s (see `PS_JSON_VERSION`).
pub const JSON_VERSION: u32 = 1;

/// `fields` as a document: `{"version": 1, …fields}`, pretty-printed.
pub fn document(fields: Value) -> String {
    let mut object = Map::new();
    object.insert("version".into(), json!(JSON_VERSION));
    if let Value::Object(fields) = fields {
        object.extend(fields);
    }
    serde_json::to_string_pretty(&Value::Object(object)).expect("values serialize")
}

/// How many results of each status, every status named (0 when none).
fn counts(results: &[(ResultStatus, u64)]) -> Value {
    let statuses = [
        ResultStatus::Queued,
        ResultStatus::Started,
        ResultStatus::Succeeded,
        ResultStatus::NoResults,
        ResultStatus::Failed,
        ResultStatus::Skipped,
        ResultStatus::Cancelled,
    ];
    let map: Map<String, Value> = statuses
        .iter()
        .map(|s| {
            let n: u64 = (results.iter())
                .filter(|(status, _)| status == s)
                .map(|(_, n)| n)
                .sum();
            (s.to_string(), json!(n))
        })
        .collect();
    Value::Object(map)
}

/// A crawl with its snapshots' and results' counts: one entry of `crawls --json`.
fn crawl_summary(store: &Store, crawl: &Crawl) -> Result<Value, StoreError> {
    summary_of(store, crawl, &store.crawls().work_counts(crawl.id)?)
}

/// [`crawl_summary`] with its counts already counted.
fn summary_of(
    store: &Store,
    crawl: &Crawl,
    (snapshots, results): &WorkCounts,
) -> Result<Value, StoreError> {
    let total: u64 = snapshots.iter().map(|(_, n)| n).sum();
    let sealed: u64 = (snapshots.iter())
        .filter(|(status, _)| *status == WorkStatus::Sealed)
        .map(|(_, n)| n)
        .sum();
    let mut value = json!(crawl);
    value["snapshots"] = json!({"total": total, "sealed": sealed});
    value["results"] = counts(results);
    value["refused"] = json!(store.crawls().refused_urls(crawl.id)?);
    let exports: Vec<Value> = (store.exports().of_crawl(crawl.id)?.iter())
        .map(|e| {
            json!({"archivebox": e.target, "user": e.owner, "status": e.status.as_str(),
                   "detail": e.detail, "process_id": e.process_id, "updated_at_ms": e.updated_at})
        })
        .collect();
    value["exports"] = json!(exports);
    Ok(value)
}

/// `abxctl crawls --json`: `{"version":1,"crawls":[…]}`, oldest first.
pub fn crawls(store: &Store, crawls: &[Crawl]) -> Result<String, StoreError> {
    let crawls = (crawls.iter())
        .map(|crawl| crawl_summary(store, crawl))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(document(json!({ "crawls": crawls })))
}

/// `abxctl find --json URL`: each snapshot of the URL with its directory.
pub fn found(data_dir: &std::path::Path, snapshots: &[Snapshot]) -> String {
    let found: Vec<Value> = (snapshots.iter())
        .map(|snapshot| {
            let mut value = json!(snapshot);
            let dir = crate::hooks::snapshot_dir(data_dir, snapshot.crawl_id, snapshot.id);
            value["dir"] = json!(dir);
            value
        })
        .collect();
    document(json!({ "snapshots": found }))
}

/// What a result's latest run says of itself: its row, exit, logs and usage.
fn run(row: &ProcessRow) -> Value {
    json!({
        "row": row.id,
        "uuid": row.uuid,
        "pid": row.pid,
        "status": row.status,
        "exit_code": row.exit_code,
        "exit_signal": row.exit_signal,
        "end_reason": row.end_reason,
        "stdout_path": row.stdout_path,
        "stderr_path": row.stderr_path,
        "cpu_usec": row.cpu_usec,
        "memory_peak": row.memory_peak,
    })
}

/// `abxctl show ID --json`: a page of the crawl — the crawl with its counts, its crawl hooks'
/// results, and the page's snapshots, each with its results and each result's latest run — and
/// where the next page starts (`page.next_after`, for `--after`).
pub fn crawl(store: &Store, id: i64, page: &ShowPage) -> Result<Option<String>, StoreError> {
    let Some(shown) = CrawlPage::read(store, id, page)? else {
        return Ok(None);
    };
    let result = |result: &HookResult| {
        let mut value = json!(result);
        value["run"] = shown.runs.get(&result.id).map_or(Value::Null, run);
        value
    };
    let crawl_results: Vec<Value> = shown.crawl_results.iter().map(result).collect();
    let snapshots: Vec<Value> = (shown.snapshots.iter())
        .map(|s| {
            let mut value = json!(s.snapshot);
            value["tags"] = json!(s.tags);
            value["results"] = s.results.iter().map(result).collect();
            value
        })
        .collect();
    Ok(Some(document(json!({
        "crawl": summary_of(store, &shown.crawl, &shown.work)?,
        "crawl_results": crawl_results,
        "snapshots": snapshots,
        "page": {
            "status": page.state.map(|s| s.to_string()),
            "limit": page.limit,
            "snapshots": shown.in_state,
            "next_after": shown.next_after(),
        },
    }))))
}

/// `abxctl status --json`: the daemon that answered, what it runs, and the work (docs/json.md).
pub fn status(info: &crate::control::protocol::StatusInfo) -> String {
    let work = info.work.as_ref().map(|w| {
        json!({
            "crawls": {"queued": w.crawls_queued, "running": w.crawls_running, "paused": w.crawls_paused},
            "snapshots": {"queued": w.snapshots_queued, "running": w.snapshots_running},
            "last_day": {
                "crawls_sealed": w.crawls_sealed,
                "snapshots_sealed": w.snapshots_sealed,
                "results_failed": w.results_failed,
            },
        })
    });
    document(json!({
        "running": true,
        "pid": info.pid,
        "abxd_version": info.version,
        "started_at_ms": info.started_at_ms,
        "uptime_ms": info.uptime_ms,
        "database": info.database,
        "database_lost": info.database_lost,
        "database_busy_since_ms": info.database_busy_since_ms,
        "socket": info.socket,
        "containment": info.containment,
        "hooks": info.hooks,
        "egress": info.egress,
        "admission": info.admission,
        "plugins_dirs": info.plugins_dirs,
        "recovering": info.recovering,
        "live": info.live,
        "work": work,
        "machines": info.machines,
    }))
}
