//! `index.jsonl` in each snapshot directory, as abx-dl writes it while a snapshot runs: the
//! Snapshot record first, then a Process and an ArchiveResult record for each hook run as it
//! ends — what ArchiveBox and anything that reads abx-dl's output open.
//!
//! Invariants: each record is one line, appended by one `O_APPEND` write (a reader never sees
//! half a record; a crash loses at most the line being written); the file is reached without
//! following a symbolic link (`logs::open_append`: the snapshot's dir may be its hooks' user's);
//! the Snapshot record is written once, when the file is begun, and made sealed — with the
//! crawl's Crawl record after the runs — once the snapshot is sealed ([`seal`], one rename). Ids
//! are the UUIDv7s of the rows.

use crate::domain::{ExitOutcome, ResultStatus};
use crate::store::{Crawl, HookResult, Snapshot};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// The file's name in a snapshot's directory.
pub const FILE: &str = "index.jsonl";

/// Begins the index of `snapshot` in `dir` (below `beneath`, abxd's data dir) with its Snapshot
/// record, unless it was begun before (a snapshot run again after an interruption).
pub fn begin(
    beneath: &Path,
    dir: &Path,
    crawl: &Crawl,
    snapshot: &Snapshot,
) -> std::io::Result<()> {
    let path = dir.join(FILE);
    if std::fs::symlink_metadata(&path).is_ok() {
        return Ok(());
    }
    let record = json!({
        "type": "Snapshot",
        "id": snapshot.uuid,
        "crawl_id": crawl.uuid,
        "url": snapshot.url,
        "depth": snapshot.depth,
        "created_at": iso(snapshot.created_at),
        "status": "started",
    });
    append(beneath, dir, &[record])
}

/// The version of ArchiveBox whose records the seal writes, and its snapshot directories'.
const SCHEMA_VERSION: &str = "0.9.73";
const FS_VERSION: &str = "0.9.4";

/// The title a snapshot's Snapshot record gives it, as ArchiveBox takes one: what the `title`
/// plugin's hook that succeeded said, if it said something.
pub fn title_of(results: &[HookResult], snapshot_id: i64) -> Option<&str> {
    (results.iter())
        .filter(|r| r.snapshot_id == Some(snapshot_id) && r.plugin == "title")
        .filter(|r| r.status == ResultStatus::Succeeded)
        .filter_map(|r| r.output.as_deref())
        .find(|output| !output.trim().is_empty())
}

/// Completes the index of `snapshot` in `dir` once it is sealed, as ArchiveBox 0.9.73 leaves
/// one: its Snapshot record first, now sealed (`status`, `fs_version`, `crawl_id`, `timestamp`,
/// its size, its `title`), then the records of its hook runs as they were, then its crawl's
/// Crawl record. The file is replaced at once (`logs::replace`), never through a link.
pub fn seal(
    beneath: &Path,
    dir: &Path,
    (crawl, snapshot): (&Crawl, &Snapshot),
    title: Option<&str>,
    sealed_at: i64,
    size: u64,
) -> std::io::Result<()> {
    let path = dir.join(FILE);
    let mut text = String::new();
    if let Ok(mut file) = crate::logs::read_log(&path) {
        use std::io::Read;
        file.read_to_string(&mut text)?;
    }
    let sealed = json!({
        "type": "Snapshot",
        "schema_version": SCHEMA_VERSION,
        "id": snapshot.uuid,
        "crawl_id": crawl.uuid,
        "url": snapshot.url,
        "title": title,
        "tags": "",
        "bookmarked_at": iso(snapshot.created_at),
        "created_at": iso(snapshot.created_at),
        "modified_at": iso(sealed_at),
        "config": {},
        "notes": "",
        "timestamp": format!("{}.{:03}000", snapshot.created_at / 1000, snapshot.created_at % 1000),
        "depth": snapshot.depth,
        "status": "sealed",
        "fs_version": FS_VERSION,
        "archive_size": size,
        "output_size": size,
    });
    let crawl_record = json!({
        "type": "Crawl",
        "schema_version": SCHEMA_VERSION,
        "id": crawl.uuid,
        "urls": crawl.urls.join("\n"),
        "status": crawl.status,
        "max_depth": crawl.max_depth,
        "config": {},
        "tags_str": "",
        "label": "",
        "created_at": iso(crawl.created_at),
        "modified_at": iso(sealed_at),
        "created_by": "system",
    });
    let runs = text.lines().filter(|line| {
        let record: Option<Value> = serde_json::from_str(line).ok();
        !record.is_some_and(|r| r["type"] == "Snapshot" || r["type"] == "Crawl")
    });
    let mut sealed_text = format!("{sealed}\n");
    for line in runs {
        sealed_text.push_str(line);
        sealed_text.push('\n');
    }
    sealed_text.push_str(&format!("{crawl_record}\n"));
    crate::logs::replace(beneath, &path, sealed_text.as_bytes()).map_err(|e| e.cause)
}

