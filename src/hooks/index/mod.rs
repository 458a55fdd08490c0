//! `index.jsonl` in each snapshot directory, as abx-dl writes it while a snapshot runs: the
//! Snapshot record first, then a Process and an ArchiveResult record for each hook run as it
//! ends — what ArchiveBox and anything that reads abx-dl's output open.
//!
//! Invariants: each record is one line, appended by one `O_APPEND` write (a reader never sees
//! half a record; a crash loses at most the line being written); the file is reached without
//! following a symbolic link (`logs::open_append`: the snapshot's dir may be its hooks' user's);
//! the Snapshot record is written once, when the file is begun, and made sealed — with the
//! crawl's Crawl record and ArchiveBox's own record of each hook after the runs — once the
//! snapshot is sealed ([`seal`], one rename); a run's records are never changed. Ids are the
//! UUIDv7s of the rows.

mod abx_dl;
mod archivebox;

pub use abx_dl::{iso, process_record, result_record, Reported, Run};
pub use archivebox::{tags_of, Seal};

use crate::domain::ResultStatus;
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
/// one (`archivebox::sealed`): its Snapshot record first, now sealed, then the records of its
/// hook runs as they were, then its crawl's Crawl record and each hook's ArchiveResult record
/// as ArchiveBox keeps it. Sealing again gives the same file but for the moment. The file is
/// replaced at once (`logs::replace`), never through a link.
pub fn seal(
    beneath: &Path,
    dir: &Path,
    crawl_and_snapshot: (&Crawl, &Snapshot),
    seal: &Seal<'_>,
) -> std::io::Result<()> {
    let path = dir.join(FILE);
    let mut text = String::new();
    if let Ok(mut file) = crate::logs::read_log(&path) {
        use std::io::Read;
        file.read_to_string(&mut text)?;
    }
    let records: Vec<Value> = (text.lines())
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let sealed = archivebox::sealed(crawl_and_snapshot, seal, &records);
    crate::logs::replace(beneath, &path, jsonl(&sealed).as_bytes()).map_err(|e| e.cause)
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
    let mut file = crate::logs::open_append(beneath, &dir.join(FILE)).map_err(|e| e.cause)?;
    file.write_all(jsonl(records).as_bytes())
}

/// `records` as JSON lines: one a line, each line ended.
pub fn jsonl(records: &[Value]) -> String {
    let mut text = String::new();
    for record in records {
        text.push_str(&record.to_string());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seal_puts_the_sealed_snapshot_first_then_the_runs_the_crawl_and_archiveboxs_results() {
        let dir = tempfile::tempdir().unwrap();
        let snap = dir.path().join("crawls/1/snapshots/2");
        let (crawl, snapshot) = (crawl_fixture(), snapshot_fixture());
        begin(dir.path(), &snap, &crawl, &snapshot).unwrap();
        let run = [
            json!({"type": "Process", "hook_name": "h", "started_at": "t0"}),
            json!({"type": "ArchiveResult", "plugin": "p", "hook_name": "h"}),
        ];
        append(dir.path(), &snap, &run).unwrap();
        assert!(!is_sealed(&snap));
        let first = Seal {
            title: None,
            sealed_at: 1_700_000_000_123,
            size: 42,
            tags: Vec::new(),
        };
        seal(dir.path(), &snap, (&crawl, &snapshot), &first).unwrap();
        assert!(is_sealed(&snap));
        // Sealing again (a retried seal) changes nothing but the moment.
        let crawl = Crawl {
            options: crate::domain::CrawlOptions {
                tags: vec!["news".into(), "tech".into()],
                ..Default::default()
            },
            ..crawl
        };
        let again = Seal {
            title: Some("A page"),
            sealed_at: 1_700_000_000_456,
            tags: tags_of(&crawl, &["found".into(), "news".into()]),
            ..first
        };
        seal(dir.path(), &snap, (&crawl, &snapshot), &again).unwrap();
        let text = std::fs::read_to_string(snap.join(FILE)).unwrap();
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let types: Vec<&str> = records
            .iter()
            .map(|r| r["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "Snapshot",
                "Process",
                "ArchiveResult",
                "Crawl",
                "ArchiveResult"
            ],
            "{text}"
        );
        assert_eq!(
            records[4]["start_ts"], "t0",
            "ArchiveBox's record of the run"
        );
        assert_eq!(records[0]["status"], "sealed");
        assert_eq!(records[0]["archive_size"], 42);
        assert_eq!(
            records[0]["timestamp"], "1699999999.999002",
            "its id as microseconds"
        );
        assert_eq!(records[0]["title"], "A page");
        // Its crawl's tags and its hooks', as ArchiveBox's import reads them.
        assert_eq!(records[0]["tags"], "news,tech,found");
        assert_eq!(records[3]["tags_str"], "news,tech");
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
            options: Default::default(),
            imported_seeds: 0,
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
            host_key: Some("a".into()),
            backoffs: 0,
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
