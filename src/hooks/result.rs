//! A finished hook run, turned into its result: the status, the output text, the URLs it
//! discovered and the files it wrote.
//!
//! Invariant: [`interpret`] is the one place the hook contract's rules of results live
//! (`abxd-hooks(7)`); it reads only the run's
//! log files, so it is tested with files, without running a hook.

use crate::domain::{EndReason, ExitOutcome, ResultStatus};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::time::Duration;

/// The exit code by which a hook says it skipped (e.g. a tool it needs is missing).
pub const EXIT_SKIPPED: i32 = 10;

/// The longest output text kept on a result.
const MAX_OUTPUT_TEXT: usize = 4096;

/// What a finished hook run amounts to.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: ResultStatus,
    pub output: Option<String>,
    /// URLs reported by `{"type":"Snapshot","url":…}` records.
    pub discovered: Vec<String>,
    /// Tags reported by `{"type":"Tag","name":…}` records.
    pub tags: Vec<String>,
}

/// A hook that ended for a reason beyond itself (its memory limit, unkillable): failed, saying
/// why.
pub fn failed(why: &str) -> Outcome {
    Outcome {
        status: ResultStatus::Failed,
        output: Some(why.to_string()),
        discovered: Vec::new(),
        tags: Vec::new(),
    }
}

/// How a hook run ended, as [`interpret`] needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ending {
    pub outcome: ExitOutcome,
    pub reason: EndReason,
    /// Its deadline (for a timeout's words).
    pub timeout: Duration,
    /// Stopped by an operator (`abxctl kill`), not by its deadline nor at its scope's end.
    pub stopped: bool,
    /// A crawl hook (`on_Crawl*`, `on_CrawlSetup*`): it prints no result record.
    pub crawl_hook: bool,
    /// The filesystem of its logs had no space left at its end ([`no_space_left`]).
    pub no_space: bool,
}

/// Derives a result from how the hook ended and what it printed (the hook contract of abx-dl
/// 1.13, `abxd-hooks(7)`; its `archive_result_service`):
///
/// - stopped at its deadline: failed (timeout); stopped by an operator: cancelled;
/// - exit 0: the status of its `ArchiveResult` record (the last, if several), else `noresults`
///   — or, for a crawl hook, which prints none, `succeeded`;
/// - exit 10: skipped; any other exit (or a signal): failed — overriding a record it printed,
///   whose output text is kept.
///
/// A record with a status abxd does not know is the hook's failure, naming it.
pub fn interpret(stdout: &Path, stderr: &Path, ending: &Ending) -> Outcome {
    let printed = scan_stdout(stdout);
    let last_line = printed.last_text.clone().or_else(|| last_line_of(stderr));
    let recorded_output = printed.output.clone().or(last_line);
    let with_output = |what: String| match &recorded_output {
        Some(output) => format!("{what}: {output}"),
        None => what,
    };
    let (status, output) = match (ending.reason, ending.outcome, &printed.status) {
        (EndReason::Timeout, ..) => (
            ResultStatus::Failed,
            Some(format!(
                "timeout: still running after {}",
                humantime::format_duration(ending.timeout)
            )),
        ),
        _ if ending.stopped => (ResultStatus::Cancelled, recorded_output),
        (_, ExitOutcome::Code(0), Some(Ok(status))) => (*status, recorded_output),
        (_, ExitOutcome::Code(0), Some(Err(unknown))) => (
            ResultStatus::Failed,
            Some(format!(
                "unknown status {unknown:?} in its ArchiveResult record{}",
                recorded_output
                    .map(|o| format!(": {o}"))
                    .unwrap_or_default()
            )),
        ),
        (_, ExitOutcome::Code(0), None) if ending.crawl_hook => {
            (ResultStatus::Succeeded, recorded_output)
        }
        (_, ExitOutcome::Code(0), None) => (ResultStatus::NoResults, recorded_output),
        (_, ExitOutcome::Code(EXIT_SKIPPED), _) => (ResultStatus::Skipped, recorded_output),
        (_, ExitOutcome::Code(code), record) => match missing_binary(stderr) {
            // The hook's shebang (abxpkg) found a binary its plugin needs missing.
            Some(binary) if record.is_none() => (
                ResultStatus::Skipped,
                Some(format!(
                    "binary {binary} is missing (abxd install provisions what plugins declare)"
                )),
            ),
            _ if ending.no_space || said_no_space(stderr) => (
                ResultStatus::Failed,
                Some(with_output(NO_SPACE.to_string())),
            ),
            _ => (
                ResultStatus::Failed,
                Some(match (&printed.output, record) {
                    (Some(_), Some(_)) => with_output(format!("exited with code {code}")),
                    _ => recorded_output
                        .clone()
                        .unwrap_or_else(|| format!("exited with code {code}")),
                }),
            ),
        },
        (_, ExitOutcome::Signal(signal), _) => (
            ResultStatus::Failed,
            Some(with_output(format!(
                "killed by {}",
                crate::signal::name_of_raw(signal)
            ))),
        ),
    };
    // Records that could not be used are reported with the output, not silently dropped.
    let output = match (output, printed.ignored.is_empty()) {
        (output, true) => output,
        (output, false) => Some(format!(
            "{}[{} records ignored: {}]",
            output.map(|o| format!("{o} ")).unwrap_or_default(),
            printed.ignored.len(),
            printed.ignored.join(", ")
        )),
    };
    Outcome {
        status,
        output: output.map(|o| truncate(&o)),
        discovered: printed.discovered,
        tags: printed.tags,
    }
}

