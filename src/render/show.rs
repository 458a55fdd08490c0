//! `abxctl show CRAWL`: a crawl, its crawl hooks' results, and its snapshots with theirs — a
//! page at a time (`--page`, `--limit`, `--status`, `--after`). A crawl with more snapshots than
//! a page is summed up first: its snapshots and results counted by status, its first failures,
//! its last snapshots; and the footer names the next page.
//!
//! Invariant: every read is bounded by what is shown — the page's snapshots (`limit`, one
//! more to know whether more follow), their results and each result's latest run, the first
//! failures, the last snapshots — never by the crawl, whose counts by status are kept as its
//! rows change (`crawl_tallies`). Rendering reads, never writes; what came from outside (URLs,
//! hook output) is printed escaped.

use super::asked::{options_lines, refused_lines, rules_line};
use super::crawl::{crawl_status, ended_by, CrawlCounts};
use super::results::{exit_text, failures, latest_runs, results_table, RunByResult};
use crate::domain::{PageStart, SnapshotState, WorkCounts};
use crate::printable;
use crate::store::{Crawl, HookResult, Snapshot, Store, StoreError};
use std::collections::HashMap;

/// Snapshots a page holds unless `--limit` says otherwise.
pub const DEFAULT_PAGE: u32 = 50;

/// Failed results listed before the page of a crawl larger than a page.
const FAILURES_SHOWN: u32 = 10;

/// Last snapshots named after the first page of a crawl larger than a page.
const LAST_SHOWN: u32 = 3;

/// Which part of a crawl `show` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShowPage {
    /// Only the snapshots in this state (every one without).
    pub state: Option<SnapshotState>,
    pub start: PageStart,
    pub limit: u32,
}

impl Default for ShowPage {
    fn default() -> ShowPage {
        ShowPage {
            state: None,
            start: PageStart::Skip(0),
            limit: DEFAULT_PAGE,
        }
    }
}

impl ShowPage {
    /// Page `number` (from 1) of `limit` snapshots.
    pub fn numbered(number: u64, limit: u32, state: Option<SnapshotState>) -> ShowPage {
        ShowPage {
            state,
            start: PageStart::Skip(number.saturating_sub(1).saturating_mul(u64::from(limit))),
            limit: limit.max(1),
        }
    }

    /// Whether this is the first page of every snapshot (the one a crawl is summed up on).
    fn is_first_of_all(&self) -> bool {
        self.state.is_none() && self.start == PageStart::Skip(0)
    }
}

/// A snapshot as a page shows it: with its results and tags.
pub struct ShownSnapshot {
    pub snapshot: Snapshot,
    pub results: Vec<HookResult>,
    pub tags: Vec<String>,
}

/// What one page of a crawl holds, read once for the table and for JSON.
pub struct CrawlPage {
    pub crawl: Crawl,
    /// The crawl's snapshots and results by status, as counted once for the page.
    pub work: WorkCounts,
    pub counts: CrawlCounts,
    /// Snapshots in the page's state (every snapshot's count is in `counts`).
    pub in_state: u64,
    pub crawl_results: Vec<HookResult>,
    pub snapshots: Vec<ShownSnapshot>,
    /// Whether snapshots follow this page.
    pub more: bool,
    /// The latest run of each result shown.
    pub runs: RunByResult,
}

