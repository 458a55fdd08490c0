//! Politeness in the queue: a snapshot is claimed only while its host key has room — fewer of
//! its snapshots started than the limit, the claimer's `delay` since the last start on it, no
//! cool-down — read from one shared record per host key (`hosts`), never a counter kept in one
//! process.
//!
//! Invariants: what a host key holds is counted from the snapshots `started` on it, so whatever
//! gives a snapshot back (its seal, a requeue, the recovery of a dead worker's or host's work)
//! gives its slot back with it, and nothing can leave a host key blocked; the check and the claim
//! are one transaction that holds the host key's record (SQLite has one writer; PostgreSQL locks
//! the row, passing over one another claimer holds rather than waiting), so no two claimers, of
//! any host of a fleet, both take its last slot; the claim reads `host_lanes` (one per crawl and
//! host key with queued snapshots, kept by triggers: see migration 41) by index, so its cost is
//! the lanes it looks at, never the queue's length.

use super::shares::Budget;
use crate::config::Politeness;
use crate::domain::{Claim, CrawlRules, HostLimits, Queue, Throttle, Turn};
use crate::store::engine::sql::{args, Db};
use crate::store::work::{millis, queue::lendable_crawls};
use crate::store::{now_ms, StoreError};
use std::collections::HashMap;
use std::time::Duration;

/// How many lanes one claim looks at before it gives up for this turn (each one it passes over is
/// moved to when it may go next, so the next claim starts further on).
const PROBES: usize = 64;

/// How long a lane whose host key is full waits before it is looked at again, unless one of the
/// host key's snapshots ends first (which makes every lane of it due at once).
const FULL_RECHECK: Duration = Duration::from_secs(1);

impl crate::store::WorkQueue<'_> {
    /// The queue's politeness per host key.
    pub fn hosts(&self) -> crate::store::Hosts<'_> {
        crate::store::Hosts { store: self.store }
    }
}

/// What a snapshot claim came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotClaim {
    Claimed(Claim),
    /// No snapshot is due whose site has room.
    NoneDue,
    /// Not this claimer's turn: the host's slots are spent or owed to other crawls
    /// (`domain::turn`), or another claimer holds what it looked at — looked at again soon.
    NotYourTurn(Turn),
}

