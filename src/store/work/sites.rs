//! What people read of politeness: each host key's running and queued snapshots, its next start
//! and cool-down (`abxctl hosts`, the web view, `/metrics`), the sites a crawl waits on (`abxctl
//! show`), the back-offs by reason.
//!
//! Invariant: reads only, each a pass over an index of the running or queued snapshots (or of
//! one crawl's lanes), whatever the number of host keys — never the queue's history.

use crate::store::engine::sql::{args, Row, SqlError, Value};
use crate::store::StoreError;
use std::collections::BTreeMap;

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

impl HostState {
    /// A host key with nothing counted yet.
    fn idle(key: String) -> HostState {
        HostState {
            key,
            running: 0,
            queued: 0,
            next_start_in_ms: None,
            cooldown_ms: None,
            cooldown_reason: None,
            backoffs: 0,
        }
    }

    /// Takes its times from a `hosts` row read at queue time `now`, whose columns from `at` on
    /// are `next_start_at, cooldown_until, cooldown_reason, backoffs`: what lies ahead of now.
    fn timed(&mut self, row: &Row, at: usize, now: i64) -> Result<(), SqlError> {
        let (next, cool): (i64, i64) = (row.get(at)?, row.get(at + 1)?);
        self.next_start_in_ms = (next > now).then_some(next - now);
        self.cooldown_ms = (cool > now).then_some(cool - now);
        self.cooldown_reason = self.cooldown_ms.and(row.get(at + 2)?);
        self.backoffs = row.get(at + 3)?;
        Ok(())
    }
}

impl crate::store::Hosts<'_> {
    /// The host keys with snapshots queued or running, or cooling down, busiest first. (One
    /// pass over the running and queued snapshots' index, grouped: what a scrape or a page
    /// reads, whatever the number of host keys.)
    pub fn list(&self) -> Result<Vec<HostState>, StoreError> {
        let now = self.store.queue_now();
        let db = self.store.db();
        let mut hosts: BTreeMap<String, HostState> = BTreeMap::new();
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
            entry(&mut hosts, row.get(0)?).timed(row, 1, now)?;
        }
        let mut hosts: Vec<HostState> = hosts.into_values().collect();
        hosts.sort_by(|a, b| (b.running, b.queued, &a.key).cmp(&(a.running, a.queued, &b.key)));
        Ok(hosts)
    }

    /// The sites crawl `crawl_id`'s queued snapshots wait on — a cool-down, or the delay since
    /// the last start — each with how many of the crawl's snapshots it holds back (`queued`).
    pub fn waiting_in(&self, crawl_id: i64) -> Result<Vec<HostState>, StoreError> {
        self.waiting_where(
            "(SELECT count(*) FROM snapshots s WHERE s.crawl_id = l.crawl_id \
              AND s.host_key = l.host_key AND s.status = 'queued') \
             FROM host_lanes l JOIN hosts h ON h.key = l.host_key WHERE l.crawl_id = ?1",
            crawl_id,
        )
    }

    /// The sites whose queued snapshots (of any crawl) wait on politeness, as the web view's
    /// index names them: from the sites' records that say so, each counted (not a pass over the
    /// whole queue, which the index would make each second someone watches it).
    pub fn waiting(&self) -> Result<Vec<HostState>, StoreError> {
        self.waiting_where(
            "(SELECT count(*) FROM snapshots s WHERE s.host_key = h.key \
              AND s.status = 'queued') \
             FROM hosts h WHERE CAST(?1 AS BIGINT) IS NULL",
            None::<i64>,
        )
    }

    /// The sites waiting (delay or cool-down running at `now`) among those `from` (the count of
    /// queued snapshots, then `FROM … WHERE` with `?1`, naming the sites `h`) selects.
    fn waiting_where(
        &self,
        from: &str,
        first: impl Into<Value>,
    ) -> Result<Vec<HostState>, StoreError> {
        let now = self.store.queue_now();
        let rows = self.store.db().query(
            &format!(
                "SELECT h.key, h.next_start_at, h.cooldown_until, h.cooldown_reason, \
                 h.backoffs, {from} AND (h.next_start_at > ?2 OR h.cooldown_until > ?2) \
                 ORDER BY h.key"
            ),
            &[first.into(), now.into()],
        )?;
        let mut hosts = Vec::new();
        for row in &rows {
            let queued: u64 = row.get(5)?;
            if queued > 0 {
                let mut host = HostState::idle(row.get(0)?);
                host.queued = queued;
                host.timed(row, 1, now)?;
                hosts.push(host);
            }
        }
        Ok(hosts)
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
            .collect::<Result<_, SqlError>>()?)
    }
}

/// `key`'s entry of `hosts`, made idle if it is not there yet.
fn entry(hosts: &mut BTreeMap<String, HostState>, key: String) -> &mut HostState {
    hosts
        .entry(key.clone())
        .or_insert_with(|| HostState::idle(key))
}