impl CrawlPage {
    /// Reads `page` of crawl `crawl_id`; `None` if there is no such crawl.
    pub fn read(
        store: &Store,
        crawl_id: i64,
        page: &ShowPage,
    ) -> Result<Option<CrawlPage>, StoreError> {
        let Some(crawl) = store.crawls().get(crawl_id)? else {
            return Ok(None);
        };
        let work = store.crawls().work_counts(crawl_id)?;
        let counts = CrawlCounts::from_work(&work);
        let in_state = match page.state {
            None => counts.snapshots as u64,
            state => store.crawls().snapshot_count(crawl_id, state)?,
        };
        let crawl_results = store.results().of_crawl_hooks(crawl_id)?;
        let listed =
            (store.crawls()).snapshot_page(crawl_id, page.state, page.start, page.limit)?;
        let more = listed.more;
        // (The page's results and tags in one read each, not one per snapshot.)
        let ids: Vec<i64> = listed.snapshots.iter().map(|s| s.id).collect();
        let mut results: HashMap<i64, Vec<HookResult>> = HashMap::new();
        for result in store.results().of_snapshots(&ids)? {
            let of = result.snapshot_id.unwrap_or_default();
            results.entry(of).or_default().push(result);
        }
        let mut reported: HashMap<i64, Vec<String>> = HashMap::new();
        for (of, tag) in store.results().tags_of_snapshots(&ids)? {
            reported.entry(of).or_default().push(tag);
        }
        let mut snapshots = Vec::with_capacity(listed.snapshots.len());
        for snapshot in listed.snapshots {
            let reported = reported.remove(&snapshot.id).unwrap_or_default();
            snapshots.push(ShownSnapshot {
                tags: crate::hooks::index::tags_of(&crawl, &reported),
                results: results.remove(&snapshot.id).unwrap_or_default(),
                snapshot,
            });
        }
        let shown = (crawl_results.iter()).chain(snapshots.iter().flat_map(|s| &s.results));
        let runs = latest_runs(store, shown)?;
        Ok(Some(CrawlPage {
            crawl,
            work,
            counts,
            in_state,
            crawl_results,
            snapshots,
            more,
            runs,
        }))
    }

    /// The id after which the next page starts, if one follows (the `--after` cursor).
    pub fn next_after(&self) -> Option<i64> {
        let last = self.snapshots.last()?;
        self.more.then_some(last.snapshot.id)
    }
}

