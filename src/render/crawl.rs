//! Crawls for people: `abxctl crawls`, `abxctl show CRAWL` (each result with what it takes to
//! find out why it failed), and a crawl's progress (`abxd run`, `add --wait`).
//!
//! Invariant: rendering reads, never writes; what came from outside (URLs, hook output, a
//! hook's stderr) is printed escaped (`printable`).

use super::paint::{paint, Colour};
use super::table::Table;
use super::{short_duration, signal_name};
use crate::domain::{CrawlOptions, CrawlRules, Kind, Limit, Refusal, ResultStatus, WorkStatus};
use crate::printable;
use crate::store::{now_ms, Crawl, HookResult, ProcessRow, RefusedUrls, Store, StoreError};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// A byte count for people: `512 B`, `4.2 KiB`, `3.0 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The first line of `text` (from outside: escaped), cut to `max` characters.
pub(super) fn one_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let line = if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line.to_string()
    };
    printable::line(&line).into_owned()
}

/// `abxctl crawls`: one line per crawl.
pub fn crawls_table(store: &Store, crawls: &[Crawl]) -> Result<String, StoreError> {
    if crawls.is_empty() {
        return Ok("no crawls\n".into());
    }
    let mut table = Table::new([
        "ID",
        "STATUS",
        "DEPTH",
        "SNAPSHOTS",
        "RESULTS",
        "AGE",
        "URLS",
    ]);
    let now = now_ms();
    for crawl in crawls {
        let counts = CrawlCounts::of(store, crawl.id)?;
        table.add_row([
            crawl.id.to_string(),
            crawl_status(crawl),
            crawl.max_depth.to_string(),
            format!("{}/{}", counts.sealed_snapshots, counts.snapshots),
            counts.results_text(),
            short_duration(now - crawl.created_at),
            printable::line(&crawl.urls.join(" ")).into_owned(),
        ]);
    }
    Ok(table.to_string())
}

/// Where a crawl stands: its snapshots sealed, its results by status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrawlCounts {
    pub snapshots: usize,
    pub sealed_snapshots: usize,
    pub succeeded: usize,
    pub noresults: usize,
    pub failed: usize,
    pub skipped: usize,
    pub cancelled: usize,
    /// Results not final yet (queued or running).
    pub pending: usize,
}

impl CrawlCounts {
    /// Counts crawl `crawl_id`'s snapshots and results.
    pub fn of(store: &Store, crawl_id: i64) -> Result<CrawlCounts, StoreError> {
        let (snapshots, results) = store.crawls().work_counts(crawl_id)?;
        let mut counts = CrawlCounts::default();
        for (status, n) in snapshots {
            counts.snapshots += n as usize;
            if status == WorkStatus::Sealed {
                counts.sealed_snapshots += n as usize;
            }
        }
        for (status, n) in results {
            *match status {
                ResultStatus::Succeeded => &mut counts.succeeded,
                ResultStatus::NoResults => &mut counts.noresults,
                ResultStatus::Failed => &mut counts.failed,
                ResultStatus::Skipped => &mut counts.skipped,
                ResultStatus::Cancelled => &mut counts.cancelled,
                _ => &mut counts.pending,
            } += n as usize;
        }
        Ok(counts)
    }

    /// The results in words: `3 ok, 0 noresults, 1 failed, 0 skipped` (and what was cancelled).
    pub fn results_text(&self) -> String {
        format!(
            "{} ok, {} noresults, {} failed, {} skipped{}",
            self.succeeded,
            self.noresults,
            self.failed,
            self.skipped,
            match self.cancelled {
                0 => String::new(),
                n => format!(", {n} cancelled"),
            }
        )
    }
}

/// Each result's latest hook process row, by result id.
type RunByResult<'a> = HashMap<i64, &'a ProcessRow>;

/// How many lines of a failed hook's stderr `show` prints.
const STDERR_TAIL_LINES: usize = 5;

