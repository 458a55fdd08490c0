//! Crawls for people: `abxctl crawls`, and what every view of a crawl says of it — its status,
//! its counts by status, sizes and log tails (`abxctl show` is `show`'s, results `results`').
//!
//! Invariant: rendering reads, never writes; what came from outside (URLs, hook output, a
//! hook's stderr) is printed escaped (`printable`).

use super::short_duration;
use super::table::Table;
use crate::domain::{Limit, ResultStatus, WorkCounts, WorkStatus};
use crate::printable;
use crate::store::{now_ms, Crawl, Store, StoreError};

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

/// A crawl's seeds on one line: every one of a few; the first of many, and how many more; for
/// an import (whose seeds are its snapshots), how many it was parsed into, and from where when
/// a schedule's file is read anew each time.
pub fn seeds_line(crawl: &Crawl) -> String {
    const SHOWN: usize = 3;
    let urls = &crawl.urls;
    if crawl.has_input && urls.is_empty() {
        let seeds = match crawl.imported_seeds {
            1 => "1 seed".to_string(),
            n => format!("{n} seeds"),
        };
        return match &crawl.import_url {
            Some(url) => format!("imported from {url}: {seeds}"),
            None => format!("imported: {seeds}"),
        };
    }
    match urls.len() {
        0..=SHOWN => urls.join(" "),
        n => format!("{} … and {} more", urls[..SHOWN].join(" "), n - SHOWN),
    }
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
        // (A crawl queued in an ArchiveBox collection that abxd serves: marked as its.)
        let seeds = match crawl.options.archivebox {
            Some(_) => format!("[ArchiveBox] {}", seeds_line(crawl)),
            None => seeds_line(crawl),
        };
        table.add_row([
            crawl.id.to_string(),
            crawl_status(crawl),
            crawl.max_depth.to_string(),
            format!("{}/{}", counts.sealed_snapshots, counts.snapshots),
            counts.results_text(),
            short_duration(now - crawl.created_at),
            printable::line(&seeds).into_owned(),
        ]);
    }
    Ok(table.to_string())
}

/// Where a crawl stands: its snapshots sealed, its results by status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrawlCounts {
    pub snapshots: usize,
    pub sealed_snapshots: usize,
    pub started_snapshots: usize,
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
        Ok(CrawlCounts::from_work(
            &store.crawls().work_counts(crawl_id)?,
        ))
    }

    /// The counts of what `Crawls::work_counts` counted.
    pub fn from_work((snapshots, results): &WorkCounts) -> CrawlCounts {
        let mut counts = CrawlCounts::default();
        for &(status, n) in snapshots {
            counts.snapshots += n as usize;
            match status {
                WorkStatus::Sealed => counts.sealed_snapshots += n as usize,
                WorkStatus::Started => counts.started_snapshots += n as usize,
                WorkStatus::Queued => {}
            }
        }
        for &(status, n) in results {
            *match status {
                ResultStatus::Succeeded => &mut counts.succeeded,
                ResultStatus::NoResults => &mut counts.noresults,
                ResultStatus::Failed => &mut counts.failed,
                ResultStatus::Skipped => &mut counts.skipped,
                ResultStatus::Cancelled => &mut counts.cancelled,
                _ => &mut counts.pending,
            } += n as usize;
        }
        counts
    }

    /// The snapshots and results by status, in words: `snapshots: 10 queued, 2 started, 88
    /// sealed; results: 300 ok, 0 noresults, 2 failed, 0 skipped, 8 to run`.
    pub fn by_status_text(&self) -> String {
        let queued = self.snapshots - self.sealed_snapshots - self.started_snapshots;
        let to_run = match self.pending {
            0 => String::new(),
            n => format!(", {n} to run"),
        };
        format!(
            "snapshots: {queued} queued, {} started, {} sealed; results: {}{to_run}",
            self.started_snapshots,
            self.sealed_snapshots,
            self.results_text()
        )
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

/// `, ended by max_urls` when a limit ended a crawl or a snapshot, else nothing.
pub(super) fn ended_by(limit: Option<Limit>) -> String {
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