fn truncate(text: &str) -> String {
    if text.len() <= MAX_OUTPUT_TEXT {
        return text.to_string();
    }
    let mut end = MAX_OUTPUT_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[derive(Default)]
struct Printed {
    /// The last record's status: known, or the unknown text.
    status: Option<Result<ResultStatus, String>>,
    output: Option<String>,
    discovered: Vec<String>,
    tags: Vec<String>,
    last_text: Option<String>,
    /// Why each ignored record was ignored.
    ignored: Vec<String>,
}

fn scan_stdout(path: &Path) -> Printed {
    let mut printed = Printed::default();
    let Ok(file) = crate::logs::read_log(path) else {
        return printed;
    };
    // (All of it: its supervisor caps a hook's logs at `limits.max_log_bytes` before its end is
    // handled. A parser's records of a 100,000-link import are 18 MB; a smaller bound here
    // dropped the seeds past it, and the result record after them, without a word.)
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(record) if record.get("type").is_some() => apply_record(&record, &mut printed),
            // A line that opens a JSON object but is none: a broken record.
            Err(_) if text.starts_with('{') => printed.ignored.push("not valid JSON".into()),
            _ if !text.is_empty() => printed.last_text = Some(text.to_string()),
            _ => {}
        }
        line.clear();
    }
    printed
}

fn apply_record(record: &serde_json::Value, printed: &mut Printed) {
    let field = |name: &str| record.get(name).and_then(|v| v.as_str());
    match field("type") {
        Some("ArchiveResult") => {
            printed.status = match field("status") {
                // abx-dl writes `noresult` where hooks write `noresults`: the same.
                Some("noresults" | "noresult") => Some(Ok(ResultStatus::NoResults)),
                Some(status) => Some(
                    status
                        .parse::<ResultStatus>()
                        .ok()
                        .filter(|s| s.is_final())
                        .ok_or_else(|| status.to_string()),
                ),
                None => Some(Err("(none)".into())),
            };
            let text = field("output_str")
                .filter(|t| !t.is_empty())
                .or(field("output"));
            if let Some(output) = text {
                printed.output = Some(output.to_string());
            }
        }
        Some("Tag") => {
            if let Some(name) = field("name") {
                printed.tags.push(name.to_string());
            }
        }
        Some("Snapshot") => {
            if let Some(url) = field("url") {
                printed.discovered.push(url.to_string());
            }
        }
        Some(other) => printed.ignored.push(format!("unknown type {other:?}")),
        None => printed.ignored.push("a type that is not a string".into()),
    }
}

/// The binary abxpkg said it could not provide, when that is how the hook ended (abxpkg, which
/// runs abx-plugins' hooks by their shebang, prints `Unable to install binary NAME via …`).
fn missing_binary(stderr: &Path) -> Option<String> {
    let line = last_line_of(stderr)?;
    let rest = line.strip_prefix("Unable to install binary ")?;
    Some(rest.split_whitespace().next()?.to_string())
}

/// The last line of (the tail of) a log file that says something: lines of only punctuation or
/// box drawing (a frame around an error) are passed over, and a frame's sides are trimmed.
/// What a hook that failed for want of space is recorded with (strerror's ENOSPC).
pub const NO_SPACE: &str = "no space left on device";

