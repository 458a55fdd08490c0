//! The work queue: crawls, their snapshots, and the result of each hook run.
//!
//! Invariants: a crawl or snapshot is taken by exactly one claimer — a claim is one atomic
//! compare-and-set (inside `BEGIN IMMEDIATE`) that moves `retry_at` into the future; a future
//! `retry_at` means owned and is never claimed by anyone else; only the owner renews it. A URL
//! appears at most once per crawl. A result that succeeded is never reset.

mod actions;
mod admission;
mod binaries;
mod exports;
mod fence;
mod hosts;
mod sites;
pub use sites::HostState;
mod inputs;
mod limits;
mod listing;
pub use listing::SnapshotPage;
mod queue;
mod refused;
mod results;
mod schedules;
mod served;
mod shares;
pub use hosts::SnapshotClaim;
pub use shares::Budget;

pub use binaries::Binary;
pub use exports::Export;
pub use refused::RefusedUrls;
pub use schedules::{Fired, NewSchedule, Schedule};
pub use served::{HeldCrawl, RunningHook, ServedSnapshot};

pub use crate::domain::{Added, Crawl, HookResult, Snapshot, WorkCounts};

use crate::domain::{CrawlRules, CrawlSpec, Queue};
use crate::store::engine::sql::{args, column_text, columns, Column, Row, SqlError};
use crate::store::Crawls;
use crate::store::{now_ms, StoreError};
use std::time::Duration;

/// A crawl to enqueue: its spec, and what links it to where it came from.
pub(in crate::store) struct NewCrawl<'a> {
    pub spec: &'a CrawlSpec,
    /// The schedule whose occurrence it is, if one.
    pub schedule_id: Option<i64>,
    /// The `file://` URL of what to import, which the parser hooks read themselves (a
    /// schedule's); an input given whole is the spec's (see [`Crawl::has_input`]).
    pub import_url: Option<&'a str>,
}

/// Inserts `crawl`, due at `due` (queue clock), in the transaction `tx` — with its export into
/// the ArchiveBox collection `export_to` names (its data dir, and the user its snapshots are
/// filed under), if one does. Returns its id.
pub(in crate::store) fn insert_crawl(
    tx: &crate::store::engine::sql::Db,
    crawl: &NewCrawl<'_>,
    due: i64,
    export_to: Option<(&std::path::Path, &str)>,
) -> Result<i64, StoreError> {
    let spec = crawl.spec;
    let urls = serde_json::to_string(&spec.urls).expect("strings serialize");
    let plugins =
        (spec.plugins.as_ref()).map(|p| serde_json::to_string(p).expect("strings serialize"));
    let rules = serde_json::to_string(&spec.rules).expect("rules serialize");
    let options = serde_json::to_string(&spec.options).expect("options serialize");
    let env = serde_json::to_string(&spec.env).expect("strings serialize");
    let now = now_ms();
    // (`--index-only`: recorded paused, run once resumed.)
    let paused_at = spec.index_only.then_some(now);
    let id: i64 = tx
        .query_one(
            "INSERT INTO crawls (urls, max_depth, plugins, status, retry_at, created_at, \
             rules, uuid, schedule_id, input, import_url, options, paused_at, env, priority) \
             VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) \
             RETURNING id",
            &args![
                urls,
                spec.depth,
                plugins,
                due,
                now,
                rules,
                crate::uuid7::new(),
                crawl.schedule_id,
                spec.input.as_deref(),
                crawl.import_url,
                options,
                paused_at,
                env,
                spec.rules.priority.unwrap_or(0)
            ],
        )?
        .get(0)?;
    if let Some(served) = &spec.options.archivebox {
        let redo = !served.redo.is_empty();
        tx.execute(
            "INSERT INTO archivebox_crawls (archivebox_id, crawl_id, owner, redo) \
             VALUES (?1, ?2, ?3, ?4)",
            &args![
                served.id.as_str(),
                id,
                served.user.as_str(),
                i64::from(redo)
            ],
        )?;
        // (A redo's seeds are ArchiveBox's Snapshots: made here with their identity, its worker
        // finds them known.)
        for snapshot in &served.redo {
            tx.execute(
                "INSERT INTO snapshots (crawl_id, url, depth, status, retry_at, created_at, uuid, \
                 host_key) VALUES (?1, ?2, 0, 'queued', ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
                &args![
                    id,
                    snapshot.url.as_str(),
                    due,
                    snapshot.bookmarked_at,
                    snapshot.uuid.as_str(),
                    crate::url_rule::host_key(&snapshot.url)
                ],
            )?;
        }
    }
    if let Some((dir, user)) = export_to {
        tx.execute(
            "INSERT INTO exports (crawl_id, target, owner, status, updated_at) \
             VALUES (?1, ?2, ?3, 'queued', ?4)",
            &args![id, dir.display().to_string(), user, now],
        )?;
    }
    Ok(id)
}