/// Whether the index in `dir` begins with a sealed Snapshot record (read never through a link).
pub fn is_sealed(dir: &Path) -> bool {
    use std::io::BufRead;
    let Ok(file) = crate::logs::read_log(&dir.join(FILE)) else {
        return false;
    };
    let mut first = String::new();
    if std::io::BufReader::new(file).read_line(&mut first).is_err() {
        return false;
    }
    let record: Option<Value> = serde_json::from_str(&first).ok();
    record.is_some_and(|r| r["type"] == "Snapshot" && r["status"] == "sealed")
}

/// Appends `records` to the index in `dir`, one line each, in one write.
pub fn append(beneath: &Path, dir: &Path, records: &[Value]) -> std::io::Result<()> {
    let mut text = String::new();
    for record in records {
        text.push_str(&record.to_string());
        text.push('\n');
    }
    let mut file = crate::logs::open_append(beneath, &dir.join(FILE)).map_err(|e| e.cause)?;
    file.write_all(text.as_bytes())
}

/// One hook run, as abx-dl's Process record says it.
pub struct Run<'a> {
    /// Its process row's UUIDv7 (a new one for a row from before abxd gave them).
    pub uuid: Option<&'a str>,
    pub argv: &'a [String],
    pub plugin: &'a str,
    /// The hook's name without its last extension (abx-dl's `hook_name`).
    pub hook_name: &'a str,
    pub pwd: &'a str,
    pub timeout_secs: u64,
    pub started_at: i64,
    pub ended_at: i64,
    pub outcome: ExitOutcome,
}

/// The Process record of `run`.
pub fn process_record(run: &Run<'_>) -> Value {
    let exit_code = match run.outcome {
        ExitOutcome::Code(code) => code,
        ExitOutcome::Signal(signal) => 128 + signal,
    };
    let status = match exit_code {
        0 => "succeeded",
        10 => "skipped",
        _ => "failed",
    };
    json!({
        "type": "Process",
        "id": run.uuid.map_or_else(crate::uuid7::new, str::to_string),
        "cmd": run.argv,
        "plugin": run.plugin,
        "hook_name": run.hook_name,
        "pwd": run.pwd,
        "timeout": run.timeout_secs,
        "started_at": iso(run.started_at),
        "ended_at": iso(run.ended_at),
        "exit_code": exit_code,
        "status": status,
    })
}

/// What a hook's result says, as abx-dl's ArchiveResult record says it: `files` are its output
/// files (relative to its plugin's dir) with their sizes.
pub struct Reported<'a> {
    pub uuid: Option<&'a str>,
    /// The UUIDv7 of the process row of its run (its Process record's id).
    pub process_uuid: Option<&'a str>,
    pub snapshot_uuid: Option<&'a str>,
    pub plugin: &'a str,
    pub hook_name: &'a str,
    pub status: ResultStatus,
    pub output: Option<&'a str>,
    pub files: &'a [(String, u64)],
}

/// The ArchiveResult record of `reported`.
pub fn result_record(reported: &Reported<'_>) -> Value {
    let files: Vec<Value> = (reported.files.iter())
        .map(|(path, size)| {
            let extension = Path::new(path)
                .extension()
                .map(|e| e.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            json!({
                "path": path,
                "extension": extension,
                "mimetype": mimetype(&extension),
                "size": size,
            })
        })
        .collect();
    json!({
        "type": "ArchiveResult",
        "id": reported.uuid,
        "snapshot_id": reported.snapshot_uuid,
        "plugin": reported.plugin,
        "hook_name": reported.hook_name,
        "status": reported.status,
        "output_str": reported.output.unwrap_or(""),
        "output_files": files,
        "process_id": reported.process_uuid,
    })
}

/// The media type of a file by its extension, as an archive's files go.
fn mimetype(extension: &str) -> &'static str {
    match extension {
        "html" | "htm" => "text/html",
        "txt" | "log" => "text/plain",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "json" | "jsonl" => "application/json",
        "xml" => "application/xml",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "ico" => "image/vnd.microsoft.icon",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mp3" => "audio/mpeg",
        "warc" => "application/warc",
        "gz" => "application/gzip",
        "zip" => "application/zip",
        "mhtml" => "multipart/related",
        _ => "application/octet-stream",
    }
}

