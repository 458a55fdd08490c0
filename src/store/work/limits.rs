//! A crawl's limits as the queue keeps them: snapshots added only while the crawl has room
//! (`--max-urls`), which limit ended a crawl or a snapshot, and the seal of work cut short — by
//! a limit, or (a crawl) by the failure of a crawl hook it needs.
//!
//! Invariants: the room check and the insert are one transaction, and the adds to a crawl with a
//! `max_urls` take turns on its row (SQLite's writes are serial; PostgreSQL locks the row), so a
//! crawl never exceeds its `max_urls`, however many hosts add to it at once; a crawl remembers the first limit that turned something away or ended
//! it; work cut short is sealed with its open results `cancelled`, in the same transaction — as
//! `abxctl cancel` leaves them.

use crate::domain::{Added, Claim, CrawlOutcome, CrawlRules, Limit, Queue};
use crate::store::engine::sql::{args, value_rows, Db};
use crate::store::Crawls;
use crate::store::{now_ms, StoreError};

impl Crawls<'_> {
    /// Adds `url` to crawl `crawl_id` at `depth` unless the crawl has it already, has its
    /// `max_urls` snapshots, or — with `only_new` — another crawl archived it already.
    pub fn add_snapshot_within(
        &self,
        crawl_id: i64,
        url: &str,
        depth: u32,
        rules: &CrawlRules,
    ) -> Result<Added, StoreError> {
        let added = self.add_snapshots_within(crawl_id, &[url], depth, None, rules)?;
        Ok(added[0])
    }

    /// [`Self::add_snapshot_within`] of each of `urls`, in one transaction (what became of each,
    /// in their order): a page's links, found by snapshot `parent`, or an import's seeds — a
    /// hundred thousand, each its own transaction, took seconds.
    pub fn add_snapshots_within<U: AsRef<str>>(
        &self,
        crawl_id: i64,
        urls: &[U],
        depth: u32,
        parent: Option<i64>,
        rules: &CrawlRules,
    ) -> Result<Vec<Added>, StoreError> {
        let (due, now) = (self.store.queue_now(), now_ms());
        self.store.write_work(|tx| {
            // (Adds to a crawl with a limit take turns on its row: of two hosts adding at once,
            // the second counts the first's snapshot.)
            if rules.limit(Limit::MaxUrls).is_some() {
                let sql = format!(
                    "SELECT id FROM crawls WHERE id = ?1{}",
                    tx.dialect().for_update()
                );
                tx.query_opt(&sql, &args![crawl_id])?;
            }
            // (Without a limit or `--only-new`, nothing but the crawl's own snapshots turns a URL
            // away, which the insert's conflict rule sees: rows go in many to a statement.)
            if rules.limit(Limit::MaxUrls).is_none() && !rules.only_new() {
                let mut added = Vec::with_capacity(urls.len());
                let mut rest = urls;
                while !rest.is_empty() {
                    let (chunk, after) = rest.split_at(rows_per_insert(rest.len()));
                    added.extend(add_many(tx, crawl_id, chunk, (depth, parent), (due, now))?);
                    rest = after;
                }
                return Ok(added);
            }
            urls.iter()
                .map(|url| {
                    add_one(
                        tx,
                        crawl_id,
                        url.as_ref(),
                        (depth, parent),
                        rules,
                        (due, now),
                    )
                })
                .collect()
        })
    }
    /// Notes that `limit` turned something of crawl `crawl_id` away (unless another limit did
    /// first): the crawl says so once it seals.
    pub fn note_limit(&self, crawl_id: i64, limit: Limit) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "UPDATE crawls SET ended_by = COALESCE(ended_by, ?2) WHERE id = ?1",
                &args![crawl_id, limit],
            )?;
            Ok(())
        })
    }

    /// Seals the crawl or snapshot of `claim`, ended by `limit`: its open results become
    /// `cancelled` (for a crawl: with every snapshot it had not sealed, and its outcome is
    /// `cancelled`), and it names the limit. Returns whether it was sealed (as [`WorkQueue::seal`](crate::store::WorkQueue::seal)).
    pub fn seal_ended_by(&self, claim: Claim, limit: Limit) -> Result<bool, StoreError> {
        self.seal_cut_short(claim, CrawlOutcome::Cancelled, Some(limit))
    }

    /// Seals crawl `claim` as failed (a crawl hook it needs failed): as a limit's end, without a
    /// limit.
    pub fn seal_failed(&self, claim: Claim) -> Result<bool, StoreError> {
        self.seal_cut_short(claim, CrawlOutcome::Failed, None)
    }

    fn seal_cut_short(
        &self,
        claim: Claim,
        outcome: CrawlOutcome,
        limit: Option<Limit>,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        self.store.queue().seal_with(claim, |tx| {
            let (scope, table) = match claim.queue {
                Queue::Crawls => ("crawl_id", "crawls"),
                Queue::Snapshots => ("snapshot_id", "snapshots"),
            };
            tx.execute(
                &format!(
                    "UPDATE results SET status = 'cancelled', ended_at = ?2 \
                     WHERE {scope} = ?1 AND status IN ('queued', 'started')"
                ),
                &args![claim.id, now],
            )?;
            if claim.queue == Queue::Crawls {
                tx.execute(
                    "UPDATE snapshots SET status = 'sealed', sealed_at = ?2 \
                     WHERE crawl_id = ?1 AND status != 'sealed'",
                    &args![claim.id, now],
                )?;
                tx.execute(
                    "UPDATE crawls SET outcome = ?2 WHERE id = ?1",
                    &args![claim.id, outcome],
                )?;
            }
            if let Some(limit) = limit {
                tx.execute(
                    &format!("UPDATE {table} SET ended_by = ?2 WHERE id = ?1"),
                    &args![claim.id, limit],
                )?;
            }
            Ok(())
        })
    }
}