impl crate::store::Hosts<'_> {
    /// Claims the next queued snapshot whose host key has room, within crawl `crawl_id` (else
    /// among the crawls this host lends its slots to, as [`WorkQueue::claim`] says), for
    /// `lease`, owned by process row `claimer` — when it is the crawl's turn for one of the
    /// host's `budget` slots. Lanes are taken by when they are due, so host keys interleave:
    /// one served goes behind the others for its `delay`.
    ///
    /// [`WorkQueue::claim`]: crate::store::WorkQueue::claim
    pub fn claim_snapshot(
        &self,
        crawl_id: Option<i64>,
        lease: Duration,
        claimer: Option<i64>,
        (politeness, budget): (&Politeness, Budget),
    ) -> Result<SnapshotClaim, StoreError> {
        let (now, wall) = (self.store.queue_now(), now_ms());
        let me = crate::identity::machine_id();
        self.store.write_work(|tx| {
            match super::shares::turn_of(tx, budget, crawl_id, me, now)? {
                Turn::Yours => {}
                // (Nothing due: nothing to wait for a turn for.)
                _ if next_lane(tx, crawl_id, now, me)?.is_none() => {
                    return Ok(SnapshotClaim::NoneDue)
                }
                not_yet => return Ok(SnapshotClaim::NotYourTurn(not_yet)),
            }
            let mut rules: HashMap<i64, CrawlRules> = HashMap::new();
            for _ in 0..PROBES {
                let Some((crawl, host)) = next_lane(tx, crawl_id, now, me)? else {
                    return Ok(SnapshotClaim::NoneDue);
                };
                let move_lane = |due: i64| -> Result<(), StoreError> {
                    tx.execute(
                        "UPDATE host_lanes SET due_at = ?3 WHERE crawl_id = ?1 AND host_key = ?2",
                        &args![crawl, host.as_str(), due],
                    )?;
                    Ok(())
                };
                let head: Option<(i64, i64)> = tx
                    .query_opt(HEAD, &args![crawl, host.as_str()])?
                    .map(|row| Ok::<_, StoreError>((row.get(0)?, row.get(1)?)))
                    .transpose()?;
                let Some((id, retry_at)) = head else {
                    tx.execute(
                        "DELETE FROM host_lanes WHERE crawl_id = ?1 AND host_key = ?2",
                        &args![crawl, host.as_str()],
                    )?;
                    continue;
                };
                if retry_at > now {
                    move_lane(retry_at)?;
                    continue;
                }
                let delay = match host.is_empty() {
                    // (No network host: nothing to be polite to.)
                    true => Duration::ZERO,
                    false => {
                        let rules = match rules.entry(crawl) {
                            std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                            std::collections::hash_map::Entry::Vacant(new) => {
                                new.insert(rules_of(tx, crawl)?)
                            }
                        };
                        let limits = politeness.limits(&host, rules);
                        match room(tx, &host, limits, now)? {
                            Room::Free => limits.delay,
                            Room::NotBefore(at) => {
                                move_lane(at)?;
                                continue;
                            }
                            // (Another claimer holds the site's record now: this claim ends,
                            // and the next looks again once it committed.)
                            Room::Taken => return Ok(SnapshotClaim::NotYourTurn(Turn::Yours)),
                            Room::Full => {
                                move_lane(now + millis(FULL_RECHECK.max(limits.delay)))?;
                                continue;
                            }
                        }
                    }
                };
                let claimed = tx.query_opt(
                    "UPDATE snapshots SET status = 'started', \
                     retry_at = CAST(?2 AS BIGINT) + ?3, started_at = COALESCE(started_at, ?4), \
                     epoch = epoch + 1, owner_id = ?5 \
                     WHERE id = ?1 AND status = 'queued' AND retry_at <= ?2 RETURNING epoch",
                    &args![id, now, millis(lease), wall, claimer],
                )?;
                let Some(row) = claimed else {
                    continue;
                };
                let next = now + millis(delay);
                if !host.is_empty() {
                    tx.execute(
                        "UPDATE hosts SET last_start_at = ?2, next_start_at = ?3 WHERE key = ?1",
                        &args![host.as_str(), now, next],
                    )?;
                }
                // (Behind the lanes already due: host keys take turns.)
                move_lane(next.max(now + 1))?;
                return Ok(SnapshotClaim::Claimed(Claim {
                    queue: Queue::Snapshots,
                    id,
                    epoch: row.get(0)?,
                }));
            }
            Ok(SnapshotClaim::NoneDue)
        })
    }

    /// When the next lane of crawl `crawl_id` (else of the crawls lent to) is due (queue clock).
    pub fn next_due(&self, crawl_id: Option<i64>) -> Result<Option<i64>, StoreError> {
        let me = crate::identity::machine_id();
        let sql = match crawl_id {
            Some(_) => "SELECT min(due_at) FROM host_lanes WHERE crawl_id = ?1 \
                        AND CAST(?2 AS TEXT) IS NOT NULL"
                .to_string(),
            None => format!(
                "SELECT min(due_at) FROM host_lanes WHERE CAST(?1 AS BIGINT) IS NULL \
                 AND crawl_id IN ({})",
                lendable_crawls("?2")
            ),
        };
        Ok(self
            .store
            .db()
            .query_one(&sql, &args![crawl_id, me])?
            .get(0)?)
    }

    /// Puts the snapshot of `claim` back for after its host key's cool-down, which `throttle`
    /// begins (or lengthens) — with its results reopened, so that every hook runs again — unless
    /// it changed hands since. `wait` is the cool-down. Returns whether it did.
    pub fn back_off(
        &self,
        claim: Claim,
        host: &str,
        throttle: &Throttle,
        wait: Duration,
    ) -> Result<bool, StoreError> {
        let now = self.store.queue_now();
        let until = now + millis(wait);
        let reason = throttle.reason();
        self.store.write_work(|tx| {
            let changed = tx.execute(
                "UPDATE snapshots SET status = 'queued', retry_at = ?3, owner_id = NULL, \
                 backoffs = backoffs + 1, epoch = epoch + 1 \
                 WHERE id = ?1 AND epoch = ?2 AND status = 'started'",
                &args![claim.id, claim.epoch, until],
            )?;
            if changed != 1 {
                return Ok(false);
            }
            // (What its hooks got was the site's refusal, not the page: no result stands.)
            tx.execute(
                &format!("{} WHERE snapshot_id = ?1", super::results::REOPEN),
                &args![claim.id],
            )?;
            cool(tx, host, until, &reason)?;
            tx.execute(
                "INSERT INTO backoff_counts (reason, count) VALUES (?1, 1) \
                 ON CONFLICT (reason) DO UPDATE SET count = backoff_counts.count + 1",
                &args![format!("HTTP {}", throttle.status)],
            )?;
            Ok(true)
        })
    }

    /// Begins (or lengthens) host key `host`'s cool-down after `throttle`, for `wait`, putting
    /// nothing back: a snapshot out of back-offs is sealed, and the site is left alone all the
    /// same.
    pub fn cool_down(
        &self,
        host: &str,
        throttle: &Throttle,
        wait: Duration,
    ) -> Result<(), StoreError> {
        let until = self.store.queue_now() + millis(wait);
        self.store
            .write(|tx| cool(tx, host, until, &throttle.reason()))
    }

    /// Gives every snapshot without a host key (added by an abxd before politeness) its key.
    /// Returns how many it keyed.
    pub fn key_unkeyed(&self) -> Result<usize, StoreError> {
        let mut keyed = 0;
        loop {
            let rows = self.store.db().query(
                "SELECT id, url FROM snapshots WHERE host_key IS NULL ORDER BY id LIMIT 512",
                &[],
            )?;
            if rows.is_empty() {
                return Ok(keyed);
            }
            self.store.write(|tx| {
                for row in &rows {
                    let (id, url): (i64, String) = (row.get(0)?, row.get(1)?);
                    tx.execute(
                        "UPDATE snapshots SET host_key = ?2 WHERE id = ?1",
                        &args![id, crate::url_rule::host_key(&url)],
                    )?;
                }
                Ok(())
            })?;
            keyed += rows.len();
        }
    }
}

