//! Politeness in the queue: a snapshot is claimed only while its host key has room — fewer of
//! its snapshots started than the limit, its last start `delay` ago, no cool-down — read from
//! one shared record per host key (`hosts`), never a counter kept in one process.
//!
//! Invariants: what a host key holds is counted from the snapshots `started` on it, so whatever
//! gives a snapshot back (its seal, a requeue, the recovery of a dead worker's or host's work)
//! gives its slot back with it, and nothing can leave a host key blocked; the check and the claim
//! are one transaction that holds the host key's record (`FOR UPDATE` on PostgreSQL; SQLite has
//! one writer), so no two claimers, of any host of a fleet, both take its last slot; the claim
//! reads `host_lanes` (one per crawl and host key with queued snapshots, kept by triggers: see
//! migration 41) by index, so its cost is the lanes it looks at, never the queue's length.

use crate::config::Politeness;
use crate::domain::{Claim, CrawlRules, Queue, Throttle};
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

/// One host key as `abxctl hosts` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostState {
    pub key: String,
    pub running: u64,
    pub queued: u64,
    /// When the next start on it may be (queue clock, ms), if later than now.
    pub next_start_in_ms: Option<i64>,
    /// How long it still cools down (ms), and why.
    pub cooldown_ms: Option<i64>,
    pub cooldown_reason: Option<String>,
    /// Times it made abxd back off.
    pub backoffs: u64,
}

impl crate::store::WorkQueue<'_> {
    /// The queue's politeness per host key.
    pub fn hosts(&self) -> crate::store::Hosts<'_> {
        crate::store::Hosts { store: self.store }
    }
}

