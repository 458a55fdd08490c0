//! A crawl's results as `abxctl show` prints them: a table of results with their latest runs,
//! and for each failed one what it takes to find out why (its exit, the end of its stderr, its
//! logs).
//!
//! Invariant: rendering reads, never writes; what came from outside (hook output, a hook's
//! stderr) is printed escaped (`printable`).

use super::crawl::{bytes, log_tail, one_line};
use super::paint::{paint, Colour};
use super::table::Table;
use super::{short_duration, signal_name};
use crate::domain::ResultStatus;
use crate::printable;
use crate::store::{now_ms, HookResult, ProcessRow, Store, StoreError};
use std::collections::HashMap;

/// Each result's latest hook process row, by result id.
pub(super) type RunByResult = HashMap<i64, ProcessRow>;

/// How many lines of a failed hook's stderr `show` prints.
const STDERR_TAIL_LINES: usize = 5;

/// What a process's end says in one word: its exit code, or the signal that killed it.
pub(super) fn exit_text(row: &ProcessRow) -> String {
    match (row.exit_code, row.exit_signal) {
        (Some(code), _) => code.to_string(),
        (None, Some(signal)) => signal_name(signal),
        (None, None) => "-".into(),
    }
}

pub(super) fn results_table(results: &[HookResult], runs: &RunByResult, colour: bool) -> Table<10> {
    let mut table = Table::new([
        "HOOK", "STATUS", "ROW", "EXIT", "TIME", "CPU", "MEM", "SIZE", "FILES", "OUTPUT",
    ]);
    for result in results {
        let time = match (result.started_at, result.ended_at) {
            (Some(start), Some(end)) => short_duration(end - start),
            (Some(start), None) => format!("{}…", short_duration(now_ms() - start)),
            _ => "-".into(),
        };
        let run = runs.get(&result.id);
        let cpu = run
            .and_then(|r| r.cpu_usec)
            .map_or("-".into(), |usec| short_duration(usec / 1000));
        let memory = run
            .and_then(|r| r.memory_peak)
            .map_or("-".into(), |peak| bytes(peak as u64));
        table.add_row([
            printable::line(&result.hook).into_owned(),
            match result.status {
                ResultStatus::Failed => paint("failed", Colour::Red, colour),
                status => status.to_string(),
            },
            run.map_or("-".into(), |r| r.id.to_string()),
            run.map_or("-".into(), exit_text),
            time,
            cpu,
            memory,
            bytes(result.output_size),
            result.output_files.len().to_string(),
            one_line(result.output.as_deref().unwrap_or(""), 70),
        ]);
    }
    table
}

/// For each failed result: why, as far as its process says — its exit, the end of its stderr,
/// and where its logs are (`abxctl logs --result ID` prints them).
pub(super) fn failures(results: &[HookResult], runs: &RunByResult, out: &mut String) {
    for result in results.iter().filter(|r| r.status == ResultStatus::Failed) {
        let Some(run) = runs.get(&result.id) else {
            continue;
        };
        out.push_str(&format!(
            "    {} failed (result {}, row {}, exit {}):\n",
            printable::line(&result.hook),
            result.id,
            run.id,
            exit_text(run)
        ));
        let tail = run
            .stderr_path
            .as_deref()
            .map(|path| log_tail(std::path::Path::new(path), STDERR_TAIL_LINES))
            .unwrap_or_default();
        for line in tail {
            out.push_str(&format!("      | {}\n", printable::line(&line)));
        }
        for path in [&run.stdout_path, &run.stderr_path].into_iter().flatten() {
            out.push_str(&format!("      log: {}\n", printable::line(path)));
        }
    }
}

/// The latest run of each of `results`, by result id (one read for the results shown).
pub(super) fn latest_runs<'a>(
    store: &Store,
    results: impl IntoIterator<Item = &'a HookResult>,
) -> Result<RunByResult, StoreError> {
    let ids: Vec<i64> = results.into_iter().map(|result| result.id).collect();
    let runs = store.processes().latest_runs(&ids)?;
    Ok((runs.into_iter())
        .filter_map(|run| Some((run.result_id?, run)))
        .collect())
}