/// Makes host key `host` cool down until `until` (never shorter than it already does), saying
/// `reason`, counting one more back-off of it.
fn cool(tx: &Db, host: &str, until: i64, reason: &str) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO hosts (key, cooldown_until, cooldown_reason, backoffs) \
         VALUES (?1, ?2, ?3, 1) ON CONFLICT (key) DO UPDATE SET \
         cooldown_until = CASE WHEN hosts.cooldown_until > ?2 THEN hosts.cooldown_until \
                          ELSE ?2 END, \
         cooldown_reason = ?3, backoffs = hosts.backoffs + 1",
        &args![host, until, reason],
    )?;
    Ok(())
}

/// Whether host key `host` has room for a start at `now`, holding its record for the rest of
/// the transaction.
enum Room {
    Free,
    /// The claimer's delay since the last start, or the cool-down, runs until then.
    NotBefore(i64),
    /// `most` of its snapshots run.
    Full,
    /// Another transaction holds its record (PostgreSQL): looked at again next time.
    Taken,
}

fn room(tx: &Db, host: &str, limits: HostLimits, now: i64) -> Result<Room, StoreError> {
    tx.execute(
        "INSERT INTO hosts (key) VALUES (?1) ON CONFLICT (key) DO NOTHING",
        &args![host],
    )?;
    // (Skipping a record another claimer holds, never waiting for it: a claim holds lanes too,
    // and two claims each waiting for what the other holds would deadlock.)
    let sql = format!(
        "SELECT last_start_at, cooldown_until FROM hosts WHERE key = ?1{}",
        tx.dialect().skip_locked()
    );
    let Some(row) = tx.query_opt(&sql, &args![host])? else {
        return Ok(Room::Taken);
    };
    let ready = (row.get::<i64>(0)? + millis(limits.delay)).max(row.get::<i64>(1)?);
    if ready > now {
        return Ok(Room::NotBefore(ready));
    }
    let most = limits.most;
    let running: i64 = tx.query_one(RUNNING, &args![host])?.get(0)?;
    Ok(match running >= i64::from(most) {
        true => Room::Full,
        false => Room::Free,
    })
}

