//! Crawls served from an ArchiveBox collection's queue (`[archivebox] serve_queue`): each one's
//! link to the ArchiveBox Crawl it runs, what the last turn saw of that Crawl, which of its
//! snapshots are whole in ArchiveBox, and when abxd let go of it.
//!
//! Invariants: a served crawl is linked to its ArchiveBox Crawl once — the link is written in
//! the transaction that enqueues the crawl (`insert_crawl`), so a crash leaves both or neither;
//! a linked crawl is held (its Crawl's lease renewed at every turn) until it is released, and a
//! released one is never held again; an ArchiveBox Crawl is held by one crawl at a time (its
//! first run, or a redo of some of its Snapshots — migration 39), so what a turn says of a
//! Crawl is said of the crawl that holds it; a snapshot marked mirrored is not sent again.

use crate::domain::WorkStatus;
use crate::store::engine::sql::{args, Row, SqlError};
use crate::store::Served;
use crate::store::{now_ms, StoreError};
use std::collections::BTreeMap;

/// A crawl abxd runs for an ArchiveBox Crawl, as a turn needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldCrawl {
    /// The ArchiveBox Crawl's id.
    pub archivebox_id: String,
    /// The ArchiveBox user its snapshots are filed under.
    pub owner: String,
    pub crawl_id: i64,
    pub status: WorkStatus,
    /// Paused by an operator (or by ArchiveBox, followed).
    pub paused: bool,
    /// The Crawl's status as the last turn saw it (`None` before the first).
    pub seen: Option<String>,
    /// It runs Snapshots ArchiveBox has already (a redo): its files replace theirs.
    pub redo: bool,
}

/// One of a held crawl's snapshots not yet whole in ArchiveBox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedSnapshot {
    pub id: i64,
    pub uuid: String,
    pub url: String,
    pub depth: u32,
    pub status: WorkStatus,
    /// When abxd made it (Unix ms).
    pub created_at: i64,
    /// The UUID of the snapshot whose hooks found its URL (none for a seed).
    pub parent_uuid: Option<String>,
}

/// A hook of a held crawl's snapshot that runs now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningHook {
    pub snapshot_id: i64,
    pub plugin: String,
    /// Its file name.
    pub hook: String,
    pub pid: i64,
    /// Its process row's UUIDv7.
    pub process_uuid: String,
    /// When it started (Unix ms).
    pub started_at: i64,
    pub argv: Vec<String>,
    pub timeout_secs: u64,
}

fn held_from_row(row: &Row) -> Result<HeldCrawl, SqlError> {
    Ok(HeldCrawl {
        archivebox_id: row.get(0)?,
        crawl_id: row.get(1)?,
        status: row.get(2)?,
        paused: row.get::<Option<i64>>(3)?.is_some(),
        seen: row.get(4)?,
        owner: row.get(5)?,
        redo: row.get::<i64>(6)? != 0,
    })
}

impl<'s> crate::store::Crawls<'s> {
    /// The crawls of them taken from an ArchiveBox collection's queue.
    pub fn served(&self) -> Served<'s> {
        Served { store: self.store }
    }

    /// The variables crawl `crawl_id`'s hooks get above every other setting (`CrawlSpec::env`;
    /// none for a crawl that is gone). Read apart from the crawl's row: a Crawl of ArchiveBox's
    /// carries its whole frozen config, which only the start of its workers needs.
    pub fn env(&self, crawl_id: i64) -> Result<BTreeMap<String, String>, StoreError> {
        let row = (self.store.db())
            .query_opt("SELECT env FROM crawls WHERE id = ?1", &args![crawl_id])?;
        let Some(row) = row else {
            return Ok(BTreeMap::new());
        };
        Ok(super::json_column(&row, 0)?)
    }
}

