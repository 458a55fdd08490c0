//! Listings that choose: the crawls in one state, newest first up to a limit (`abxctl crawls
//! --status S --limit N`), a page of a crawl's snapshots (`abxctl show --page`, the web view),
//! every snapshot of one URL across crawls (`abxctl find URL`), and the counts `abxctl status`
//! shows.
//!
//! Invariant: each reads what it shows and no more — a limit is the query's, not a cut of
//! every row read; a URL is found through its index (`snapshots_by_url`), a crawl's snapshots
//! through theirs (`snapshots_by_crawl`), so a page costs the page, not the crawl.

use crate::domain::{Crawl, CrawlState, PageStart, Snapshot, SnapshotState, WorkTally};
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

/// A page of a crawl's snapshots, and whether more follow it.
#[derive(Debug, Clone, Default)]
pub struct SnapshotPage {
    pub snapshots: Vec<Snapshot>,
    pub more: bool,
}

/// The condition on `snapshots` of those in `state`.
fn snapshot_condition(state: Option<SnapshotState>) -> &'static str {
    match state {
        None => "1 = 1",
        Some(SnapshotState::Queued) => "status = 'queued'",
        Some(SnapshotState::Started) => "status = 'started'",
        Some(SnapshotState::Sealed) => "status = 'sealed'",
        Some(SnapshotState::Failed) => {
            "EXISTS (SELECT 1 FROM results r WHERE r.snapshot_id = snapshots.id \
             AND r.status = 'failed')"
        }
    }
}

impl Crawls<'_> {
    /// A page of crawl `crawl_id`'s snapshots in `state` (every one without), in id order:
    /// at most `limit`, from `start` (one more is read, to know whether more follow).
    pub fn snapshot_page(
        &self,
        crawl_id: i64,
        state: Option<SnapshotState>,
        start: PageStart,
        limit: u32,
    ) -> Result<SnapshotPage, StoreError> {
        let (after, skip) = match start {
            PageStart::After(id) => (id, 0),
            PageStart::Skip(n) => (0, i64::try_from(n).unwrap_or(i64::MAX)),
        };
        let sql = format!(
            "SELECT {} FROM snapshots WHERE crawl_id = ?1 AND id > ?2 AND {} \
             ORDER BY id LIMIT ?3 OFFSET ?4",
            SnapshotColumn::LIST,
            snapshot_condition(state)
        );
        let db = self.store.db();
        let page = args![crawl_id, after, i64::from(limit) + 1, skip];
        let mut snapshots = db.query_map(&sql, &page, snapshot_from_row)?;
        let more = snapshots.len() > limit as usize;
        snapshots.truncate(limit as usize);
        Ok(SnapshotPage { snapshots, more })
    }

    /// The last `count` snapshots of crawl `crawl_id`, in id order.
    pub fn last_snapshots(&self, crawl_id: i64, count: u32) -> Result<Vec<Snapshot>, StoreError> {
        let sql = format!(
            "SELECT {} FROM snapshots WHERE crawl_id = ?1 ORDER BY id DESC LIMIT ?2",
            SnapshotColumn::LIST
        );
        let db = self.store.db();
        let mut last = db.query_map(&sql, &args![crawl_id, i64::from(count)], snapshot_from_row)?;
        last.reverse();
        Ok(last)
    }

    /// How many snapshots crawl `crawl_id` has in `state` (every one without).
    pub fn snapshot_count(
        &self,
        crawl_id: i64,
        state: Option<SnapshotState>,
    ) -> Result<u64, StoreError> {
        let sql = format!(
            "SELECT count(*) FROM snapshots WHERE crawl_id = ?1 AND {}",
            snapshot_condition(state)
        );
        let n: i64 = self.store.db().query_one(&sql, &args![crawl_id])?.get(0)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Up to `limit` of crawl `crawl_id`'s snapshots not sealed yet, by id.
    pub fn open_snapshots(&self, crawl_id: i64, limit: usize) -> Result<Vec<i64>, StoreError> {
        Ok(self.store.db().query_map(
            "SELECT id FROM snapshots WHERE crawl_id = ?1 AND status != 'sealed' \
             ORDER BY id LIMIT ?2",
            &args![crawl_id, limit as i64],
            |row| row.get(0),
        )?)
    }

    /// Whether every snapshot of crawl `crawl_id` is sealed (read from those that are not:
    /// what a crawl worker asks at each turn costs what is left, not the crawl).
    pub fn all_sealed(&self, crawl_id: i64) -> Result<bool, StoreError> {
        let open: i64 = (self.store.db())
            .query_one(
                "SELECT count(*) FROM (SELECT 1 FROM snapshots \
                 WHERE crawl_id = ?1 AND status != 'sealed' LIMIT 1) AS open",
                &args![crawl_id],
            )?
            .get(0)?;
        Ok(open == 0)
    }

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