/// The lane a claim looks at next: the first due of crawl `crawl_id`'s, else of the crawls lent
/// to.
fn next_lane(
    tx: &Db,
    crawl_id: Option<i64>,
    now: i64,
    me: &str,
) -> Result<Option<(i64, String)>, StoreError> {
    let sql = lane_query(crawl_id, tx.dialect().skip_locked());
    let row = tx.query_opt(&sql, &args![crawl_id, now, me])?;
    row.map(|row| Ok::<_, StoreError>((row.get(0)?, row.get(1)?)))
        .transpose()
}

/// The oldest queued snapshot of a lane (?1 its crawl, ?2 its host key).
const HEAD: &str = "SELECT id, retry_at FROM snapshots WHERE crawl_id = ?1 AND host_key = ?2 \
                    AND status = 'queued' ORDER BY retry_at, id LIMIT 1";

/// How many snapshots of host key ?1 run.
const RUNNING: &str = "SELECT count(*) FROM snapshots WHERE host_key = ?1 AND status = 'started'";

/// The query for the first due lane (?2: now) of crawl ?1, or (`crawl_id` `None`) of the crawls
/// lent to by machine ?3, ending in `lock` — a lane another claimer holds is passed over, as its
/// site's record is (see `room`).
fn lane_query(crawl_id: Option<i64>, lock: &str) -> String {
    match crawl_id {
        Some(_) => format!(
            "SELECT crawl_id, host_key FROM host_lanes WHERE crawl_id = ?1 \
             AND due_at <= ?2 AND CAST(?3 AS TEXT) IS NOT NULL \
             ORDER BY due_at, host_key LIMIT 1{lock}"
        ),
        None => format!(
            "SELECT crawl_id, host_key FROM host_lanes WHERE CAST(?1 AS BIGINT) IS NULL \
             AND due_at <= ?2 AND crawl_id IN ({}) ORDER BY due_at, host_key LIMIT 1{lock}",
            lendable_crawls("?3")
        ),
    }
}

/// Crawl `crawl`'s rules, as kept on its row.
fn rules_of(tx: &Db, crawl: i64) -> Result<CrawlRules, StoreError> {
    let row = tx.query_opt("SELECT rules FROM crawls WHERE id = ?1", &args![crawl])?;
    Ok(match row {
        Some(row) => crate::store::work::json_column(&row, 0)?,
        None => CrawlRules::default(),
    })
}

#[cfg(test)]
mod tests {
    use crate::store::Store;

    /// On SQLite every read of a claim — the next lane (of a crawl, or of the crawls lent to),
    /// its oldest queued snapshot, its site's running count — goes through an index, never
    /// through a table: choosing costs the same over one site or five thousand.
    #[test]
    fn every_read_of_a_polite_claim_is_an_index_search() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let db = store.sqlite().unwrap();
        let reads = [
            ("host_lanes", lane_sql(true), 3),
            ("host_lanes", lane_sql(false), 3),
            ("snapshots", HEAD.to_string(), 2),
            ("snapshots", RUNNING.to_string(), 1),
        ];
        for (table, sql, params) in reads {
            let steps = crate::store::sql::sqlite_plan(db, &sql, params);
            assert!(
                crate::store::sql::searches_by_index(&steps, table),
                "{sql}: {steps:?}"
            );
        }
    }

    fn lane_sql(own: bool) -> String {
        super::lane_query(own.then_some(1), "")
    }

    use super::{HEAD, RUNNING};
}
