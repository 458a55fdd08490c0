//! The work's entities as abxd keeps them: a crawl, its snapshots, the result of each hook run,
//! and the rules that judge a crawl as a whole (what an operator may do to it now).
//!
//! Invariant: plain values — what the store reads back, field for field — with rules that
//! decide from the values alone; reading and writing them is the store's.

use super::rules::{CrawlRules, Limit};
use super::spec::CrawlOptions;
use super::work::{CrawlOutcome, ResultStatus, RetryScope, WorkStatus};
use serde::Serialize;

/// What `abxctl status` counts: the work waiting, running and paused now, and what sealed and
/// failed since a moment (the last day).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct WorkTally {
    pub crawls_queued: u64,
    pub crawls_running: u64,
    pub crawls_paused: u64,
    pub snapshots_queued: u64,
    pub snapshots_running: u64,
    pub crawls_sealed: u64,
    pub snapshots_sealed: u64,
    pub results_failed: u64,
}

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
    /// Its tags, persona and parser (`--tag`, `--persona`, `--parser`).
    #[serde(flatten)]
    pub options: CrawlOptions,
    /// How many seeds its import was parsed into (its depth-0 snapshots but the input's): an
    /// import's seeds are not in `urls`, which says what the operator gave.
    pub imported_seeds: u64,
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
    /// The site key politeness counts it under (`url_rule::host_key`; `None`: not keyed yet).
    pub host_key: Option<String>,
    /// Times it was put back because its site said 429 or 503.
    pub backoffs: u32,
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

    /// A result of plugin `plugin` (its hook `on_Snapshot__10_PLUGIN.sh`) for snapshot
    /// `snapshot_id` of crawl 1, as `status` says, nothing else of it known: what the tests of
    /// code that reads results start from.
    #[cfg(test)]
    pub fn example(id: i64, snapshot_id: i64, plugin: &str, status: ResultStatus) -> HookResult {
        HookResult {
            id,
            uuid: None,
            crawl_id: 1,
            snapshot_id: Some(snapshot_id),
            plugin: plugin.into(),
            hook: format!("on_Snapshot__10_{plugin}.sh"),
            status,
            process_id: None,
            attempts: 1,
            output: None,
            output_files: Vec::new(),
            output_size: 0,
            started_at: None,
            ended_at: None,
            session: false,
        }
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
        if self.only_new() && archived_elsewhere()? {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn crawl(status: WorkStatus, outcome: Option<CrawlOutcome>) -> Crawl {
        Crawl {
            id: 7,
            uuid: None,
            urls: vec!["http://a.test/".into()],
            max_depth: 0,
            plugins: None,
            status,
            outcome,
            retry_at: 0,
            owner_id: None,
            created_at: 0,
            started_at: None,
            sealed_at: None,
            restarts: 0,
            paused_at: None,
            rules: CrawlRules::default(),
            ended_by: None,
            schedule_id: None,
            has_input: false,
            import_url: None,
            options: Default::default(),
            imported_seeds: 0,
        }
    }

    /// Each question is asked only when the ones before it let the URL in.
    #[test]
    fn a_url_is_turned_away_when_known_at_max_urls_or_archived_elsewhere_with_only_new() {
        let never = || -> Result<u64, ()> { panic!("asked") };
        let never_archived = || -> Result<bool, ()> { panic!("asked") };
        let rules = CrawlRules {
            max_urls: Some(2),
            only_new: Some(true),
            ..CrawlRules::default()
        };
        assert_eq!(
            rules.turns_away(true, never, never_archived),
            Ok(Some(Added::Known))
        );
        assert_eq!(
            rules.turns_away(false, || Ok::<_, ()>(2), never_archived),
            Ok(Some(Added::Full))
        );
        assert_eq!(
            rules.turns_away(false, || Ok::<_, ()>(1), || Ok(true)),
            Ok(Some(Added::Archived))
        );
        assert_eq!(
            rules.turns_away(false, || Ok::<_, ()>(1), || Ok(false)),
            Ok(None)
        );
        let no_limits = CrawlRules::default();
        assert_eq!(no_limits.turns_away(false, never, never_archived), Ok(None));
    }

    #[test]
    fn only_a_sealed_crawl_is_retried_and_a_cancelled_one_reopens_even_with_nothing_failed() {
        let running = crawl(WorkStatus::Started, None);
        assert!(running.refuses_retry().unwrap().contains("not sealed"));
        let done = crawl(WorkStatus::Sealed, Some(CrawlOutcome::Finished));
        assert_eq!(done.refuses_retry(), None);
        assert!(!done.retry_reopens(0, None));
        assert!(done.retry_reopens(3, None));
        let cancelled = crawl(WorkStatus::Sealed, Some(CrawlOutcome::Cancelled));
        assert!(cancelled.retry_reopens(0, None));
        assert!(!cancelled.retry_reopens(0, Some("on_Snapshot__10_x.sh")));
        let said = done.nothing_to_retry(RetryScope::Failed, Some("h.sh"));
        assert_eq!(
            said,
            "nothing to retry in crawl 7: no failed or cancelled result of hook h.sh"
        );
    }

    #[test]
    fn a_crawl_is_paused_once_resumed_once_and_never_once_sealed() {
        let at = |ms: i64| format!("t{ms}");
        let mut queued = crawl(WorkStatus::Queued, None);
        assert_eq!(queued.refuses_pause(true, at), None);
        assert_eq!(
            queued.refuses_pause(false, at).unwrap(),
            "crawl 7 is not paused"
        );
        queued.paused_at = Some(5);
        assert_eq!(
            queued.refuses_pause(true, at).unwrap(),
            "crawl 7 is paused already (since t5)"
        );
        assert_eq!(queued.refuses_pause(false, at), None);
        let sealed = crawl(WorkStatus::Sealed, Some(CrawlOutcome::Cancelled));
        assert!(sealed.refuses_pause(false, at).unwrap().contains("sealed"));
        assert!(sealed.refuses_cancel().unwrap().contains("sealed already"));
    }
}
