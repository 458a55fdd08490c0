//! Exports of crawls into ArchiveBox collections, as the queue keeps them: one row per crawl and
//! collection, queued when the crawl is added (`[archivebox] data_dir`) or by `abxctl export`,
//! taken once the crawl is sealed.
//!
//! Invariants: a crawl is exported into one collection by one export at a time — taking it is
//! one conditional update from `queued` to `running`, so of two hosts sharing the database one
//! takes it, and only a host that ran some of its snapshots (whose directories are there) and
//! has not done its part yet; an export is imported once every host that ran its snapshots did
//! its part (`hand_on`: queued again for the next); asking again for an export that ended queues it again (copying and importing are
//! both idempotent); an export whose daemon died while it ran is queued again when a daemon
//! starts, never lost.

use crate::domain::ExportStatus;
use crate::store::engine::sql::{args, columns, Row, SqlError};
use crate::store::Exports;
use crate::store::{now_ms, StoreError};
use std::path::PathBuf;

/// The exports this host (`?1`, its machine id) may take: of crawls whose snapshots ran here —
/// a snapshot's directory is on the host that ran it (docs/fleet.md) — or of which no
/// snapshot's run is recorded (none ran, or their rows were pruned); not those it did its part
/// of already (`done_by`, a JSON array of ids, which hold no quote).
const HELD_HERE: &str = "(crawl_id IN (SELECT crawl_id FROM processes WHERE \
    kind = 'snapshot_worker' AND machine_id = ?1) OR crawl_id NOT IN (SELECT crawl_id FROM \
    processes WHERE kind = 'snapshot_worker' AND crawl_id IS NOT NULL)) \
    AND done_by NOT LIKE '%\"' || ?1 || '\"%'";

/// One crawl's export into one collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    pub crawl_id: i64,
    /// The ArchiveBox collection's data dir.
    pub target: PathBuf,
    /// The ArchiveBox user its snapshots are filed under.
    pub owner: String,
    pub status: ExportStatus,
    /// What the export did, or why it failed.
    pub detail: Option<String>,
    /// The process row of its latest step.
    pub process_id: Option<i64>,
    pub updated_at: i64,
    /// The hosts of a fleet that did their part of it (see [`Exports::hand_on`]).
    pub done_by: Vec<String>,
}

columns! {
    /// An export's columns, as [`from_row`] reads them.
    enum ExportColumn { crawl_id, target, owner, status, detail, process_id, updated_at, done_by }
}

/// The SELECT list of an export (named to be written inline in `format!`).
const COLUMNS: &str = ExportColumn::LIST;

/// Reads a row selected with [`COLUMNS`].
fn from_row(row: &Row) -> Result<Export, SqlError> {
    use ExportColumn as C;
    let target: String = row.get(C::target)?;
    Ok(Export {
        crawl_id: row.get(C::crawl_id)?,
        target: PathBuf::from(target),
        owner: row.get(C::owner)?,
        status: row.get(C::status)?,
        detail: row.get(C::detail)?,
        process_id: row.get(C::process_id)?,
        updated_at: row.get(C::updated_at)?,
        done_by: super::json_column(row, C::done_by)?,
    })
}