/// `abxctl show ID`: `page` of a crawl, summed up first when it does not fit in one page.
pub fn crawl_report(
    store: &Store,
    data_dir: &std::path::Path,
    crawl_id: i64,
    page: &ShowPage,
    colour: bool,
) -> Result<Option<String>, StoreError> {
    let Some(shown) = CrawlPage::read(store, crawl_id, page)? else {
        return Ok(None);
    };
    let crawl = &shown.crawl;
    let mut out = String::new();
    out.push_str(&format!(
        "crawl {}: {}, depth {}, {} snapshots\n  urls: {}\n  dir:  {}\n",
        crawl.id,
        crawl_status(crawl),
        crawl.max_depth,
        shown.counts.snapshots,
        printable::line(&super::crawl::seeds_line(crawl)),
        data_dir.join("crawls").join(crawl.id.to_string()).display()
    ));
    if let Some(rules) = rules_line(&crawl.rules) {
        out.push_str(&format!("  rules: {rules}\n"));
    }
    options_lines(&crawl.options, &mut out);
    refused_lines(&store.crawls().refused_urls(crawl_id)?, &mut out);
    let waits = store.crawls().admission_waits()?;
    if let Some((_, why)) = waits.iter().find(|(id, _)| *id == crawl_id) {
        out.push_str(&format!(
            "  waits: new snapshots wait for {}\n",
            printable::line(why)
        ));
    }
    if crawl.status != crate::domain::WorkStatus::Sealed {
        for host in store.queue().hosts().waiting_in(crawl_id)? {
            out.push_str(&format!("  waits: {}\n", super::site_wait(&host)));
        }
    }
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
    let paged = shown.more || !page.is_first_of_all();
    if paged {
        out.push_str(&format!("  {}\n", shown.counts.by_status_text()));
    }
    if !shown.crawl_results.is_empty() {
        out.push_str("\n  crawl hooks\n");
        results_table(&shown.crawl_results, &shown.runs, colour).render_into(&mut out, "    ");
        failures(&shown.crawl_results, &shown.runs, &mut out);
    }
    if paged && page.state != Some(SnapshotState::Failed) && shown.counts.failed > 0 {
        first_failures(store, &shown, &mut out)?;
    }
    for shown_snapshot in &shown.snapshots {
        snapshot_lines(shown_snapshot, &shown.runs, colour, &mut out);
    }
    if paged {
        page_footer(store, &shown, page, &mut out)?;
    }
    for row in store.processes().unkillable_of_crawl(crawl_id)? {
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

/// A snapshot, its tags, and its results with what it takes to see why one failed.
fn snapshot_lines(shown: &ShownSnapshot, runs: &RunByResult, colour: bool, out: &mut String) {
    let snapshot = &shown.snapshot;
    out.push_str(&format!(
        "\n  snapshot {} ({}, depth {}{}): {}\n",
        snapshot.id,
        snapshot.status,
        snapshot.depth,
        ended_by(snapshot.ended_by),
        printable::line(&snapshot.url)
    ));
    if !shown.tags.is_empty() {
        let tags = shown.tags.join(", ");
        out.push_str(&format!("    tags: {}\n", printable::line(&tags)));
    }
    if shown.results.is_empty() {
        out.push_str("    no results yet\n");
    } else {
        results_table(&shown.results, runs, colour).render_into(out, "    ");
        failures(&shown.results, runs, out);
    }
}

/// The crawl's first failed results, one line each, before a page of a crawl larger than it.
fn first_failures(store: &Store, shown: &CrawlPage, out: &mut String) -> Result<(), StoreError> {
    let crawl_id = shown.crawl.id;
    let failed = store.results().failed_of_crawl(crawl_id, FAILURES_SHOWN)?;
    let total = shown.counts.failed;
    out.push_str(&match total > failed.len() {
        true => format!(
            "\n  failed: the first {} of {total} (all: abxctl show {crawl_id} --status failed)\n",
            failed.len()
        ),
        false => format!("\n  failed: {total}\n"),
    });
    let runs = latest_runs(store, &failed)?;
    for result in &failed {
        let run = runs.get(&result.id);
        out.push_str(&format!(
            "    snapshot {}: {} (result {}, row {}, exit {})\n",
            result.snapshot_id.map_or("-".into(), |id| id.to_string()),
            printable::line(&result.hook),
            result.id,
            run.map_or("-".into(), |r| r.id.to_string()),
            run.map_or("-".into(), exit_text)
        ));
    }
    Ok(())
}

/// Which snapshots the page held, how to get the next, and — after the first page of a crawl
/// larger than it — the crawl's last snapshots.
fn page_footer(
    store: &Store,
    shown: &CrawlPage,
    page: &ShowPage,
    out: &mut String,
) -> Result<(), StoreError> {
    let crawl_id = shown.crawl.id;
    let state = page.state.map(|s| format!(" {s}")).unwrap_or_default();
    let first = match page.start {
        PageStart::Skip(skipped) => Some(skipped + 1),
        PageStart::After(_) => None,
    };
    let held = shown.snapshots.len() as u64;
    out.push('\n');
    match (first, held) {
        (_, 0) => out.push_str(&format!("  no{state} snapshots on this page\n")),
        (Some(first), _) => out.push_str(&format!(
            "  snapshots {first}–{} of {}{state}\n",
            first + held - 1,
            shown.in_state
        )),
        (None, _) => out.push_str(&format!(
            "  {held} of {}{state} snapshots\n",
            shown.in_state
        )),
    }
    if let Some(after) = shown.next_after() {
        let mut next = format!("abxctl show {crawl_id}");
        match page.start {
            PageStart::Skip(skipped) => {
                let number = skipped / u64::from(page.limit) + 2;
                next.push_str(&format!(" --page {number}"));
            }
            PageStart::After(_) => next.push_str(&format!(" --after {after}")),
        }
        if let Some(state) = page.state {
            next.push_str(&format!(" --status {state}"));
        }
        if page.limit != DEFAULT_PAGE {
            next.push_str(&format!(" --limit {}", page.limit));
        }
        out.push_str(&format!("  next: {next}\n"));
    }
    if page.is_first_of_all() && shown.more {
        out.push_str("  last:\n");
        for snapshot in store.crawls().last_snapshots(crawl_id, LAST_SHOWN)? {
            out.push_str(&format!(
                "    snapshot {} ({}, depth {}): {}\n",
                snapshot.id,
                snapshot.status,
                snapshot.depth,
                printable::line(&snapshot.url)
            ));
        }
    }
    Ok(())
}
