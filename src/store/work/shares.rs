//! What the deal of a host's snapshot budget (`domain::turn`) reads, in the claim's own
//! transaction: every snapshot this host runs, by crawl, and every crawl it runs.
//!
//! Invariants: counted from the rows — a snapshot is this host's while its owner's process row
//! names this machine and it is `started` — so whatever gives a snapshot back gives its slot
//! back, as with a site's slots; read after the claim took this machine's row `FOR UPDATE` on
//! PostgreSQL (SQLite has one writer), so two claims of one host never both see its last slot
//! free; every read is an index search (the running rows, never the queue).

use crate::domain::{turn, Contender, CrawlRules, Turn};
use crate::store::engine::sql::{args, Db};
use crate::store::StoreError;
use std::collections::HashMap;

/// The budget a claim is dealt from: `[limits]`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// `max_snapshots`: how many snapshots this host runs at once.
    pub slots: u32,
    /// `max_snapshot_workers`: the most of one crawl's, unless its rules say.
    pub per_crawl: u32,
}

impl Budget {
    /// The budget `[limits]` sets.
    pub fn of(limits: &crate::config::Limits) -> Budget {
        Budget {
            slots: limits.snapshot_budget(),
            per_crawl: limits.max_snapshot_workers,
        }
    }

    /// No bound a test of something else would meet.
    pub fn lifted() -> Budget {
        Budget {
            slots: u32::MAX,
            per_crawl: u32::MAX,
        }
    }
}

/// Whether `claimer` (a crawl's pool; `None`: the pool of snapshots lent to other hosts'
/// crawls) may take one of machine `me`'s slots at `now` (queue clock).
pub(super) fn turn_of(
    tx: &Db,
    budget: Budget,
    claimer: Option<i64>,
    me: &str,
    now: i64,
) -> Result<Turn, StoreError> {
    if budget.slots == u32::MAX {
        return Ok(Turn::Yours);
    }
    let lock = format!(
        "SELECT id FROM machines WHERE id = ?1{}",
        tx.dialect().for_update()
    );
    tx.query_opt(&lock, &args![me])?;
    let mut running_by_crawl: HashMap<i64, u32> = HashMap::new();
    let mut running = 0;
    for row in tx.query(RUNNING, &args![me])? {
        running += 1;
        *running_by_crawl.entry(row.get(0)?).or_default() += 1;
    }
    let mut crawls = Vec::new();
    for row in tx.query(CRAWLS, &args![me, now])? {
        let crawl: i64 = row.get(0)?;
        let rules: CrawlRules = crate::store::work::json_column(&row, 2)?;
        let cap = rules
            .max_concurrent_snapshots
            .map(|n| n.min(u32::MAX.into()) as u32);
        crawls.push(Contender {
            crawl,
            priority: row.get(1)?,
            running: running_by_crawl.get(&crawl).copied().unwrap_or(0),
            cap: cap.unwrap_or(budget.per_crawl),
            wants: row.get::<i64>(3)? != 0,
        });
    }
    Ok(turn(budget.slots, running, claimer, &crawls))
}

/// The crawl of each snapshot machine ?1 runs.
const RUNNING: &str = "SELECT s.crawl_id FROM snapshots s JOIN processes p ON p.id = s.owner_id \
                       WHERE s.status = 'started' AND p.machine_id = ?1";

/// The crawls machine ?1 runs, not paused: id, priority, rules, and whether a lane of theirs is
/// due at ?2.
const CRAWLS: &str = "SELECT c.id, c.priority, c.rules, \
                      CASE WHEN EXISTS (SELECT 1 FROM host_lanes l \
                                        WHERE l.crawl_id = c.id AND l.due_at <= ?2) \
                      THEN 1 ELSE 0 END \
                      FROM crawls c JOIN processes w ON w.id = c.owner_id \
                      WHERE c.status = 'started' AND c.paused_at IS NULL AND w.machine_id = ?1";

#[cfg(test)]
mod tests {
    use crate::store::Store;

    /// On SQLite the deal reads only what runs — the started snapshots and crawls, through
    /// their partial indexes — and the lanes by index, never the queue.
    #[test]
    fn the_deal_reads_what_runs_by_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let db = store.sqlite().unwrap();
        for (sql, params, running_index) in [
            (super::RUNNING, 1, "snapshots_running"),
            (super::CRAWLS, 2, "crawls_running"),
        ] {
            let steps = crate::store::sql::sqlite_plan(db, sql, params);
            let outer = &steps[0];
            assert!(outer.contains(running_index), "{sql}: {steps:?}");
            for inner in &steps[1..] {
                let read = inner.starts_with("SEARCH ") || inner.contains("SUBQUERY");
                assert!(read, "{sql}: {steps:?}");
            }
        }
    }
}
