//! Listings that choose: the crawls in one state, newest first up to a limit (`abxctl crawls
//! --status S --limit N`), every snapshot of one URL across crawls (`abxctl find URL`), and the
//! counts `abxctl status` shows.
//!
//! Invariant: each reads what it shows and no more — a limit is the query's, not a cut of
//! every row read; a URL is found through its index (`snapshots_by_url`).

use crate::domain::{Crawl, CrawlState, Snapshot, WorkTally};
use crate::store::engine::sql::{args, Value};
use crate::store::work::{crawl_from_row, snapshot_from_row, CrawlColumn, SnapshotColumn};
use crate::store::{Crawls, StoreError};

/// The condition on `crawls` of the crawls in `state`.
fn condition(state: CrawlState) -> &'static str {
    match state {
        CrawlState::Queued => "status = 'queued' AND paused_at IS NULL",
        CrawlState::Started => "status = 'started' AND paused_at IS NULL",
        CrawlState::Paused => "status != 'sealed' AND paused_at IS NOT NULL",
        CrawlState::Sealed => "status = 'sealed'",
        CrawlState::Finished => "status = 'sealed' AND outcome = 'finished'",
        CrawlState::Cancelled => "status = 'sealed' AND outcome = 'cancelled'",
        CrawlState::Failed => "status = 'sealed' AND outcome = 'failed'",
    }
}

impl Crawls<'_> {
    /// The crawls in `state` (every one without), oldest first — the newest `limit` of them
    /// with one.
    pub fn listed(
        &self,
        state: Option<CrawlState>,
        limit: Option<u32>,
    ) -> Result<Vec<Crawl>, StoreError> {
        let filter = state.map_or("1 = 1", condition);
        let sql = format!(
            "SELECT {} FROM crawls WHERE {filter} ORDER BY id DESC LIMIT ?1",
            CrawlColumn::LIST
        );
        let limit = limit.map_or(i64::MAX, i64::from);
        let mut crawls = (self.store.db()).query_map(&sql, &args![limit], crawl_from_row)?;
        crawls.reverse();
        Ok(crawls)
    }

    /// Every snapshot of `url`, in any crawl, oldest first.
    pub fn snapshots_of_url(&self, url: &str) -> Result<Vec<Snapshot>, StoreError> {
        let sql = format!(
            "SELECT {} FROM snapshots WHERE url = ?1 ORDER BY id",
            SnapshotColumn::LIST
        );
        let url: Value = url.into();
        Ok(self.store.db().query_map(&sql, &[url], snapshot_from_row)?)
    }

    /// How much work waits, runs and is paused now, and what sealed and failed since `since`
    /// (unix ms).
    pub fn tally(&self, since: i64) -> Result<WorkTally, StoreError> {
        let db = self.store.db();
        let count = |sql: &str, args: &[Value]| -> Result<u64, StoreError> {
            let n: i64 = db.query_one(sql, args)?.get(0)?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        let crawls = |state| format!("SELECT count(*) FROM crawls WHERE {}", condition(state));
        Ok(WorkTally {
            crawls_queued: count(&crawls(CrawlState::Queued), &[])?,
            crawls_running: count(&crawls(CrawlState::Started), &[])?,
            crawls_paused: count(&crawls(CrawlState::Paused), &[])?,
            snapshots_queued: count(
                "SELECT count(*) FROM snapshots WHERE status = 'queued'",
                &[],
            )?,
            snapshots_running: count(
                "SELECT count(*) FROM snapshots WHERE status = 'started'",
                &[],
            )?,
            crawls_sealed: count(
                "SELECT count(*) FROM crawls WHERE status = 'sealed' AND sealed_at >= ?1",
                &args![since],
            )?,
            snapshots_sealed: count(
                "SELECT count(*) FROM snapshots WHERE sealed_at IS NOT NULL AND sealed_at >= ?1",
                &args![since],
            )?,
            results_failed: count(
                "SELECT count(*) FROM results WHERE status = 'failed' AND ended_at >= ?1",
                &args![since],
            )?,
        })
    }
}