/// A moment (Unix ms) as ISO 8601 in UTC.
fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_abx_dls_and_output_files_carry_their_type_and_size() {
        let files = [
            ("page.html".to_string(), 10),
            ("favicon.ico".to_string(), 4),
        ];
        let record = result_record(&Reported {
            uuid: Some("01"),
            process_uuid: Some("03"),
            snapshot_uuid: Some("02"),
            plugin: "wget",
            hook_name: "on_Snapshot__30_wget.bg",
            status: ResultStatus::NoResults,
            output: None,
            files: &files,
        });
        assert_eq!(record["status"], "noresults");
        assert_eq!(record["output_str"], "");
        assert_eq!(record["process_id"], "03");
        assert_eq!(
            record["output_files"][1],
            json!({"path": "favicon.ico", "extension": "ico",
                   "mimetype": "image/vnd.microsoft.icon", "size": 4})
        );
        let argv = ["/p/wget/on_Snapshot__30_wget.bg.sh".to_string()];
        let process = process_record(&Run {
            uuid: Some("03"),
            argv: &argv,
            plugin: "wget",
            hook_name: "on_Snapshot__30_wget.bg",
            pwd: "/d/wget",
            timeout_secs: 60,
            started_at: 0,
            ended_at: 1500,
            outcome: ExitOutcome::Signal(9),
        });
        assert_eq!(process["id"], "03");
        assert_eq!(process["exit_code"], 137);
        assert_eq!(process["status"], "failed");
        assert_eq!(process["ended_at"], "1970-01-01T00:00:01.5Z");
    }

    #[test]
    fn the_seal_puts_the_sealed_snapshot_first_and_the_crawl_last_and_keeps_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let snap = dir.path().join("crawls/1/snapshots/2");
        let (crawl, snapshot) = (crawl_fixture(), snapshot_fixture());
        begin(dir.path(), &snap, &crawl, &snapshot).unwrap();
        append(dir.path(), &snap, &[json!({"type": "Process", "n": 1})]).unwrap();
        assert!(!is_sealed(&snap));
        seal(
            dir.path(),
            &snap,
            (&crawl, &snapshot),
            None,
            1_700_000_000_123,
            42,
        )
        .unwrap();
        assert!(is_sealed(&snap));
        // Sealing again (a retried seal) changes nothing but the moment.
        let title = Some("A page");
        seal(
            dir.path(),
            &snap,
            (&crawl, &snapshot),
            title,
            1_700_000_000_456,
            42,
        )
        .unwrap();
        let text = std::fs::read_to_string(snap.join(FILE)).unwrap();
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let types: Vec<&str> = records
            .iter()
            .map(|r| r["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["Snapshot", "Process", "Crawl"], "{text}");
        assert_eq!(records[0]["status"], "sealed");
        assert_eq!(records[0]["archive_size"], 42);
        assert_eq!(records[0]["timestamp"], "1699999999.999000");
        assert_eq!(records[0]["title"], "A page");
    }

    fn crawl_fixture() -> Crawl {
        Crawl {
            id: 1,
            uuid: Some("0190".repeat(8)),
            urls: vec!["http://a/".into()],
            max_depth: 0,
            plugins: None,
            status: crate::domain::WorkStatus::Started,
            outcome: None,
            retry_at: 0,
            owner_id: None,
            created_at: 1_699_999_999_000,
            started_at: None,
            sealed_at: None,
            restarts: 0,
            paused_at: None,
            rules: Default::default(),
            ended_by: None,
            schedule_id: None,
            has_input: false,
            import_url: None,
        }
    }

    fn snapshot_fixture() -> Snapshot {
        Snapshot {
            id: 2,
            uuid: Some("0191".repeat(8)),
            crawl_id: 1,
            url: "http://a/".into(),
            depth: 0,
            status: crate::domain::WorkStatus::Started,
            retry_at: 0,
            owner_id: None,
            created_at: 1_699_999_999_999,
            started_at: None,
            sealed_at: None,
            restarts: 0,
            ended_by: None,
        }
    }

    #[test]
    fn one_record_a_line_and_the_snapshot_record_once() {
        let dir = tempfile::tempdir().unwrap();
        let snap = dir.path().join("crawls/1/snapshots/2");
        append(dir.path(), &snap, &[json!({"a": 1}), json!({"b": 2})]).unwrap();
        append(dir.path(), &snap, &[json!({"c": 3})]).unwrap();
        let text = std::fs::read_to_string(snap.join(FILE)).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
        // Through a link a hook planted: refused.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "").unwrap();
        let other = dir.path().join("crawls/1/snapshots/3");
        std::fs::create_dir_all(&other).unwrap();
        std::os::unix::fs::symlink(&elsewhere, other.join(FILE)).unwrap();
        assert!(append(dir.path(), &other, &[json!({})]).is_err());
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "");
    }
}