/// The table of `queue`'s rows.
pub(in crate::store) fn table(queue: Queue) -> &'static str {
    match queue {
        Queue::Crawls => "crawls",
        Queue::Snapshots => "snapshots",
    }
}

pub(in crate::store) fn json_column<T: serde::de::DeserializeOwned>(
    row: &Row,
    column: impl Column,
) -> Result<T, SqlError> {
    let text: String = row.get(column)?;
    serde_json::from_str(&text).map_err(|e| SqlError::Type {
        column: column_text(column),
        expected: "JSON",
        found: format!("text that is not ({e})"),
    })
}

columns! {
    /// A crawl's columns, as [`crawl_from_row`] reads them.
    pub(in crate::store) enum CrawlColumn {
        id, urls, max_depth, plugins, status, outcome, retry_at, owner_id, created_at, started_at,
        sealed_at, restarts, paused_at, rules, ended_by, uuid, schedule_id,
        has_input = "CASE WHEN input IS NULL AND import_url IS NULL THEN 0 ELSE 1 END",
        import_url, options, imported_seeds,
    }
}

/// Reads a row selected with [`CrawlColumn::LIST`].
pub(in crate::store) fn crawl_from_row(row: &Row) -> Result<Crawl, SqlError> {
    use CrawlColumn as C;
    let plugins: Option<String> = row.get(C::plugins)?;
    Ok(Crawl {
        id: row.get(C::id)?,
        urls: json_column(row, C::urls)?,
        max_depth: row.get(C::max_depth)?,
        plugins: plugins.and_then(|p| serde_json::from_str(&p).ok()),
        status: row.get(C::status)?,
        outcome: row.get(C::outcome)?,
        retry_at: row.get(C::retry_at)?,
        owner_id: row.get(C::owner_id)?,
        created_at: row.get(C::created_at)?,
        started_at: row.get(C::started_at)?,
        sealed_at: row.get(C::sealed_at)?,
        restarts: row.get(C::restarts)?,
        paused_at: row.get(C::paused_at)?,
        rules: json_column(row, C::rules)?,
        ended_by: row.get(C::ended_by)?,
        uuid: row.get(C::uuid)?,
        schedule_id: row.get(C::schedule_id)?,
        has_input: row.get(C::has_input)?,
        import_url: row.get(C::import_url)?,
        options: json_column(row, C::options)?,
        imported_seeds: row.get::<i64>(C::imported_seeds)?.max(0) as u64,
    })
}

columns! {
    /// A snapshot's columns, as [`snapshot_from_row`] reads them.
    pub(in crate::store) enum SnapshotColumn {
        id, crawl_id, url, depth, status, retry_at, owner_id, created_at, started_at, sealed_at,
        restarts, ended_by, uuid, host_key, backoffs,
    }
}

/// Reads a row selected with [`SnapshotColumn::LIST`].
pub(in crate::store) fn snapshot_from_row(row: &Row) -> Result<Snapshot, SqlError> {
    use SnapshotColumn as C;
    Ok(Snapshot {
        id: row.get(C::id)?,
        crawl_id: row.get(C::crawl_id)?,
        url: row.get(C::url)?,
        depth: row.get(C::depth)?,
        status: row.get(C::status)?,
        retry_at: row.get(C::retry_at)?,
        owner_id: row.get(C::owner_id)?,
        created_at: row.get(C::created_at)?,
        started_at: row.get(C::started_at)?,
        sealed_at: row.get(C::sealed_at)?,
        restarts: row.get(C::restarts)?,
        ended_by: row.get(C::ended_by)?,
        uuid: row.get(C::uuid)?,
        host_key: row.get(C::host_key)?,
        backoffs: row.get(C::backoffs)?,
    })
}

