//! Imported crawls (`abxctl add --from FILE`): what was imported, kept on the crawl until its
//! first snapshot — the input snapshot — parses it; the seeds it was parsed into.
//!
//! Invariants: an imported crawl's input snapshot is its first snapshot, added once; a seed is
//! added to the crawl's URLs once, in the transaction that adds its snapshot.

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
                     uuid) VALUES (?1, ?2, 0, 'queued', ?3, ?4, ?5) RETURNING id",
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

    /// Adds `urls` to crawl `crawl_id`'s seeds (what its import was parsed into), each once.
    pub fn add_seeds(&self, crawl_id: i64, urls: &[String]) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            let text: String = tx
                .query_one("SELECT urls FROM crawls WHERE id = ?1", &args![crawl_id])?
                .get(0)?;
            let mut seeds: Vec<String> = serde_json::from_str(&text).unwrap_or_default();
            let mut known: std::collections::HashSet<String> = seeds.iter().cloned().collect();
            for url in urls {
                if known.insert(url.clone()) {
                    seeds.push(url.clone());
                }
            }
            let text = serde_json::to_string(&seeds).expect("strings serialize");
            tx.execute(
                "UPDATE crawls SET urls = ?2 WHERE id = ?1",
                &args![crawl_id, text],
            )?;
            Ok(())
        })
    }
}