impl crate::store::Hosts<'_> {
    /// Claims the next queued snapshot whose host key has room, within crawl `crawl_id` (else
    /// among the crawls this host lends its slots to, as [`WorkQueue::claim`] says), for
    /// `lease`, owned by process row `claimer`. Lanes are taken by when they are due, so host
    /// keys interleave: one served goes behind the others for its `delay`.
    ///
    /// [`WorkQueue::claim`]: crate::store::WorkQueue::claim
    pub fn claim_snapshot(
        &self,
        crawl_id: Option<i64>,
        lease: Duration,
        claimer: Option<i64>,
        politeness: &Politeness,
    ) -> Result<Option<Claim>, StoreError> {
        let (now, wall) = (self.store.queue_now(), now_ms());
        let me = crate::identity::machine_id();
        self.store.write_work(|tx| {
            let mut rules: HashMap<i64, CrawlRules> = HashMap::new();
            for _ in 0..PROBES {
                let Some((crawl, host)) = next_lane(tx, crawl_id, now, me)? else {
                    return Ok(None);
                };
                let move_lane = |due: i64| -> Result<(), StoreError> {
                    tx.execute(
                        "UPDATE host_lanes SET due_at = ?3 WHERE crawl_id = ?1 AND host_key = ?2",
                        &args![crawl, host.as_str(), due],
                    )?;
                    Ok(())
                };
                let head: Option<(i64, i64)> = tx
                    .query_opt(
                        "SELECT id, retry_at FROM snapshots WHERE crawl_id = ?1 \
                         AND host_key = ?2 AND status = 'queued' ORDER BY retry_at, id LIMIT 1",
                        &args![crawl, host.as_str()],
                    )?
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
                        if !rules.contains_key(&crawl) {
                            rules.insert(crawl, rules_of(tx, crawl)?);
                        }
                        let limits = politeness.limits(&host, &rules[&crawl]);
                        match room(tx, &host, limits.most, now)? {
                            Room::Free => limits.delay,
                            Room::NotBefore(at) => {
                                move_lane(at)?;
                                continue;
                            }
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
                        "UPDATE hosts SET next_start_at = ?2 WHERE key = ?1",
                        &args![host.as_str(), next],
                    )?;
                }
                // (Behind the lanes already due: host keys take turns.)
                move_lane(next.max(now + 1))?;
                return Ok(Some(Claim {
                    queue: Queue::Snapshots,
                    id,
                    epoch: row.get(0)?,
                }));
            }
            Ok(None)
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
            // (What its hooks got was the site's refusal, not the page: no result stands, as
            // `reopen_successes` makes a session's.)
            tx.execute(
                "UPDATE results SET status = 'queued', attempts = 0, output = NULL, \
                 output_files = '[]', output_size = 0, started_at = NULL, ended_at = NULL, \
                 session = 0, process_id = NULL WHERE snapshot_id = ?1",
                &args![claim.id],
            )?;
            tx.execute(
                "INSERT INTO hosts (key, cooldown_until, cooldown_reason, backoffs) \
                 VALUES (?1, ?2, ?3, 1) ON CONFLICT (key) DO UPDATE SET \
                 cooldown_until = CASE WHEN hosts.cooldown_until > ?2 THEN hosts.cooldown_until \
                                  ELSE ?2 END, \
                 cooldown_reason = ?3, backoffs = hosts.backoffs + 1",
                &args![host, until, reason.as_str()],
            )?;
            tx.execute(
                "INSERT INTO backoff_counts (reason, count) VALUES (?1, 1) \
                 ON CONFLICT (reason) DO UPDATE SET count = backoff_counts.count + 1",
                &args![format!("HTTP {}", throttle.status)],
            )?;
            Ok(true)
        })
    }

    /// The host keys with snapshots queued or running, or cooling down, busiest first. (One
    /// pass over the running and queued snapshots' index, grouped: what a scrape or a page
    /// reads, whatever the number of host keys.)
    pub fn list(&self) -> Result<Vec<HostState>, StoreError> {
        let now = self.store.queue_now();
        let db = self.store.db();
        let mut hosts: std::collections::BTreeMap<String, HostState> = Default::default();
        fn entry(
            hosts: &mut std::collections::BTreeMap<String, HostState>,
            key: String,
        ) -> &mut HostState {
            hosts.entry(key.clone()).or_insert_with(|| HostState {
                key,
                running: 0,
                queued: 0,
                next_start_in_ms: None,
                cooldown_ms: None,
                cooldown_reason: None,
                backoffs: 0,
            })
        }
        for (status, running) in [("started", true), ("queued", false)] {
            let rows = db.query(
                "SELECT host_key, count(*) FROM snapshots WHERE status = ?1 \
                 AND host_key IS NOT NULL AND host_key != '' GROUP BY host_key",
                &args![status],
            )?;
            for row in &rows {
                let count: u64 = row.get(1)?;
                let host = entry(&mut hosts, row.get(0)?);
                match running {
                    true => host.running = count,
                    false => host.queued = count,
                }
            }
        }
        let rows = db.query(
            "SELECT key, next_start_at, cooldown_until, cooldown_reason, backoffs FROM hosts \
             WHERE next_start_at > ?1 OR cooldown_until > ?1",
            &args![now],
        )?;
        for row in &rows {
            let host = entry(&mut hosts, row.get(0)?);
            let (next, cool): (i64, i64) = (row.get(1)?, row.get(2)?);
            host.next_start_in_ms = (next > now).then_some(next - now);
            host.cooldown_ms = (cool > now).then_some(cool - now);
            host.cooldown_reason = host.cooldown_ms.and(row.get(3)?);
            host.backoffs = row.get(4)?;
        }
        let mut hosts: Vec<HostState> = hosts.into_values().collect();
        hosts.sort_by(|a, b| (b.running, b.queued, &a.key).cmp(&(a.running, a.queued, &b.key)));
        Ok(hosts)
    }

    /// The sites crawl `crawl_id`'s queued snapshots wait on — a cool-down, or the delay since
    /// the last start — each with how many of the crawl's snapshots it holds back (`queued`).
    pub fn waiting_in(&self, crawl_id: i64) -> Result<Vec<HostState>, StoreError> {
        let now = self.store.queue_now();
        let rows = self.store.db().query(
            "SELECT h.key, h.next_start_at, h.cooldown_until, h.cooldown_reason, h.backoffs, \
               (SELECT count(*) FROM snapshots s WHERE s.crawl_id = l.crawl_id \
                AND s.host_key = l.host_key AND s.status = 'queued') \
             FROM host_lanes l JOIN hosts h ON h.key = l.host_key \
             WHERE l.crawl_id = ?1 AND (h.next_start_at > ?2 OR h.cooldown_until > ?2) \
             ORDER BY h.key",
            &args![crawl_id, now],
        )?;
        let hosts = rows.iter().map(|row| {
            let (next, cool): (i64, i64) = (row.get(1)?, row.get(2)?);
            let cooldown_ms = (cool > now).then_some(cool - now);
            Ok(HostState {
                key: row.get(0)?,
                running: 0,
                queued: row.get(5)?,
                next_start_in_ms: (next > now).then_some(next - now),
                cooldown_ms,
                cooldown_reason: cooldown_ms.and(row.get(3)?),
                backoffs: row.get(4)?,
            })
        });
        Ok(hosts
            .filter(
                |h: &Result<HostState, crate::store::engine::sql::SqlError>| {
                    h.as_ref().map_or(true, |h| h.queued > 0)
                },
            )
            .collect::<Result<_, _>>()?)
    }

    /// The back-offs sites caused, all told, by reason ("HTTP 429", "HTTP 503").
    pub fn backoff_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let rows = (self.store.db()).query(
            "SELECT reason, count FROM backoff_counts ORDER BY reason",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect::<Result<_, crate::store::engine::sql::SqlError>>()?)
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

