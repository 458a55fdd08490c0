//! Imported crawls (`abxctl add --from FILE`): what was imported, kept on the crawl until its
//! first snapshot — the input snapshot — parses it; the seeds it was parsed into.
//!
//! Invariants: an imported crawl's input snapshot is its first snapshot, added once; a seed is
//! counted once, its host kept once, in the transaction that adds its snapshot; the crawl's
//! `urls` stay what the operator gave (none, for an import).

use crate::store::engine::sql::args;
use crate::store::Crawls;
use crate::store::{now_ms, StoreError};

impl Crawls<'_> {
    /// What crawl `id` was given to import, if it was.
    pub fn crawl_input(&self, id: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .store
            .db()
            .query_value("SELECT input FROM crawls WHERE id = ?1", &args![id])?
            .flatten())
    }

    /// Crawl `crawl_id`'s first snapshot (an imported crawl's input snapshot), if it has one.
    pub fn first_snapshot(&self, crawl_id: i64) -> Result<Option<i64>, StoreError> {
        Ok(self
            .store
            .db()
            .query_value(
                "SELECT min(id) FROM snapshots WHERE crawl_id = ?1",
                &args![crawl_id],
            )?
            .flatten())
    }

    /// Adds crawl `crawl_id`'s input snapshot — depth 0, its URL `url_of(its id)` — unless the
    /// crawl has a snapshot already (its input snapshot is its first). Returns the input
    /// snapshot's id.
    pub fn add_input_snapshot(
        &self,
        crawl_id: i64,
        url_of: impl Fn(i64) -> String,
    ) -> Result<i64, StoreError> {
        let (due, now) = (self.store.queue_now(), now_ms());
        self.store.write_work(|tx| {
            let first: Option<i64> = tx
                .query_value(
                    "SELECT min(id) FROM snapshots WHERE crawl_id = ?1",
                    &args![crawl_id],
                )?
                .flatten();
            if let Some(first) = first {
                return Ok(first);
            }
            let uuid = crate::uuid7::new();
            let id: i64 = tx
                .query_one(
                    "INSERT INTO snapshots (crawl_id, url, depth, status, retry_at, created_at, \
                     uuid, host_key) VALUES (?1, ?2, 0, 'queued', ?3, ?4, ?5, '') RETURNING id",
                    &args![crawl_id, format!("input:{uuid}"), due, now, uuid.as_str()],
                )?
                .get(0)?;
            tx.execute(
                "UPDATE snapshots SET url = ?2 WHERE id = ?1",
                &args![id, url_of(id)],
            )?;
            Ok(id)
        })
    }

    /// Counts `added` seeds — snapshots just added at depth 0, each once — among crawl
    /// `crawl_id`'s imported seeds, and keeps their `hosts` and ports for its scope and its reach
    /// (each once): the seeds themselves are its snapshots, never copied into its row.
    pub fn add_seeds(
        &self,
        crawl_id: i64,
        added: usize,
        hosts: &std::collections::BTreeSet<(String, Option<u16>)>,
    ) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "UPDATE crawls SET imported_seeds = imported_seeds + ?2 WHERE id = ?1",
                &args![crawl_id, added as i64],
            )?;
            for (host, port) in hosts {
                let port = port.map_or(0, i64::from);
                tx.execute(
                    "INSERT INTO seed_hosts (crawl_id, host, port) VALUES (?1, ?2, ?3) \
                     ON CONFLICT DO NOTHING",
                    &args![crawl_id, host.as_str(), port],
                )?;
            }
            Ok(())
        })
    }

    /// The hosts and ports of crawl `crawl_id`'s imported seeds (`None`: the default port).
    pub fn seed_hosts(&self, crawl_id: i64) -> Result<Vec<(String, Option<u16>)>, StoreError> {
        let rows = self.store.db().query_map(
            "SELECT host, port FROM seed_hosts WHERE crawl_id = ?1",
            &args![crawl_id],
            |row| Ok((row.get::<String>(0)?, row.get::<i64>(1)?)),
        )?;
        Ok((rows.into_iter())
            .map(|(host, port)| (host, u16::try_from(port).ok().filter(|&p| p != 0)))
            .collect())
    }
}
