//! A sealed snapshot's `index.jsonl` as ArchiveBox 0.9.73 leaves one, so that its import
//! (`archivebox update --rescan`) fills each column its own crawl of the page fills: the sealed
//! Snapshot record, the runs' records as abx-dl wrote them, the crawl's Crawl record, then for
//! each hook ArchiveBox's own ArchiveResult record — its times, command, directory, files keyed
//! by path, their size and media types — made from the abx-dl records of its last run.
//!
//! Invariants: pure (records in, records out); sealing a sealed index gives the same records
//! but for the moment; ArchiveBox's ArchiveResult records carry no `id`, so that its import
//! records each as a hook run of its own with a Process row (command, directory, times) — with
//! an `id` it would keep abxd's id and drop the command — and, for a hook run more than once,
//! keeps the last run, as it keeps the last record of a hook.

use super::abx_dl::{iso, mimetype};
use crate::store::{Crawl, Snapshot};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The version of ArchiveBox whose records the seal writes, and its snapshot directories'.
const SCHEMA_VERSION: &str = "0.9.73";
const FS_VERSION: &str = "0.9.4";

/// What the seal says of the snapshot besides its row.
pub struct Seal<'a> {
    pub title: Option<&'a str>,
    pub sealed_at: i64,
    /// The bytes below its directory.
    pub size: u64,
    /// Its tags: its crawl's (`--tag`) and those its hooks reported ([`tags_of`]).
    pub tags: Vec<String>,
}

/// The tags of a snapshot of `crawl` whose hooks reported `reported`: the crawl's first, each
/// once.
pub fn tags_of(crawl: &Crawl, reported: &[String]) -> Vec<String> {
    let given = crawl.options.tags.iter().chain(reported);
    crate::domain::split_tags(given.map(String::as_str))
}

/// The records of the sealed index, in order, from the `records` the file holds now.
pub fn sealed(
    (crawl, snapshot): (&Crawl, &Snapshot),
    seal: &Seal<'_>,
    records: &[Value],
) -> Vec<Value> {
    let runs: Vec<&Value> = (records.iter())
        .filter(|r| r["type"] == "Process" || r["type"] == "ArchiveResult")
        // (ArchiveBox's own records, from a seal before: made again below.)
        .filter(|r| r.get("schema_version").is_none())
        .collect();
    let mut sealed = vec![snapshot_record(crawl, snapshot, seal)];
    sealed.extend(runs.iter().map(|&r| r.clone()));
    sealed.push(crawl_record(crawl, seal.sealed_at));
    sealed.extend(archive_results(&runs));
    sealed
}

fn snapshot_record(crawl: &Crawl, snapshot: &Snapshot, seal: &Seal<'_>) -> Value {
    let created = snapshot.created_at;
    json!({
        "type": "Snapshot",
        "schema_version": SCHEMA_VERSION,
        "id": snapshot.uuid,
        "crawl_id": crawl.uuid,
        "url": snapshot.url,
        "title": seal.title,
        "tags": seal.tags.join(","),
        "bookmarked_at": iso(created),
        "created_at": iso(created),
        "modified_at": iso(seal.sealed_at),
        "config": {},
        "notes": "",
        "timestamp": timestamp(snapshot),
        "depth": snapshot.depth,
        "status": "sealed",
        "fs_version": FS_VERSION,
        "archive_size": seal.size,
        "output_size": seal.size,
    })
}

/// The snapshot's ArchiveBox timestamp — seconds since the epoch with six decimals, as
/// ArchiveBox writes its own — which ArchiveBox's import requires unique in the collection: the
/// millisecond it was added, then its id's last three digits as the microseconds, so that the
/// snapshots a crawl adds in one millisecond (its seeds, all at once) differ.
fn timestamp(snapshot: &Snapshot) -> String {
    let created = snapshot.created_at;
    let micros = snapshot.id.rem_euclid(1000);
    format!("{}.{:03}{micros:03}", created / 1000, created % 1000)
}

fn crawl_record(crawl: &Crawl, sealed_at: i64) -> Value {
    json!({
        "type": "Crawl",
        "schema_version": SCHEMA_VERSION,
        "id": crawl.uuid,
        "urls": crawl.urls.join("\n"),
        "status": crawl.status,
        "max_depth": crawl.max_depth,
        "config": {},
        "tags_str": crawl.options.tags.join(","),
        "label": "",
        "created_at": iso(crawl.created_at),
        "modified_at": iso(sealed_at),
        "created_by": "system",
    })
}