/// One URL of [`Crawls::add_snapshots_within`], inside its transaction `tx`, at `(depth,
/// parent)`; `(due, now)`: the queue's clock and the wall clock the adds share.
fn add_one(
    tx: &Db,
    crawl_id: i64,
    url: &str,
    (depth, parent): (u32, Option<i64>),
    rules: &CrawlRules,
    (due, now): (i64, i64),
) -> Result<Added, StoreError> {
    let known: Option<i64> = tx.query_value(
        "SELECT id FROM snapshots WHERE crawl_id = ?1 AND url = ?2",
        &args![crawl_id, url],
    )?;
    // (Its kept count — migration 32 — not a count of its rows: a 100,000-link import with a
    // limit would count 100,000 times.)
    let snapshots = || -> Result<u64, StoreError> {
        let count: Option<i64> = tx
            .query_value(
                "SELECT CAST(sum(count) AS BIGINT) FROM crawl_tallies \
                 WHERE crawl_id = ?1 AND kind = 'snapshot'",
                &args![crawl_id],
            )?
            .flatten();
        Ok(u64::try_from(count.unwrap_or(0)).unwrap_or(0))
    };
    let archived_elsewhere = || -> Result<bool, StoreError> {
        let archived: Option<i64> = tx.query_value(
            "SELECT id FROM snapshots WHERE url = ?2 AND crawl_id != ?1 \
             AND status = 'sealed' LIMIT 1",
            &args![crawl_id, url],
        )?;
        Ok(archived.is_some())
    };
    if let Some(refused) = rules.turns_away(known.is_some(), snapshots, archived_elsewhere)? {
        return Ok(refused);
    }
    let id: Option<i64> = tx.query_value(
        "INSERT INTO snapshots (crawl_id, url, depth, status, retry_at, created_at, uuid, \
         parent_id, host_key) VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?7, ?8) \
         ON CONFLICT DO NOTHING RETURNING id",
        &args![
            crawl_id,
            url,
            depth,
            due,
            now,
            crate::uuid7::new(),
            parent,
            crate::url_rule::host_key(url)
        ],
    )?;
    Ok(id.map_or(Added::Known, Added::New))
}

/// How many of `left` URLs one statement of [`add_many`] inserts: 512 (9 values each, well
/// under either engine's bound on a statement's parameters), else the largest power of two
/// in `left` — so that a few statements, each prepared once, serve every count.
fn rows_per_insert(left: usize) -> usize {
    const MOST: usize = 512;
    match left >= MOST {
        true => MOST,
        false => 1 << left.ilog2(),
    }
}

/// `urls` added to crawl `crawl_id` at `(depth, parent)` by one `INSERT`, inside `tx`: each
/// new, or known already (the crawl has it, or an earlier one of `urls` is the same URL).
fn add_many<U: AsRef<str>>(
    tx: &Db,
    crawl_id: i64,
    urls: &[U],
    (depth, parent): (u32, Option<i64>),
    (due, now): (i64, i64),
) -> Result<Vec<Added>, StoreError> {
    let mut values = Vec::with_capacity(urls.len() * 9);
    for url in urls {
        let uuid = crate::uuid7::new();
        values.extend(args![
            crawl_id,
            url.as_ref(),
            depth,
            "queued",
            due,
            now,
            uuid,
            parent,
            crate::url_rule::host_key(url.as_ref())
        ]);
    }
    let sql = format!(
        "INSERT INTO snapshots (crawl_id, url, depth, status, retry_at, created_at, uuid, \
         parent_id, host_key) VALUES {} ON CONFLICT DO NOTHING RETURNING id, url",
        value_rows(9, urls.len())
    );
    let mut inserted = std::collections::HashMap::new();
    for row in tx.query(&sql, &values)? {
        inserted.insert(row.get::<String>(1)?, row.get::<i64>(0)?);
    }
    // (A URL twice among them: the first is the new one.)
    Ok(urls
        .iter()
        .map(|url| {
            inserted
                .remove(url.as_ref())
                .map_or(Added::Known, Added::New)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::rows_per_insert;

    #[test]
    fn an_insert_takes_512_rows_or_a_power_of_two_and_they_add_up() {
        for total in [1, 2, 3, 511, 512, 513, 1_000, 100_000] {
            let (mut left, mut sizes) = (total, std::collections::BTreeSet::new());
            while left > 0 {
                let rows = rows_per_insert(left);
                assert!(
                    rows.is_power_of_two() && rows <= 512 && rows <= left,
                    "{total}: {rows}"
                );
                sizes.insert(rows);
                left -= rows;
            }
            assert!(sizes.len() <= 10, "{total}: {sizes:?}");
        }
    }
}