/// What a process's end says in one word: its exit code, or the signal that killed it.
fn exit_text(row: &ProcessRow) -> String {
    match (row.exit_code, row.exit_signal) {
        (Some(code), _) => code.to_string(),
        (None, Some(signal)) => signal_name(signal),
        (None, None) => "-".into(),
    }
}

fn results_table(results: &[&HookResult], runs: &RunByResult<'_>, colour: bool) -> Table<10> {
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
            run.map_or("-".into(), |r| exit_text(r)),
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
fn failures(results: &[&HookResult], runs: &RunByResult<'_>, out: &mut String) {
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

/// The last `lines` non-blank lines of a log file (within its last 4 KiB), as written: whoever
/// shows them escapes them for where they go.
pub fn log_tail(path: &std::path::Path, lines: usize) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = crate::logs::read_log(path) else {
        return Vec::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(4096)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let found: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    found[found.len().saturating_sub(lines)..]
        .iter()
        .map(|line| line.to_string())
        .collect()
}

/// `abxctl show ID`: a crawl, its crawl hooks' results, and each snapshot with its results.
pub fn crawl_report(
    store: &Store,
    data_dir: &std::path::Path,
    crawl_id: i64,
    colour: bool,
) -> Result<Option<String>, StoreError> {
    let Some(crawl) = store.crawls().get(crawl_id)? else {
        return Ok(None);
    };
    let results = store.results().of_crawl(crawl_id)?;
    let snapshots = store.crawls().snapshots(crawl_id)?;
    let processes = store.processes().crawl_processes(crawl_id)?;
    // The latest run of each result (rows in id order: a later run replaces an earlier one).
    let runs: RunByResult<'_> = processes
        .iter()
        .filter(|row| row.kind == Kind::Hook)
        .filter_map(|row| Some((row.result_id?, row)))
        .collect();
    let unkillable: Vec<&ProcessRow> = processes
        .iter()
        .filter(|row| row.unkillable && row.status.is_live())
        .collect();
    let mut out = String::new();
    out.push_str(&format!(
        "crawl {}: {}, depth {}, {} snapshots\n  urls: {}\n  dir:  {}\n",
        crawl.id,
        crawl_status(&crawl),
        crawl.max_depth,
        snapshots.len(),
        printable::line(&crawl.urls.join(" ")),
        data_dir.join("crawls").join(crawl.id.to_string()).display()
    ));
    if let Some(rules) = rules_line(&crawl.rules) {
        out.push_str(&format!("  rules: {rules}\n"));
    }
    options_lines(&crawl.options, &mut out);
    refused_lines(&store.crawls().refused_urls(crawl_id)?, &mut out);
    for export in store.exports().of_crawl(crawl_id)? {
        out.push_str(&format!(
            "  archivebox {} (user {}): {}{}\n",
            export.target.display(),
            export.owner,
            export.status,
            (export.detail.as_deref())
                .filter(|_| export.status.is_final())
                .map(|d| format!(": {}", printable::line(d)))
                .unwrap_or_default()
        ));
    }
    let crawl_hooks: Vec<&HookResult> =
        results.iter().filter(|r| r.snapshot_id.is_none()).collect();
    if !crawl_hooks.is_empty() {
        out.push_str("\n  crawl hooks\n");
        results_table(&crawl_hooks, &runs, colour).render_into(&mut out, "    ");
        failures(&crawl_hooks, &runs, &mut out);
    }
    for snapshot in &snapshots {
        let ended_by = ended_by(snapshot.ended_by);
        out.push_str(&format!(
            "\n  snapshot {} ({}, depth {}{ended_by}): {}\n",
            snapshot.id,
            snapshot.status,
            snapshot.depth,
            printable::line(&snapshot.url)
        ));
        let tags = crate::hooks::index::tags_of(&crawl, &store.results().tags(snapshot.id)?);
        if !tags.is_empty() {
            out.push_str(&format!(
                "    tags: {}\n",
                printable::line(&tags.join(", "))
            ));
        }
        let mine: Vec<&HookResult> = results
            .iter()
            .filter(|r| r.snapshot_id == Some(snapshot.id))
            .collect();
        if mine.is_empty() {
            out.push_str("    no results yet\n");
        } else {
            results_table(&mine, &runs, colour).render_into(&mut out, "    ");
            failures(&mine, &runs, &mut out);
        }
    }
    for row in &unkillable {
        out.push_str(&format!(
            "\n  UNKILLABLE row {} pid {}: {}\n    {}\n",
            row.id,
            row.pid.unwrap_or_default(),
            printable::line(&row.argv.join(" ")),
            row.end_detail
                .as_ref()
                .map(|d| d.to_string())
                .unwrap_or_default()
        ));
    }
    Ok(Some(out))
}

/// The links the crawl's hooks discovered and the URL rule refused: a line per reason, with the
/// first ones refused (shown escaped: they come from pages); and what its egress policy refused.
fn refused_lines(refused: &BTreeMap<Refusal, RefusedUrls>, out: &mut String) {
    for (reason, urls) in refused {
        if urls.first.is_empty() {
            // (Its egress policy's: connects and sends the kernel refused, no URL named.)
            out.push_str(&format!(
                "  refused: {} {reason} (connects or sends of its hooks)\n",
                urls.count
            ));
            continue;
        }
        let more = if urls.count > urls.first.len() as u64 {
            ", …"
        } else {
            ""
        };
        out.push_str(&format!(
            "  refused: {} {reason}: {}{more}\n",
            urls.count,
            printable::line(&urls.first.join(", "))
        ));
    }
}

/// A crawl's rules as shown, if it has any: `scope host, denylist \.pdf$, max_urls 3`.
fn rules_line(rules: &CrawlRules) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(scope) = rules.scope {
        parts.push(format!("scope {scope}"));
    }
    for (name, list) in [
        ("allowlist", &rules.url_allowlist),
        ("denylist", &rules.url_denylist),
    ] {
        if !list.is_empty() {
            parts.push(format!("{name} {}", printable::line(&list.join(" "))));
        }
    }
    if rules.only_new() {
        parts.push("only_new".into());
    }
    if let Some(most) = rules.max_concurrent_snapshots {
        parts.push(format!("max_concurrent_snapshots {most}"));
    }
    for limit in Limit::ALL {
        if let Some(value) = rules.limit(*limit) {
            let shown = match limit {
                Limit::MaxUrls => value.to_string(),
                Limit::Timeout => {
                    humantime::format_duration(Duration::from_secs(value)).to_string()
                }
                Limit::MaxSize | Limit::SnapshotMaxSize => format!("{value} bytes"),
            };
            parts.push(format!("{limit} {shown}"));
        }
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// A crawl's tags, persona and parser, a line each that it has.
fn options_lines(options: &CrawlOptions, out: &mut String) {
    if !options.tags.is_empty() {
        let tags = options.tags.join(", ");
        out.push_str(&format!("  tags: {}\n", printable::line(&tags)));
    }
    if let Some(persona) = &options.persona {
        out.push_str(&format!("  persona: {}\n", printable::line(persona)));
    }
    if let Some(parser) = &options.parser {
        out.push_str(&format!("  parser: {}\n", printable::line(parser)));
    }
}

/// `, ended by max_urls` when a limit ended a crawl or a snapshot, else nothing.
fn ended_by(limit: Option<Limit>) -> String {
    limit
        .map(|limit| format!(", ended by {limit}"))
        .unwrap_or_default()
}

/// A crawl's status as shown: `sealed (cancelled)`, `sealed (finished, ended by max_urls)`, …
pub fn crawl_status(crawl: &Crawl) -> String {
    let ended_by = ended_by(crawl.ended_by);
    match crawl.outcome {
        Some(outcome) if crawl.status == WorkStatus::Sealed => {
            format!("sealed ({outcome}{ended_by})")
        }
        _ if crawl.paused_at.is_some() => format!("{} (paused)", crawl.status),
        _ => crawl.status.to_string(),
    }
}