columns! {
    /// A hook result's columns, as [`result_from_row`] reads them.
    pub(in crate::store) enum ResultColumn {
        id, crawl_id, snapshot_id, plugin, hook, status, process_id, attempts, output,
        output_files, output_size, started_at, ended_at, uuid, session,
    }
}

/// Reads a row selected with [`ResultColumn::LIST`].
pub(in crate::store) fn result_from_row(row: &Row) -> Result<HookResult, SqlError> {
    use ResultColumn as C;
    Ok(HookResult {
        id: row.get(C::id)?,
        crawl_id: row.get(C::crawl_id)?,
        snapshot_id: row.get(C::snapshot_id)?,
        plugin: row.get(C::plugin)?,
        hook: row.get(C::hook)?,
        status: row.get(C::status)?,
        process_id: row.get(C::process_id)?,
        attempts: row.get(C::attempts)?,
        output: row.get(C::output)?,
        output_files: json_column(row, C::output_files)?,
        output_size: row.get(C::output_size)?,
        started_at: row.get(C::started_at)?,
        ended_at: row.get(C::ended_at)?,
        uuid: row.get(C::uuid)?,
        session: row.get(C::session)?,
    })
}

pub(in crate::store) fn millis(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

impl Crawls<'_> {
    /// Enqueues the crawl `spec` asks for (judged and merged with `[crawl]`'s defaults by the
    /// caller: `verbs::crawl`), due now — with, in the same transaction, its export into the
    /// ArchiveBox collection `export_to` names (its data dir, and the user its snapshots are
    /// filed under), if one does. A spec with an input is parsed by its first snapshot into its
    /// seeds (see `worker::input`).
    pub fn add(
        &self,
        spec: &CrawlSpec,
        export_to: Option<(&std::path::Path, &str)>,
    ) -> Result<i64, StoreError> {
        let due = self.store.queue_now();
        let crawl = NewCrawl {
            spec,
            schedule_id: None,
            import_url: None,
        };
        self.store.commits.durably(|| {
            self.store
                .write(|tx| insert_crawl(tx, &crawl, due, export_to))
        })
    }

    pub fn get(&self, id: i64) -> Result<Option<Crawl>, StoreError> {
        let sql = format!("SELECT {} FROM crawls WHERE id = ?1", CrawlColumn::LIST);
        let row = self.store.db().query_opt(&sql, &args![id])?;
        Ok(row.as_ref().map(crawl_from_row).transpose()?)
    }

    /// The queued crawls that are due now and not paused: those a claim would take next.
    pub fn due_crawls(&self) -> Result<Vec<Crawl>, StoreError> {
        let sql = format!(
            "SELECT {} FROM crawls WHERE status = 'queued' AND paused_at IS NULL \
             AND retry_at <= ?1 ORDER BY id",
            CrawlColumn::LIST
        );
        let now = self.store.queue_now();
        Ok(self
            .store
            .db()
            .query_map(&sql, &args![now], crawl_from_row)?)
    }

    pub fn all(&self) -> Result<Vec<Crawl>, StoreError> {
        let sql = format!("SELECT {} FROM crawls ORDER BY id", CrawlColumn::LIST);
        Ok(self.store.db().query_map(&sql, &[], crawl_from_row)?)
    }

    /// The newest `limit` crawls, newest first.
    pub fn recent_crawls(&self, limit: u32) -> Result<Vec<Crawl>, StoreError> {
        let sql = format!(
            "SELECT {} FROM crawls ORDER BY id DESC LIMIT ?1",
            CrawlColumn::LIST
        );
        Ok(self
            .store
            .db()
            .query_map(&sql, &args![limit], crawl_from_row)?)
    }

    /// How many snapshots of crawl `crawl_id` are in each state, and how many results in each
    /// status.
    pub fn work_counts(&self, crawl_id: i64) -> Result<WorkCounts, StoreError> {
        // (Kept as rows change, by the triggers of migration 32: a read of a few dozen rows,
        // however large the crawl.)
        let rows = self.store.db().query(
            "SELECT kind, status, CAST(sum(count) AS BIGINT) FROM crawl_tallies \
             WHERE crawl_id = ?1 GROUP BY kind, status HAVING sum(count) > 0 ORDER BY kind, status",
            &args![crawl_id],
        )?;
        let (mut snapshots, mut results) = (Vec::new(), Vec::new());
        for row in &rows {
            let (kind, status): (String, String) = (row.get(0)?, row.get(1)?);
            let count: i64 = row.get(2)?;
            let count = count.max(0) as u64;
            match kind.as_str() {
                "snapshot" => snapshots.extend(status.parse().ok().map(|s| (s, count))),
                _ => results.extend(status.parse().ok().map(|s| (s, count))),
            }
        }
        Ok((snapshots, results))
    }

    /// Adds `url` to the crawl at `depth` unless the crawl has it already. Returns the new id.
    pub fn add_snapshot(
        &self,
        crawl_id: i64,
        url: &str,
        depth: u32,
    ) -> Result<Option<i64>, StoreError> {
        Ok(
            match self.add_snapshot_within(crawl_id, url, depth, &CrawlRules::default())? {
                Added::New(id) => Some(id),
                Added::Known | Added::Full | Added::Archived => None,
            },
        )
    }

    pub fn snapshot(&self, id: i64) -> Result<Option<Snapshot>, StoreError> {
        let sql = format!(
            "SELECT {} FROM snapshots WHERE id = ?1",
            SnapshotColumn::LIST
        );
        let row = self.store.db().query_opt(&sql, &args![id])?;
        Ok(row.as_ref().map(snapshot_from_row).transpose()?)
    }

    pub fn snapshots(&self, crawl_id: i64) -> Result<Vec<Snapshot>, StoreError> {
        let sql = format!(
            "SELECT {} FROM snapshots WHERE crawl_id = ?1 ORDER BY id",
            SnapshotColumn::LIST
        );
        Ok(self
            .store
            .db()
            .query_map(&sql, &args![crawl_id], snapshot_from_row)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// Each entity's row is read by the names of its columns: each name its enum gives is the
    /// column the database returns at that place (or the expression it names).
    #[test]
    fn rows_are_read_by_the_names_of_their_columns() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("db")).unwrap();
        let names = |list: &str, table: &str| -> Vec<String> {
            let sql = format!("SELECT {list} FROM {table}");
            let statement = store.sqlite().unwrap().prepare(&sql).unwrap();
            statement
                .column_names()
                .into_iter()
                .map(String::from)
                .collect()
        };
        let expected =
            |columns: &[&str]| -> Vec<String> { columns.iter().map(|c| c.to_string()).collect() };
        let crawl: Vec<&str> = CrawlColumn::ALL.iter().map(|c| c.name()).collect();
        let mut found = names(CrawlColumn::LIST, "crawls");
        let has_input = CrawlColumn::has_input.index();
        assert!(found[has_input].starts_with("CASE WHEN input IS NULL"));
        found[has_input] = "has_input".into();
        assert_eq!(found, expected(&crawl));
        let snapshot: Vec<&str> = SnapshotColumn::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(
            names(SnapshotColumn::LIST, "snapshots"),
            expected(&snapshot)
        );
        let result: Vec<&str> = ResultColumn::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names(ResultColumn::LIST, "results"), expected(&result));
    }
    use crate::domain::Lease;

    #[test]
    fn a_future_retry_at_is_never_claimed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let id = store
            .crawls()
            .add(
                &crate::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 0),
                None,
            )
            .unwrap();
        let lease = Duration::from_secs(60);
        let claim = store
            .queue()
            .claim(Queue::Crawls, None, lease, None)
            .unwrap()
            .unwrap();
        assert_eq!(claim.id, id);
        assert_eq!(
            store
                .queue()
                .claim(Queue::Crawls, None, lease, None)
                .unwrap(),
            None
        );
        let later = store.queue_now() + 60_000;
        assert!(store.queue().requeue(claim, later).unwrap());
        assert_eq!(
            store
                .queue()
                .claim(Queue::Crawls, None, lease, None)
                .unwrap(),
            None,
            "backed off"
        );
        assert!(
            !store.queue().requeue(claim, 0).unwrap(),
            "put back already"
        );
        assert_eq!(
            store
                .queue()
                .claim(Queue::Crawls, None, lease, None)
                .unwrap(),
            None,
            "not started"
        );
    }

    #[test]
    fn only_the_owner_renews_and_urls_are_unique_per_crawl() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let crawl = store
            .crawls()
            .add(
                &crate::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 1),
                None,
            )
            .unwrap();
        assert!(store
            .crawls()
            .add_snapshot(crawl, "http://a/", 0)
            .unwrap()
            .is_some());
        assert!(store
            .crawls()
            .add_snapshot(crawl, "http://a/", 1)
            .unwrap()
            .is_none());
        let claim = store
            .queue()
            .claim(Queue::Snapshots, Some(crawl), Duration::from_secs(1), None)
            .unwrap()
            .unwrap();
        let lease = |owner| Lease {
            claim,
            owner,
            duration: Duration::from_secs(60),
        };
        let owner = store
            .processes()
            .insert(&crate::store::NewProcess {
                parent_id: None,
                kind: crate::store::Kind::SnapshotWorker,
                crawl_id: Some(crawl),
                snapshot_id: Some(claim.id),
                result_id: None,
                argv: vec![],
                cwd: "/".into(),
                timeout_ms: None,
            })
            .unwrap();
        assert!(store.queue().set_owner(claim, owner).unwrap());
        assert_eq!(
            store
                .queue()
                .claim_of(Queue::Snapshots, claim.id, owner)
                .unwrap(),
            Some(claim)
        );
        assert!(store.queue().renew(&lease(owner)).unwrap());
        assert!(!store.queue().renew(&lease(owner + 1)).unwrap());
        let retry_at = store.crawls().snapshot(claim.id).unwrap().unwrap().retry_at;
        assert!(retry_at > store.queue_now() + 30_000);
    }

    #[test]
    fn a_claim_that_changed_hands_renews_puts_back_seals_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let crawl = store
            .crawls()
            .add(
                &crate::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 1),
                None,
            )
            .unwrap();
        store.crawls().add_snapshot(crawl, "http://a/", 0).unwrap();
        let lease = Duration::from_secs(60);
        let first = store
            .queue()
            .claim(Queue::Snapshots, Some(crawl), lease, None)
            .unwrap()
            .unwrap();
        // Taken over: put back by someone else, claimed again.
        let now = store.queue_now();
        assert!(store.queue().requeue(first, now).unwrap());
        let second = store
            .queue()
            .claim(Queue::Snapshots, Some(crawl), lease, None)
            .unwrap()
            .unwrap();
        assert_eq!(second.id, first.id);
        assert!(second.epoch > first.epoch, "each claim moves the epoch on");

        let late = Store::open(&dir.path().join("db")).unwrap();
        late.fence_to(first);
        let stale = Lease {
            claim: first,
            owner: 1,
            duration: lease,
        };
        assert!(!late.queue().renew(&stale).unwrap());
        for refused in [
            late.crawls().add_snapshot(crawl, "http://b/", 1).map(drop),
            late.results()
                .result_for(crawl, Some(first.id), "p", "on_Snapshot__1_p.sh")
                .map(drop),
            late.queue().seal(first).map(drop),
            late.queue().requeue(first, 0).map(drop),
        ] {
            let err = refused.unwrap_err();
            assert!(err.is_fenced(), "{err}");
            assert!(err.to_string().contains("changed hands"), "{err}");
        }
        assert_eq!(
            store.crawls().snapshots(crawl).unwrap().len(),
            1,
            "no snapshot added"
        );
        assert!(store
            .results()
            .snapshot_results(first.id)
            .unwrap()
            .is_empty());

        // The holder seals, and goes on writing under the sealed epoch.
        store.fence_to(second);
        assert!(store.queue().seal(second).unwrap());
        assert!(!store.queue().seal(second).unwrap(), "sealed once");
        store
            .results()
            .result_for(crawl, Some(second.id), "p", "on_Snapshot__1_p.sh")
            .unwrap();
        assert_eq!(store.fence().unwrap().epoch, second.epoch + 1);
    }
}
