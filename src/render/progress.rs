//! A crawl's progress for a person (`abxd run`, `abxctl add --wait`): a line each time a result
//! starts or ends, and where the crawl stands.
//!
//! Invariant: it reads, never writes; a look reads only what may have changed since the one
//! before, so following a crawl of thousands of
//! results costs what following one of ten does; what came from outside is printed escaped.

use super::crawl::{bytes, one_line};
use super::paint::{paint, Colour};
use crate::domain::ResultStatus;
use crate::printable;
use crate::store::{now_ms, Store, StoreError};
use std::collections::HashMap;

/// Follows a crawl for a person: a line each time a result starts or ends, and where the crawl
/// stands (see [`Standing`]). Each look reads only what may have changed since the one before,
/// so following a crawl of thousands of
/// results costs what following one of ten does.
#[derive(Debug, Default)]
pub struct Progress {
    reported: HashMap<i64, ResultStatus>,
    /// The URLs of the snapshots reported so far, by id.
    urls: HashMap<i64, String>,
    /// When the last look began (wall clock).
    looked: Option<i64>,
    standing: Standing,
}

/// How far back a look reads again: a result is stamped with its writer's clock before its
/// transaction commits, so one committed after the last look may carry a time before it.
const RESTAMP_MARGIN_MS: i64 = 60_000;

/// Where a followed crawl stands: results final of all known so far, and the hooks running.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Standing {
    pub done: usize,
    pub total: usize,
    pub running: Vec<String>,
}

/// One result that started or ended since the last look: what a line says, and what
/// `abxctl follow --json` prints of it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub result_id: i64,
    pub plugin: String,
    pub hook: String,
    pub status: ResultStatus,
    /// The URL of its snapshot (none: a crawl hook's).
    pub url: Option<String>,
    pub output_size: u64,
    pub output: Option<String>,
}

impl Change {
    /// The change as a line: its status (a failure's in red with `colour`), hook, place and,
    /// once it ended, its size and output — escaped.
    pub fn line(&self, colour: bool) -> String {
        let place = self.url.as_deref().unwrap_or("crawl");
        let detail = match self.status {
            ResultStatus::Started => String::new(),
            _ => format!(
                " {} {}",
                bytes(self.output_size),
                one_line(self.output.as_deref().unwrap_or(""), 60)
            ),
        };
        let rest = format!(" {:<36} {place}{detail}", self.hook);
        let status = format!("{:<9}", self.status.to_string());
        let status = match self.status {
            ResultStatus::Failed => paint(&status, Colour::Red, colour),
            _ => status,
        };
        format!("{status}{}", printable::line(&rest))
    }
}

impl Progress {
    /// Lines for what changed since the last call (a failure's status in red with `colour`),
    /// and where the crawl stands.
    pub fn update(
        &mut self,
        store: &Store,
        crawl_id: i64,
        colour: bool,
    ) -> Result<(Vec<String>, Standing), StoreError> {
        let (changes, standing) = self.changes(store, crawl_id)?;
        Ok((changes.iter().map(|c| c.line(colour)).collect(), standing))
    }

    /// What changed since the last call, and where the crawl stands.
    pub fn changes(
        &mut self,
        store: &Store,
        crawl_id: i64,
    ) -> Result<(Vec<Change>, Standing), StoreError> {
        // (Not skipped when SQLite's `data_version` is unchanged: that shortcut missed commits
        // now and then — a status line stuck at "0/0 hooks done" in tests/operator.rs — and a
        // look that reads only what changed is cheap enough.)
        let now = now_ms();
        let since = self.looked.map_or(0, |at| at - RESTAMP_MARGIN_MS);
        let results = store.results().results_since(crawl_id, since)?;
        let (total, done) = store.results().counts(crawl_id)?;
        self.looked = Some(now);
        self.standing = Standing {
            done: done as usize,
            total: total as usize,
            running: results
                .iter()
                .filter(|r| r.status == ResultStatus::Started)
                .map(|r| printable::line(&r.hook).into_owned())
                .collect(),
        };
        let standing = self.standing.clone();
        let mut changes = Vec::new();
        for result in results {
            if self.reported.get(&result.id) == Some(&result.status)
                || result.status == ResultStatus::Queued
            {
                continue;
            }
            self.reported.insert(result.id, result.status);
            let url = match result.snapshot_id {
                Some(id) => Some(self.url_of(store, id)?),
                None => None,
            };
            changes.push(Change {
                result_id: result.id,
                plugin: result.plugin,
                hook: result.hook,
                status: result.status,
                url,
                output_size: result.output_size,
                output: result.output,
            });
        }
        Ok((changes, standing))
    }

    /// The URL of snapshot `id`, read once.
    fn url_of(&mut self, store: &Store, id: i64) -> Result<String, StoreError> {
        if let Some(url) = self.urls.get(&id) {
            return Ok(url.clone());
        }
        let url = store
            .crawls()
            .snapshot(id)?
            .map(|s| s.url)
            .unwrap_or_default();
        self.urls.insert(id, url.clone());
        Ok(url)
    }
}