impl Exports<'_> {
    /// Queues the export of crawl `crawl_id` into the collection `target`, its snapshots filed
    /// under `owner` — again, if it was exported (or failed) before; one under way is left be.
    pub fn queue(
        &self,
        crawl_id: i64,
        target: &std::path::Path,
        owner: &str,
    ) -> Result<(), StoreError> {
        let target = target.display().to_string();
        self.store.write_work(|tx| {
            tx.execute(
                "INSERT INTO exports (crawl_id, target, owner, status, updated_at) \
                 VALUES (?1, ?2, ?3, 'queued', ?4) ON CONFLICT (crawl_id, target) DO UPDATE SET \
                 owner = ?3, status = 'queued', detail = NULL, done_by = '[]', updated_at = ?4 \
                 WHERE exports.status != 'running'",
                &args![crawl_id, target, owner, now_ms()],
            )?;
            Ok(())
        })
    }

    /// Takes the next queued export of a sealed crawl, if any: it is `running` from now. (Asked
    /// at every wake of the daemon: with none queued it only reads.)
    pub fn take(&self, here: &str) -> Result<Option<Export>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM exports WHERE status = 'queued' AND crawl_id IN \
             (SELECT id FROM crawls WHERE status = 'sealed') AND {HELD_HERE} \
             ORDER BY crawl_id LIMIT 1"
        );
        let Some(row) = self.store.db().query_opt(&sql, &args![here])? else {
            return Ok(None);
        };
        let export = from_row(&row)?;
        let target = export.target.display().to_string();
        let taken = self.store.write_work(|tx| {
            Ok(tx.execute(
                "UPDATE exports SET status = 'running', updated_at = ?3 \
                 WHERE crawl_id = ?1 AND target = ?2 AND status = 'queued'",
                &args![export.crawl_id, target, now_ms()],
            )?)
        })?;
        // (Another host took it between the two: it is not ours.)
        Ok((taken == 1).then_some(Export {
            status: ExportStatus::Running,
            ..export
        }))
    }

    /// Takes the queued exports of sealed crawls into one collection — that of the first in
    /// line — up to `most`, in crawl order: each is `running` from now. (Of two hosts sharing
    /// the database, each export is taken by one.)
    pub fn take_batch(&self, here: &str, most: usize) -> Result<Vec<Export>, StoreError> {
        let Some(first) = self.take(here)? else {
            return Ok(Vec::new());
        };
        let target = first.target.display().to_string();
        let sql = format!(
            "SELECT {COLUMNS} FROM exports WHERE {HELD_HERE} AND status = 'queued' AND \
             target = ?2 AND crawl_id IN (SELECT id FROM crawls WHERE status = 'sealed') \
             ORDER BY crawl_id LIMIT ?3"
        );
        let more = most.saturating_sub(1) as i64;
        let rows =
            (self.store.db()).query_map(&sql, &args![here, target.as_str(), more], from_row)?;
        let mut batch = vec![first];
        for export in rows {
            let taken = self.store.write_work(|tx| {
                Ok(tx.execute(
                    "UPDATE exports SET status = 'running', updated_at = ?3 \
                     WHERE crawl_id = ?1 AND target = ?2 AND status = 'queued'",
                    &args![export.crawl_id, target.as_str(), now_ms()],
                )?)
            })?;
            if taken == 1 {
                batch.push(Export {
                    status: ExportStatus::Running,
                    ..export
                });
            }
        }
        Ok(batch)
    }

    /// The other hosts that ran snapshots of `export`'s crawl and have not done their part of
    /// it: where the rest of its snapshot directories are (`here` is this host).
    pub fn parts_left(&self, export: &Export, here: &str) -> Result<Vec<String>, StoreError> {
        let machines: Vec<Option<String>> = self.store.db().query_map(
            "SELECT DISTINCT machine_id FROM processes WHERE kind = 'snapshot_worker' \
             AND crawl_id = ?1 AND machine_id IS NOT NULL AND machine_id != ?2 \
             ORDER BY machine_id",
            &args![export.crawl_id, here],
            |row| row.get(0),
        )?;
        Ok((machines.into_iter().flatten())
            .filter(|machine| !export.done_by.contains(machine))
            .collect())
    }

    /// Queues a running export again for the hosts whose part is left, once this one (`here`)
    /// did its own — saying so in `detail`.
    pub fn hand_on(&self, export: &Export, here: &str, detail: &str) -> Result<(), StoreError> {
        let mut done_by = export.done_by.clone();
        done_by.push(here.to_string());
        let done_by = serde_json::to_string(&done_by).expect("strings serialize");
        let target = export.target.display().to_string();
        self.store.write_work(|tx| {
            tx.execute(
                "UPDATE exports SET status = 'queued', detail = ?3, done_by = ?4, \
                 updated_at = ?5 WHERE crawl_id = ?1 AND target = ?2",
                &args![export.crawl_id, target, detail, done_by, now_ms()],
            )?;
            Ok(())
        })
    }

    /// Records the latest step of a running export: its process row, and what it did so far.
    pub fn export_step(
        &self,
        export: &Export,
        process_id: Option<i64>,
        detail: &str,
    ) -> Result<(), StoreError> {
        self.end_as(export, ExportStatus::Running, process_id, detail)
    }

    /// Ends a running export `status` (`imported` or `failed`), saying what it did or why not.
    pub fn end(
        &self,
        export: &Export,
        status: ExportStatus,
        detail: &str,
    ) -> Result<(), StoreError> {
        self.end_as(export, status, export.process_id, detail)
    }

    fn end_as(
        &self,
        export: &Export,
        status: ExportStatus,
        process_id: Option<i64>,
        detail: &str,
    ) -> Result<(), StoreError> {
        let target = export.target.display().to_string();
        self.store.write_work(|tx| {
            tx.execute(
                "UPDATE exports SET status = ?3, detail = ?4, process_id = COALESCE(?5, \
                 process_id), updated_at = ?6 WHERE crawl_id = ?1 AND target = ?2",
                &args![
                    export.crawl_id,
                    target,
                    status,
                    detail,
                    process_id,
                    now_ms()
                ],
            )?;
            Ok(())
        })
    }

    /// Queues again the exports left `running` by a daemon that is gone: those whose latest step
    /// is no live row (none of this host's is, when its daemon starts). Returns how many.
    pub fn requeue_abandoned(&self) -> Result<u64, StoreError> {
        self.store.write_work(|tx| {
            Ok(tx.execute(
                "UPDATE exports SET status = 'queued', updated_at = ?1 WHERE status = 'running' \
                 AND (process_id IS NULL OR process_id NOT IN \
                      (SELECT id FROM processes WHERE ended_at IS NULL))",
                &args![now_ms()],
            )?)
        })
    }

    /// The exports of crawl `crawl_id`, by collection.
    pub fn of_crawl(&self, crawl_id: i64) -> Result<Vec<Export>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM exports WHERE crawl_id = ?1 ORDER BY target");
        Ok(self
            .store
            .db()
            .query_map(&sql, &args![crawl_id], from_row)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// This host, as the tests name it.
    const HERE: &str = "this-host";

    /// Records that a snapshot worker of crawl `crawl` ran (and ended) on `machine`.
    fn snapshot_ran_on(store: &Store, crawl: i64, machine: &str) {
        store
            .write(|tx| {
                tx.execute(
                    "INSERT INTO processes (kind, crawl_id, argv, cwd, status, created_at, \
                     ended_at, machine_id) \
                     VALUES ('snapshot_worker', ?1, '[]', '/', 'exited', 0, 1, ?2)",
                    &args![crawl, machine],
                )?;
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn an_export_is_taken_once_its_crawl_is_sealed_and_once_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let crawl = store
            .crawls()
            .add(
                &crate::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 0),
                None,
            )
            .unwrap();
        let target = dir.path().join("ab");
        store.exports().queue(crawl, &target, "system").unwrap();
        assert_eq!(store.exports().take(HERE).unwrap(), None, "not sealed yet");
        store.crawls().cancel(crawl).unwrap();
        let taken = store.exports().take(HERE).unwrap().expect("sealed: taken");
        assert_eq!(
            (taken.crawl_id, taken.status),
            (crawl, ExportStatus::Running)
        );
        assert_eq!(store.exports().take(HERE).unwrap(), None, "taken once");
        // Asked again while it runs: left be; after it ended: queued again.
        store.exports().queue(crawl, &target, "system").unwrap();
        assert_eq!(
            store.exports().of_crawl(crawl).unwrap()[0].status,
            ExportStatus::Running
        );
        store
            .exports()
            .end(&taken, ExportStatus::Failed, "no archivebox")
            .unwrap();
        assert_eq!(
            store.exports().of_crawl(crawl).unwrap()[0]
                .detail
                .as_deref(),
            Some("no archivebox")
        );
        store.exports().queue(crawl, &target, "alice").unwrap();
        let again = store.exports().take(HERE).unwrap().expect("queued again");
        assert_eq!(again.owner, "alice");
        // Its daemon died: queued again at the next start.
        assert_eq!(store.exports().requeue_abandoned().unwrap(), 1);
        assert_eq!(
            store.exports().of_crawl(crawl).unwrap()[0].status,
            ExportStatus::Queued
        );
    }

    /// In a fleet, a crawl's export is taken by a host that ran its snapshots (their
    /// directories are there), never by one that holds none of them.
    #[test]
    fn an_export_is_taken_where_its_snapshots_ran() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let spec = crate::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 0);
        let (elsewhere, here) = (
            store.crawls().add(&spec, None).unwrap(),
            store.crawls().add(&spec, None).unwrap(),
        );
        let target = dir.path().join("ab");
        for (crawl, machine) in [(elsewhere, "another-host"), (here, HERE)] {
            store.crawls().cancel(crawl).unwrap();
            store.exports().queue(crawl, &target, "system").unwrap();
            snapshot_ran_on(&store, crawl, machine);
        }
        let batch = store.exports().take_batch(HERE, 10).unwrap();
        let taken: Vec<i64> = batch.iter().map(|e| e.crawl_id).collect();
        assert_eq!(
            taken,
            [here],
            "not {elsewhere}, whose snapshots are on another host"
        );
    }

    /// A crawl whose snapshots ran on two hosts is exported by each, in turn: the first hands
    /// it on when its part is done, the second takes it and, its part done, nothing is left.
    #[test]
    fn an_export_of_snapshots_on_two_hosts_is_done_by_each_in_turn() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let spec = crate::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 0);
        let crawl = store.crawls().add(&spec, None).unwrap();
        store.crawls().cancel(crawl).unwrap();
        store
            .exports()
            .queue(crawl, &dir.path().join("ab"), "system")
            .unwrap();
        for machine in [HERE, "other-host"] {
            snapshot_ran_on(&store, crawl, machine);
        }
        let mine = store
            .exports()
            .take(HERE)
            .unwrap()
            .expect("its snapshots ran here");
        assert_eq!(
            store.exports().parts_left(&mine, HERE).unwrap(),
            ["other-host"]
        );
        store.exports().hand_on(&mine, HERE, "copied here").unwrap();
        assert_eq!(
            store.exports().take(HERE).unwrap(),
            None,
            "its part is done"
        );
        let theirs = store
            .exports()
            .take("other-host")
            .unwrap()
            .expect("handed on");
        assert_eq!(theirs.done_by, [HERE]);
        assert!(store
            .exports()
            .parts_left(&theirs, "other-host")
            .unwrap()
            .is_empty());
    }
}