impl Served<'_> {
    /// The crawls abxd holds for ArchiveBox Crawls now, oldest first.
    pub fn held(&self) -> Result<Vec<HeldCrawl>, StoreError> {
        Ok(self.store.db().query_map(
            "SELECT a.archivebox_id, c.id, c.status, c.paused_at, a.seen, a.owner, a.redo \
             FROM archivebox_crawls a \
             JOIN crawls c ON c.id = a.crawl_id WHERE a.released_at IS NULL ORDER BY c.id",
            &[],
            held_from_row,
        )?)
    }

    /// The crawl that holds the ArchiveBox Crawl `archivebox_id`, if one does.
    pub fn crawl_of(&self, archivebox_id: &str) -> Result<Option<i64>, StoreError> {
        let row = self.store.db().query_opt(
            "SELECT crawl_id FROM archivebox_crawls WHERE archivebox_id = ?1 \
             AND released_at IS NULL",
            &args![archivebox_id],
        )?;
        Ok(row.map(|row| row.get(0)).transpose()?)
    }

    /// The snapshots of `crawl_id` not yet whole in ArchiveBox, in the order they were made.
    pub fn unmirrored(&self, crawl_id: i64) -> Result<Vec<ServedSnapshot>, StoreError> {
        Ok(self.store.db().query_map(
            "SELECT s.id, s.uuid, s.url, s.depth, s.status, s.created_at, \
             (SELECT p.uuid FROM snapshots p WHERE p.id = s.parent_id) FROM snapshots s \
             WHERE s.crawl_id = ?1 \
             AND s.uuid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM archivebox_mirrored m \
             WHERE m.snapshot_id = s.id) ORDER BY s.id",
            &args![crawl_id],
            |row| {
                Ok(ServedSnapshot {
                    id: row.get(0)?,
                    uuid: row.get(1)?,
                    url: row.get(2)?,
                    depth: row.get(3)?,
                    status: row.get(4)?,
                    created_at: row.get(5)?,
                    parent_uuid: row.get(6)?,
                })
            },
        )?)
    }

    /// The hooks of `crawl_id`'s snapshots that run now, with their processes.
    pub fn running_hooks(&self, crawl_id: i64) -> Result<Vec<RunningHook>, StoreError> {
        Ok(self.store.db().query_map(
            "SELECT r.snapshot_id, r.plugin, r.hook, p.pid, p.started_at, p.argv, p.timeout_ms, p.uuid \
             FROM results r JOIN processes p ON p.id = r.process_id WHERE r.crawl_id = ?1 \
             AND r.status = 'started' AND r.snapshot_id IS NOT NULL AND p.pid IS NOT NULL \
             AND p.started_at IS NOT NULL AND p.ended_at IS NULL AND p.uuid IS NOT NULL \
             ORDER BY r.id",
            &args![crawl_id],
            |row| {
                let argv: String = row.get(5)?;
                Ok(RunningHook {
                    snapshot_id: row.get(0)?,
                    plugin: row.get(1)?,
                    hook: row.get(2)?,
                    pid: row.get(3)?,
                    process_uuid: row.get(7)?,
                    started_at: row.get(4)?,
                    argv: serde_json::from_str(&argv).unwrap_or_default(),
                    timeout_secs: (row.get::<Option<i64>>(6)?.unwrap_or(0).max(0) as u64)
                        .div_ceil(1000),
                })
            },
        )?)
    }

    /// Notes the Crawl's status as a turn saw it.
    pub fn seen(&self, archivebox_id: &str, status: &str) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "UPDATE archivebox_crawls SET seen = ?2 \
                 WHERE archivebox_id = ?1 AND released_at IS NULL",
                &args![archivebox_id, status],
            )?;
            Ok(())
        })
    }

    /// Notes that the snapshot `snapshot_uuid` of the crawl that holds `archivebox_id` is whole
    /// in ArchiveBox.
    pub fn mirrored(&self, archivebox_id: &str, snapshot_uuid: &str) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "INSERT INTO archivebox_mirrored (snapshot_id) SELECT s.id FROM snapshots s \
                 JOIN archivebox_crawls a ON a.crawl_id = s.crawl_id \
                 WHERE a.archivebox_id = ?1 AND a.released_at IS NULL AND s.uuid = ?2 \
                 ON CONFLICT DO NOTHING",
                &args![archivebox_id, snapshot_uuid],
            )?;
            Ok(())
        })
    }

    /// Lets go of the Crawl `archivebox_id`: its lease is not renewed any more.
    pub fn release(&self, archivebox_id: &str) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "UPDATE archivebox_crawls SET released_at = ?2 \
                 WHERE archivebox_id = ?1 AND released_at IS NULL",
                &args![archivebox_id, now_ms()],
            )?;
            Ok(())
        })
    }
}