/// ArchiveBox's ArchiveResult record of each hook, from its last run: an abx-dl ArchiveResult
/// record and the Process record written with it, just before it.
fn archive_results(runs: &[&Value]) -> Vec<Value> {
    let mut last: BTreeMap<(String, String), Value> = BTreeMap::new();
    let mut order = Vec::new();
    for pair in runs.windows(2) {
        let (process, result) = (pair[0], pair[1]);
        if process["type"] != "Process" || result["type"] != "ArchiveResult" {
            continue;
        }
        let key = (text(&result["plugin"]), text(&result["hook_name"]));
        if !last.contains_key(&key) {
            order.push(key.clone());
        }
        last.insert(key, archive_result(process, result));
    }
    (order.into_iter())
        .filter_map(|key| last.remove(&key))
        .collect()
}

fn archive_result(process: &Value, result: &Value) -> Value {
    let mut files = Map::new();
    let mut size_by_type: BTreeMap<String, u64> = BTreeMap::new();
    let mut size = 0;
    for file in result["output_files"].as_array().into_iter().flatten() {
        let (path, bytes) = (text(&file["path"]), file["size"].as_u64().unwrap_or(0));
        let extension = text(&file["extension"]);
        let media_type = match file["mimetype"].as_str() {
            Some(known) => known.to_string(),
            None => mimetype(&extension).to_string(),
        };
        size += bytes;
        if !media_type.is_empty() {
            *size_by_type.entry(media_type.clone()).or_default() += bytes;
        }
        files.insert(
            path,
            json!({"extension": extension, "mimetype": media_type, "size": bytes}),
        );
    }
    let mut record = json!({
        "type": "ArchiveResult",
        "schema_version": SCHEMA_VERSION,
        "snapshot_id": result["snapshot_id"],
        "created_at": process["started_at"],
        "modified_at": process["ended_at"],
        "plugin": result["plugin"],
        "hook_name": result["hook_name"],
        "status": result["status"],
        "output_str": result["output_str"],
        "start_ts": process["started_at"],
        "end_ts": process["ended_at"],
        "pwd": process["pwd"],
        "cmd": process["cmd"],
    });
    if !files.is_empty() {
        record["output_files"] = Value::Object(files);
    }
    if size > 0 {
        record["output_size"] = size.into();
    }
    if !size_by_type.is_empty() {
        record["output_mimetypes"] = media_types_by_size(size_by_type).into();
    }
    record
}

/// The media types, the largest share first (ties by name), comma-separated: ArchiveBox's
/// `output_mimetypes`.
fn media_types_by_size(size_by_type: BTreeMap<String, u64>) -> String {
    let mut types: Vec<(String, u64)> = size_by_type.into_iter().collect();
    types.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let names: Vec<String> = types.into_iter().map(|(name, _)| name).collect();
    names.join(",")
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(hook: &str, started: &str, ended: &str, files: Value) -> [Value; 2] {
        [
            json!({"type": "Process", "id": "p", "cmd": ["/p/wget/hook.sh", "--url=u"],
                   "plugin": "wget", "hook_name": hook, "pwd": "/d/wget",
                   "started_at": started, "ended_at": ended, "exit_code": 0}),
            json!({"type": "ArchiveResult", "id": "r", "snapshot_id": "s", "plugin": "wget",
                   "hook_name": hook, "status": "succeeded", "output_str": "wget/index.html",
                   "output_files": files, "process_id": "p"}),
        ]
    }

    #[test]
    fn each_hook_gets_archiveboxs_record_of_its_last_run_without_an_id() {
        let first = run("on_Snapshot__30_wget", "t0", "t1", json!([]));
        let files = json!([
            {"path": "a/index.html", "extension": "html", "mimetype": "text/html", "size": 10},
            {"path": "a/x.warc", "extension": "warc", "mimetype": "application/warc", "size": 30},
            {"path": "a/y.sha256", "extension": "sha256", "mimetype": "", "size": 5},
        ]);
        let again = run("on_Snapshot__30_wget", "t2", "t3", files);
        let runs: Vec<&Value> = first.iter().chain(&again).collect();
        let records = archive_results(&runs);
        assert_eq!(records.len(), 1, "{records:?}");
        let record = &records[0];
        assert!(record.get("id").is_none(), "{record}");
        assert_eq!(record["start_ts"], "t2");
        assert_eq!(record["end_ts"], "t3");
        assert_eq!(record["created_at"], "t2");
        assert_eq!(record["cmd"], json!(["/p/wget/hook.sh", "--url=u"]));
        assert_eq!(record["pwd"], "/d/wget");
        assert_eq!(record["output_size"], 45);
        assert_eq!(record["output_mimetypes"], "application/warc,text/html");
        assert_eq!(
            record["output_files"]["a/index.html"],
            json!({"extension": "html", "mimetype": "text/html", "size": 10})
        );
        // A run with no files: no size, no types, no files (as ArchiveBox leaves them out).
        let bare = archive_results(&first.iter().collect::<Vec<_>>());
        assert!(bare[0].get("output_files").is_none(), "{}", bare[0]);
        assert!(bare[0].get("output_size").is_none(), "{}", bare[0]);
    }
}