/// Whether a hook said it failed for want of space (its stderr at `stderr`).
fn said_no_space(stderr: &Path) -> bool {
    last_lines_of(stderr).is_some_and(|tail| tail.to_ascii_lowercase().contains(NO_SPACE))
}

/// Whether the filesystem of the log at `stderr` has no space left: where a hook that failed
/// could not even say why.
pub fn no_space_left(stderr: &Path) -> bool {
    (stderr.parent())
        .and_then(|dir| nix::sys::statvfs::statvfs(dir).ok())
        .is_some_and(|stat| stat.blocks_available() == 0)
}

/// The last [`MAX_OUTPUT_TEXT`] bytes of the log at `path`, as text.
fn last_lines_of(path: &Path) -> Option<String> {
    let mut text = Vec::new();
    crate::logs::read_log(path)
        .ok()?
        .read_to_end(&mut text)
        .ok()?;
    let tail = &text[text.len().saturating_sub(MAX_OUTPUT_TEXT)..];
    Some(String::from_utf8_lossy(tail).into_owned())
}

pub fn last_line_of(path: &Path) -> Option<String> {
    last_lines_of(path)?
        .lines()
        .rev()
        .map(|l| l.trim().trim_matches(['│', '┃', '|']).trim())
        .find(|l| l.chars().any(char::is_alphanumeric))
        .map(str::to_string)
}

/// Visits every regular file below `dir` with its size, never through a symbolic link.
pub fn visit_files(dir: &Path, mut visit: impl FnMut(&Path, u64)) {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                visit(&entry.path(), meta.len());
            }
        }
    }
}

/// The bytes of the regular files below `dir`, never counted through a symbolic link.
pub fn bytes_below(dir: &Path) -> u64 {
    let mut total = 0;
    visit_files(dir, |_, size| total += size);
    total
}

