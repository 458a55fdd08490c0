//! The records abx-dl appends to a snapshot's `index.jsonl` as each hook run ends: a Process
//! record (command, directory, times, exit) and an ArchiveResult record (status, output, files
//! as a list with their sizes and media types), in abx-dl's own shapes.
//!
//! Invariant: pure — a run in, its JSON records out; a media type is guessed from the file's
//! extension alone, empty where it is not known (as abx-dl's `guess_mimetype` leaves it).

use crate::domain::{ExitOutcome, ResultStatus};
use serde_json::{json, Value};
use std::path::Path;

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
pub(super) fn mimetype(extension: &str) -> &'static str {
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
        _ => "",
    }
}

/// A moment (Unix ms) as ISO 8601 in UTC.
pub fn iso(ms: i64) -> String {
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
}
