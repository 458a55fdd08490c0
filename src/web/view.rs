//! What a page of the web view shows, read from the store and procfs at the moment it is drawn.
//!
//! Invariant: it reads, never writes — the store through its own read-only connection, procfs
//! for what the live processes of this machine use now; a row's process is checked against its
//! identity as `abxctl ps` checks it (`render::PsEntry`), never trusted by pid alone.

use crate::domain::Kind;
use crate::render::{CrawlCounts, PsEntry};
use crate::store::{now_ms, Crawl, HookResult, ProcessRow, Snapshot, Store, StoreError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How long an ended row stays in the tree: long enough to be seen ending.
pub const ENDED_SHOWN_MS: i64 = 60_000;

/// How many of those the tree holds at most, the newest: a busy host ends thousands a minute.
pub const ENDED_SHOWN: u32 = 100;

/// How many crawls the index lists.
pub const CRAWLS_SHOWN: u32 = 20;

/// Which machine this is.
#[derive(Debug, Clone)]
pub struct Host {
    pub hostname: String,
    pub machine_id: String,
    pub version: &'static str,
}

impl Host {
    pub fn this() -> Host {
        Host {
            hostname: crate::identity::hostname(),
            machine_id: crate::identity::machine_id().to_string(),
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// What a row's process (a hook: its whole tree) uses: now, for a live one; as recorded at its
/// end, for an ended one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub cpu_ms: Option<i64>,
    /// Resident now (live), or the peak recorded (ended, where the cgroup counted it).
    pub memory_bytes: Option<u64>,
}

/// The index: the tree and the latest crawls.
pub struct IndexData {
    pub entries: Vec<PsEntry>,
    /// How many rows ended within [`ENDED_SHOWN_MS`] (the tree holds the newest of them).
    pub ended: u64,
    pub usage: HashMap<i64, Usage>,
    pub crawls: Vec<(Crawl, CrawlCounts)>,
    /// The running crawls whose snapshots wait for admission (disk, memory, browsers), and why.
    pub waits: Vec<(i64, String)>,
    /// The sites whose queued snapshots wait on politeness (its delay, or a cool-down), the
    /// busiest first, at most [`HOSTS_SHOWN`].
    pub hosts_waiting: Vec<crate::store::HostState>,
}

/// Waiting sites the index names.
pub const HOSTS_SHOWN: usize = 20;

/// A crawl and its snapshots.
pub struct CrawlData {
    pub crawl: Crawl,
    pub counts: CrawlCounts,
    /// The page shown (from 1), and its snapshots.
    pub page: u64,
    pub snapshots: Vec<Snapshot>,
    /// Whether snapshots follow this page.
    pub more: bool,
    /// Its first results that failed (all of them: `counts.failed`).
    pub failed: Vec<HookResult>,
}

/// Snapshots a page of the web view's crawl holds.
pub const CRAWL_PAGE: u32 = 100;

/// Failed results a crawl's page lists.
pub const FAILED_SHOWN: u32 = 20;

/// A snapshot, its results, and each result's latest run.
pub struct SnapshotData {
    pub snapshot: Snapshot,
    pub results: Vec<HookResult>,
    pub runs: HashMap<i64, ProcessRow>,
    /// Where its files are.
    pub dir: PathBuf,
}

pub fn index(store: &Store) -> Result<IndexData, StoreError> {
    let now = now_ms();
    let (rows, ended) =
        (store.processes().watched()).live_and_ended_since(now - ENDED_SHOWN_MS, ENDED_SHOWN)?;
    let entries = PsEntry::all(rows, now);
    let usage = entries
        .iter()
        .map(|entry| (entry.row.id, usage_of(entry)))
        .collect();
    let mut crawls = Vec::new();
    for crawl in store.crawls().recent_crawls(CRAWLS_SHOWN)? {
        let counts = CrawlCounts::of(store, crawl.id)?;
        crawls.push((crawl, counts));
    }
    Ok(IndexData {
        entries,
        ended,
        usage,
        crawls,
        waits: store.crawls().admission_waits()?,
        hosts_waiting: {
            let mut waiting = store.queue().hosts().waiting()?;
            waiting.sort_by_key(|h| std::cmp::Reverse(h.queued));
            waiting.truncate(HOSTS_SHOWN);
            waiting
        },
    })
}

/// Page `page` (from 1) of crawl `id`: what it reads is bounded by the page, not the crawl.
pub fn crawl(store: &Store, id: i64, page: u64) -> Result<Option<CrawlData>, StoreError> {
    let Some(crawl) = store.crawls().get(id)? else {
        return Ok(None);
    };
    let start = crate::render::ShowPage::numbered(page, CRAWL_PAGE, None).start;
    let listed = (store.crawls()).snapshot_page(id, None, start, CRAWL_PAGE)?;
    Ok(Some(CrawlData {
        counts: CrawlCounts::of(store, id)?,
        page,
        snapshots: listed.snapshots,
        more: listed.more,
        failed: store.results().failed_of_crawl(id, FAILED_SHOWN)?,
        crawl,
    }))
}

pub fn snapshot(
    store: &Store,
    data_dir: &Path,
    id: i64,
) -> Result<Option<SnapshotData>, StoreError> {
    let Some(snapshot) = store.crawls().snapshot(id)? else {
        return Ok(None);
    };
    let results = store.results().snapshot_results(id)?;
    let mut runs = HashMap::new();
    for result in &results {
        if let Some(Some(row)) = result
            .process_id
            .map(|p| store.processes().get(p))
            .transpose()?
        {
            runs.insert(result.id, row);
        }
    }
    Ok(Some(SnapshotData {
        dir: crate::hooks::snapshot_dir(data_dir, snapshot.crawl_id, snapshot.id),
        snapshot,
        results,
        runs,
    }))
}

/// What the process of `entry` uses: read now from its cgroup or procfs when it runs here (a
/// hook's whole tree), else what its row recorded.
fn usage_of(entry: &PsEntry) -> Usage {
    let row = &entry.row;
    let alive = entry.verified == Some(crate::identity::Liveness::Alive);
    let recorded = Usage {
        cpu_ms: row.cpu_usec.map(|usec| usec / 1000),
        memory_bytes: row.memory_peak.map(|peak| peak as u64),
    };
    let Some(pid) = row.pid.filter(|_| alive) else {
        return recorded;
    };
    let pids = match row.kind {
        Kind::Hook => crate::proctree::tree_pids(pid, row.cgroup.as_deref().map(Path::new)),
        _ => vec![pid],
    };
    let ticks = procfs::ticks_per_second().max(1);
    let (mut cpu_ticks, mut resident) = (0u64, 0u64);
    for pid in pids {
        if let Some(stat) = crate::procstat::read(pid) {
            cpu_ticks += stat.cpu_ticks;
        }
        resident += crate::proctree::resident_bytes(pid).unwrap_or(0);
    }
    Usage {
        cpu_ms: Some((cpu_ticks * 1000 / ticks) as i64),
        memory_bytes: Some(resident),
    }
}