/// The files under `dir` (relative paths, sorted), each with its size.
pub fn output_files(dir: &Path) -> Vec<(String, u64)> {
    let mut files = Vec::new();
    visit_files(dir, |path, size| {
        if let Ok(rel) = path.strip_prefix(dir) {
            files.push((rel.display().to_string(), size));
        }
    });
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stdout: &str, stderr: &str, outcome: ExitOutcome, reason: EndReason) -> Outcome {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        std::fs::write(&out, stdout).unwrap();
        std::fs::write(&err, stderr).unwrap();
        interpret(&out, &err, &ending(outcome, reason))
    }

    #[test]
    fn every_record_of_a_large_stdout_counts_and_the_last_says_the_status() {
        let mut stdout = String::new();
        for n in 0..120_000 {
            stdout.push_str(&format!(
                "{{\"type\": \"Snapshot\", \"url\": \"http://a.test/{n}\", \"title\": \
                 \"a page of a bookmarks file, with a title as long as real ones are, or longer: a bookmark's title\"}}\n"
            ));
        }
        stdout.push_str("{\"type\": \"ArchiveResult\", \"status\": \"succeeded\"}\n");
        assert!(stdout.len() > 16 << 20, "{}", stdout.len());
        let outcome = run(&stdout, "", ExitOutcome::Code(0), EndReason::Exited);
        assert_eq!(outcome.discovered.len(), 120_000);
        assert_eq!(outcome.status, ResultStatus::Succeeded);
    }

    fn ending(outcome: ExitOutcome, reason: EndReason) -> Ending {
        Ending {
            outcome,
            reason,
            timeout: Duration::from_secs(3),
            stopped: false,
            crawl_hook: false,
            no_space: false,
        }
    }

    fn run_ending(stdout: &str, ending: Ending) -> Outcome {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        std::fs::write(&out, stdout).unwrap();
        std::fs::write(&err, "").unwrap();
        interpret(&out, &err, &ending)
    }

    #[test]
    fn a_failed_exit_overrides_the_record_printed_before_and_keeps_its_words() {
        let stdout =
            "{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"got it\"}\n";
        let crashed = run(stdout, "", ExitOutcome::Code(1), EndReason::Exited);
        assert_eq!(crashed.status, ResultStatus::Failed);
        assert_eq!(
            crashed.output.as_deref(),
            Some("exited with code 1: got it")
        );
        let skipped = run(
            stdout,
            "",
            ExitOutcome::Code(EXIT_SKIPPED),
            EndReason::Exited,
        );
        assert_eq!(skipped.status, ResultStatus::Skipped);
        assert_eq!(skipped.output.as_deref(), Some("got it"));
        let killed = run(stdout, "", ExitOutcome::Signal(11), EndReason::Exited);
        assert_eq!(killed.status, ResultStatus::Failed);
        assert_eq!(killed.output.as_deref(), Some("killed by SIGSEGV: got it"));
    }

    #[test]
    fn a_hook_that_failed_for_want_of_space_says_so() {
        let stderr = "wget: cannot write to 'index.html' (No space left on device).\n";
        let full = run("", stderr, ExitOutcome::Code(3), EndReason::Exited);
        assert_eq!(full.status, ResultStatus::Failed);
        assert_eq!(
            full.output.as_deref(),
            Some("no space left on device: wget: cannot write to 'index.html' (No space left on device).")
        );
        let other = run(
            "",
            "404 Not Found\n",
            ExitOutcome::Code(8),
            EndReason::Exited,
        );
        assert_eq!(other.output.as_deref(), Some("404 Not Found"));
    }

    #[test]
    fn a_hook_an_operator_stopped_is_cancelled_whatever_it_printed() {
        let stdout =
            "{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"half\"}\n";
        let stopped = Ending {
            stopped: true,
            ..ending(ExitOutcome::Code(130), EndReason::Killed)
        };
        let outcome = run_ending(stdout, stopped);
        assert_eq!(outcome.status, ResultStatus::Cancelled);
        assert_eq!(outcome.output.as_deref(), Some("half"));
    }

    #[test]
    fn a_crawl_hook_prints_no_record_and_its_exit_is_its_status() {
        let crawl_hook = |code| Ending {
            crawl_hook: true,
            ..ending(ExitOutcome::Code(code), EndReason::Exited)
        };
        assert_eq!(
            run_ending("", crawl_hook(0)).status,
            ResultStatus::Succeeded
        );
        assert_eq!(run_ending("", crawl_hook(10)).status, ResultStatus::Skipped);
        assert_eq!(run_ending("", crawl_hook(2)).status, ResultStatus::Failed);
    }

    #[test]
    fn a_record_decides() {
        let stdout =
            "{\"type\":\"ArchiveResult\",\"status\":\"skipped\",\"output\":\"no title\"}\n";
        let outcome = run(stdout, "", ExitOutcome::Code(0), EndReason::Exited);
        assert_eq!(outcome.status, ResultStatus::Skipped);
        assert_eq!(outcome.output.as_deref(), Some("no title"));
    }

    #[test]
    fn exit_codes_decide_without_a_record() {
        let ok = run("done\n", "", ExitOutcome::Code(0), EndReason::Exited);
        assert_eq!(
            (ok.status, ok.output.as_deref()),
            (ResultStatus::NoResults, Some("done"))
        );
        let skipped = run(
            "",
            "no wget\n",
            ExitOutcome::Code(EXIT_SKIPPED),
            EndReason::Exited,
        );
        assert_eq!(skipped.status, ResultStatus::Skipped);
        assert_eq!(skipped.output.as_deref(), Some("no wget"));
        let failed = run("", "", ExitOutcome::Code(3), EndReason::Exited);
        assert_eq!(failed.status, ResultStatus::Failed);
        assert_eq!(failed.output.as_deref(), Some("exited with code 3"));
    }

    #[test]
    fn a_timeout_fails_whatever_the_exit_and_a_signal_is_named() {
        let late = run("", "", ExitOutcome::Code(0), EndReason::Timeout);
        assert_eq!(late.status, ResultStatus::Failed);
        assert_eq!(
            late.output.as_deref(),
            Some("timeout: still running after 3s")
        );
        let killed = run("", "bye\n", ExitOutcome::Signal(9), EndReason::Killed);
        assert_eq!(killed.status, ResultStatus::Failed);
        assert_eq!(killed.output.as_deref(), Some("killed by SIGKILL: bye"));
    }

    #[test]
    fn snapshots_are_discovered_and_bad_records_reported() {
        let stdout = "{\"type\":\"Snapshot\",\"url\":\"http://a/\"}\n{broken\n\
                      {\"type\":\"Nonsense\"}\n";
        let outcome = run(stdout, "", ExitOutcome::Code(0), EndReason::Exited);
        assert_eq!(outcome.discovered, vec!["http://a/".to_string()]);
        let output = outcome.output.unwrap();
        assert!(output.contains("2 records ignored"), "{output}");
        assert!(output.contains("not valid JSON"), "{output}");
        assert!(output.contains("unknown type \"Nonsense\""), "{output}");
    }
}
