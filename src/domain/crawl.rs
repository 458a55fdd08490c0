//! The work's entities as abxd keeps them: a crawl, its snapshots, the result of each hook run,
//! and the rules that judge a crawl as a whole (what an operator may do to it now).
//!
//! Invariant: plain values — what the store reads back, field for field — with rules that
//! decide from the values alone; reading and writing them is the store's.

use super::rules::{CrawlRules, Limit};
use super::work::{CrawlOutcome, ResultStatus, WorkStatus};
use serde::Serialize;

/// How many of a crawl's snapshots are in each state, and of its results in each status.
pub type WorkCounts = (Vec<(WorkStatus, u64)>, Vec<(ResultStatus, u64)>);

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Crawl {
    pub id: i64,
    /// Its UUIDv7, as abx-dl and ArchiveBox know it.
    pub uuid: Option<String>,
    pub urls: Vec<String>,
    pub max_depth: u32,
    pub plugins: Option<Vec<String>>,
    pub status: WorkStatus,
    pub outcome: Option<CrawlOutcome>,
    pub retry_at: i64,
    pub owner_id: Option<i64>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub sealed_at: Option<i64>,
    pub restarts: u32,
    /// When an operator paused it (`abxctl pause`), while it is paused.
    pub paused_at: Option<i64>,
    /// Its rules: allow/deny lists, scope, limits (given at `add`, over `[crawl]`'s defaults).
    pub rules: CrawlRules,
    /// The limit that turned URLs away or ended it, if one did.
    pub ended_by: Option<Limit>,
    /// The schedule whose occurrence it is (`abxctl schedule`), if one.
    pub schedule_id: Option<i64>,
    /// It was given what an operator imported (`abxctl add --from FILE`), which its first
    /// snapshot parses into its seeds (the store's `crawls().crawl_input`).
    #[serde(skip)]
    pub has_input: bool,
    /// Where its import is, when its parser hooks read it themselves (a schedule's `--from`).
    #[serde(skip)]
    pub import_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    pub id: i64,
    /// Its UUIDv7, as hooks (`--snapshot-id`) and ArchiveBox know it.
    pub uuid: Option<String>,
    pub crawl_id: i64,
    pub url: String,
    pub depth: u32,
    pub status: WorkStatus,
    pub retry_at: i64,
    pub owner_id: Option<i64>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub sealed_at: Option<i64>,
    pub restarts: u32,
    /// The limit that ended it (`--snapshot-max-size`), if one did.
    pub ended_by: Option<Limit>,
}

/// The outcome of one hook for one snapshot (or crawl).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookResult {
    pub id: i64,
    /// Its UUIDv7, as `index.jsonl` and ArchiveBox know it.
    pub uuid: Option<String>,
    pub crawl_id: i64,
    pub snapshot_id: Option<i64>,
    pub plugin: String,
    pub hook: String,
    pub status: ResultStatus,
    pub process_id: Option<i64>,
    pub attempts: u32,
    pub output: Option<String>,
    pub output_files: Vec<String>,
    pub output_size: u64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
    /// A background hook's success as a session: it ran until its scope (or a hook that waited
    /// for it) stopped it (see `hooks::sessions`).
    #[serde(skip)]
    pub session: bool,
}

impl HookResult {
    pub fn is_final(&self) -> bool {
        self.status.is_final()
    }
}

impl Crawl {
    /// Why this crawl cannot be cancelled, if it cannot: only an unsealed crawl can.
    pub fn refuses_cancel(&self) -> Option<String> {
        (self.status == WorkStatus::Sealed).then(|| {
            let outcome = self.outcome.map(|o| o.to_string()).unwrap_or_default();
            format!("crawl {} is sealed already ({outcome})", self.id)
        })
    }
}

/// What became of a URL given to the store's `crawls().add_snapshot_within`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// A new snapshot, with this id.
    New(i64),
    /// The crawl has it already.
    Known,
    /// The crawl has its `max_urls` snapshots: not added.
    Full,
    /// `--only-new`: another crawl archived it already.
    Archived,
}
