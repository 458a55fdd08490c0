//! The work's entities as abxd keeps them: a crawl, its snapshots, the result of each hook run,
//! and the rules that judge a crawl as a whole (what an operator may do to it now).
//!
//! Invariant: plain values — what the store reads back, field for field — with rules that
//! decide from the values alone; reading and writing them is the store's.

use super::rules::{CrawlRules, Limit};
use super::work::{CrawlOutcome, ResultStatus, RetryScope, WorkStatus};
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

    /// Why this crawl cannot be retried now, if it cannot: only a sealed crawl can.
    pub fn refuses_retry(&self) -> Option<String> {
        (self.status != WorkStatus::Sealed).then(|| {
            format!(
                "crawl {} is {} (not sealed): retry it once it is sealed, or cancel it first",
                self.id, self.status
            )
        })
    }

    /// Whether a retry that queued `retried` results again (of `hook` only, if given) reopens
    /// this crawl: when it queued any — or, for a cancelled crawl retried whole, to run the
    /// snapshots the cancel sealed before they ran.
    pub fn retry_reopens(&self, retried: u64, hook: Option<&str>) -> bool {
        retried > 0 || (self.outcome == Some(CrawlOutcome::Cancelled) && hook.is_none())
    }

    /// What a retry that reopened nothing says: which results it looked for.
    pub fn nothing_to_retry(&self, which: RetryScope, hook: Option<&str>) -> String {
        format!(
            "nothing to retry in crawl {}: no {} result{}",
            self.id,
            match which {
                RetryScope::Failed => "failed or cancelled",
                RetryScope::All => "unsuccessful",
            },
            hook.map(|h| format!(" of hook {h}")).unwrap_or_default()
        )
    }

    /// Why this crawl cannot be paused (`paused`) or resumed now, if it cannot: a sealed one
    /// cannot, nor can one be paused twice or resumed when it is not paused. `printable_time`
    /// shows when it was paused.
    pub fn refuses_pause(
        &self,
        paused: bool,
        printable_time: impl Fn(i64) -> String,
    ) -> Option<String> {
        let id = self.id;
        if self.status == WorkStatus::Sealed {
            let outcome = self.outcome.map(|o| o.to_string()).unwrap_or_default();
            return Some(format!("crawl {id} is sealed ({outcome})"));
        }
        match (self.paused_at, paused) {
            (Some(since), true) => Some(format!(
                "crawl {id} is paused already (since {})",
                printable_time(since)
            )),
            (None, false) => Some(format!("crawl {id} is not paused")),
            _ => None,
        }
    }
}

impl CrawlRules {
    /// Whether a crawl under these rules takes a URL it was given, from what its queue holds:
    /// not if it has the URL (`known`) or its `max_urls` snapshots already (`snapshots`), nor —
    /// with `--only-new` — if another crawl archived it (`archived_elsewhere`). Each question is
    /// asked only when the answers before it let the URL in. `None`: it takes it.
    pub fn turns_away<E>(
        &self,
        known: bool,
        snapshots: impl FnOnce() -> Result<u64, E>,
        archived_elsewhere: impl FnOnce() -> Result<bool, E>,
    ) -> Result<Option<Added>, E> {
        if known {
            return Ok(Some(Added::Known));
        }
        if let Some(max) = self.limit(Limit::MaxUrls) {
            if snapshots()? >= max {
                return Ok(Some(Added::Full));
            }
        }
        if self.only_new && archived_elsewhere()? {
            return Ok(Some(Added::Archived));
        }
        Ok(None)
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