/// Whether host key `host` has room for a start at `now`, holding its record for the rest of
/// the transaction.
enum Room {
    Free,
    /// Its delay or cool-down runs until then.
    NotBefore(i64),
    /// `most` of its snapshots run.
    Full,
}

fn room(tx: &Db, host: &str, most: u32, now: i64) -> Result<Room, StoreError> {
    tx.execute(
        "INSERT INTO hosts (key) VALUES (?1) ON CONFLICT (key) DO NOTHING",
        &args![host],
    )?;
    let sql = format!(
        "SELECT next_start_at, cooldown_until FROM hosts WHERE key = ?1{}",
        tx.dialect().for_update()
    );
    let row = tx.query_one(&sql, &args![host])?;
    let ready = row.get::<i64>(0)?.max(row.get::<i64>(1)?);
    if ready > now {
        return Ok(Room::NotBefore(ready));
    }
    let running: i64 = tx
        .query_one(
            "SELECT count(*) FROM snapshots WHERE host_key = ?1 AND status = 'started'",
            &args![host],
        )?
        .get(0)?;
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
    let sql = match crawl_id {
        Some(_) => "SELECT crawl_id, host_key FROM host_lanes WHERE crawl_id = ?1 \
                    AND due_at <= ?2 AND CAST(?3 AS TEXT) IS NOT NULL \
                    ORDER BY due_at, host_key LIMIT 1"
            .to_string(),
        None => format!(
            "SELECT crawl_id, host_key FROM host_lanes WHERE CAST(?1 AS BIGINT) IS NULL \
             AND due_at <= ?2 AND crawl_id IN ({}) ORDER BY due_at, host_key LIMIT 1",
            lendable_crawls("?3")
        ),
    };
    let row = tx.query_opt(&sql, &args![crawl_id, now, me])?;
    Ok(row
        .map(|row| Ok::<_, StoreError>((row.get(0)?, row.get(1)?)))
        .transpose()?)
}

/// Crawl `crawl`'s rules, as kept on its row.
fn rules_of(tx: &Db, crawl: i64) -> Result<CrawlRules, StoreError> {
    let row = tx.query_opt("SELECT rules FROM crawls WHERE id = ?1", &args![crawl])?;
    Ok(match row {
        Some(row) => crate::store::work::json_column(&row, 0)?,
        None => CrawlRules::default(),
    })
}
