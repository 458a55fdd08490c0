//! URLs the crawl's hooks discovered and `url_rule` refused: counted per crawl and reason, the
//! first [`FIRST_SHOWN`] of each reason kept in words, so that `abxctl show` says what a crawl
//! did not follow and why — never dropped in silence. Connects and sends its egress policy
//! refused are counted beside them, by reason (the kernel names no URL).
//!
//! Invariant: one row per (crawl, reason), its count raised in the same transaction as the
//! result that discovered the URL (a write of work: fenced like the result's own).

use crate::domain::Refusal;
use crate::store::sql::args;
use crate::store::Crawls;
use crate::store::StoreError;
use std::collections::BTreeMap;

/// How many refused URLs of each reason a crawl keeps in words.
pub const FIRST_SHOWN: i64 = 5;

/// The URLs of one reason refused for a crawl.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RefusedUrls {
    pub count: u64,
    /// The first ones, in the order they came.
    pub first: Vec<String>,
}

impl Crawls<'_> {
    /// Counts `url`, discovered for crawl `crawl_id`, as refused for `reason`.
    pub fn refuse_url(&self, crawl_id: i64, reason: Refusal, url: &str) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "INSERT INTO refused_urls (crawl_id, reason, count, first_urls) \
                 VALUES (?1, ?2, 1, ?3) ON CONFLICT (crawl_id, reason) DO UPDATE SET \
                 count = refused_urls.count + 1, \
                 first_urls = CASE WHEN refused_urls.count < ?5 \
                     THEN refused_urls.first_urls || ?4 ELSE refused_urls.first_urls END",
                &args![crawl_id, reason, url, format!("\n{url}"), FIRST_SHOWN],
            )?;
            Ok(())
        })
    }

    /// Counts `count` more connects or sends of crawl `crawl_id` refused for `reason` (no URL:
    /// the kernel's count).
    pub fn add_refusals(
        &self,
        crawl_id: i64,
        reason: Refusal,
        count: u64,
    ) -> Result<(), StoreError> {
        self.store.write_work(|tx| {
            tx.execute(
                "INSERT INTO refused_urls (crawl_id, reason, count, first_urls) \
                 VALUES (?1, ?2, ?3, '') ON CONFLICT (crawl_id, reason) DO UPDATE SET \
                 count = refused_urls.count + ?3",
                &args![crawl_id, reason, count as i64],
            )?;
            Ok(())
        })
    }

    /// What every crawl in the table refused, by reason (`/metrics`).
    pub fn refusal_totals(&self) -> Result<BTreeMap<Refusal, u64>, StoreError> {
        let rows = self.store.db().query_map(
            "SELECT reason, CAST(sum(count) AS BIGINT) FROM refused_urls GROUP BY reason",
            &args![],
            |row| {
                let reason: Refusal = row.get(0)?;
                let count: i64 = row.get(1)?;
                Ok((reason, count.max(0) as u64))
            },
        )?;
        Ok(rows.into_iter().collect())
    }

    /// What was refused for crawl `crawl_id`, by reason.
    pub fn refused_urls(
        &self,
        crawl_id: i64,
    ) -> Result<BTreeMap<Refusal, RefusedUrls>, StoreError> {
        let rows = self.store.db().query_map(
            "SELECT reason, count, first_urls FROM refused_urls WHERE crawl_id = ?1",
            &args![crawl_id],
            |row| {
                let reason: Refusal = row.get(0)?;
                let count: u64 = row.get(1)?;
                let first: String = row.get(2)?;
                Ok((reason, count, first))
            },
        )?;
        Ok(rows
            .into_iter()
            .map(|(reason, count, first)| {
                let first = first.lines().map(str::to_string).collect();
                (reason, RefusedUrls { count, first })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn refused_urls_are_counted_per_reason_and_the_first_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
        let crawl = store
            .crawls()
            .add(
                &crate::domain::CrawlSpec::of_urls(vec!["http://127.0.0.1:9/".into()], 1),
                None,
            )
            .unwrap();
        for i in 0..7 {
            store
                .crawls()
                .refuse_url(crawl, Refusal::Scheme, &format!("file:///{i}"))
                .unwrap();
        }
        store
            .crawls()
            .refuse_url(crawl, Refusal::MetadataAddress, "http://169.254.169.254/")
            .unwrap();
        let refused = store.crawls().refused_urls(crawl).unwrap();
        assert_eq!(refused[&Refusal::Scheme].count, 7);
        assert_eq!(
            refused[&Refusal::Scheme].first,
            (0..5).map(|i| format!("file:///{i}")).collect::<Vec<_>>()
        );
        assert_eq!(
            refused[&Refusal::MetadataAddress],
            RefusedUrls {
                count: 1,
                first: vec!["http://169.254.169.254/".into()]
            }
        );
        assert!(store.crawls().refused_urls(crawl + 1).unwrap().is_empty());
    }
}
