//! The operator's verbs on crawls and on the table: `retry`, `pause`/`resume`, `cancel` (its
//! seal; the daemon then tears the crawl's worker down), `prune` and `export`.

use super::{Refusal, VerbError};
use crate::config::Config;
use crate::domain::{Crawl, Pruned, RetryScope};
use crate::store::{now_ms, Compact, Store};
use std::path::Path;
use std::time::Duration;

/// Crawl `crawl_id`, or "no crawl" as a refusal.
fn crawl(store: &Store, crawl_id: i64) -> Result<Crawl, VerbError> {
    store
        .crawls()
        .get(crawl_id)?
        .ok_or_else(|| VerbError::Refused(Refusal::not_found(format!("no crawl {crawl_id}"))))
}

fn refused(why: String) -> VerbError {
    VerbError::Refused(Refusal::not_allowed(why))
}

/// Queues the results `which` names of sealed crawl `crawl_id` again (of `hook` only, if
/// given) and reopens the crawl; returns how many.
pub fn retry(
    store: &Store,
    crawl_id: i64,
    which: RetryScope,
    hook: Option<&str>,
) -> Result<u64, VerbError> {
    let crawl = crawl(store, crawl_id)?;
    if let Some(why) = crawl.refuses_retry() {
        return Err(refused(why));
    }
    match store.crawls().retry_results(&crawl, which, hook)? {
        Some(retried) => Ok(retried),
        None => Err(refused(crawl.nothing_to_retry(which, hook))),
    }
}

/// Pauses crawl `crawl_id` (`paused`) or resumes it.
pub fn pause(store: &Store, crawl_id: i64, paused: bool) -> Result<(), VerbError> {
    let crawl = crawl(store, crawl_id)?;
    if let Some(why) = crawl.refuses_pause(paused, crate::store::printable_time) {
        return Err(refused(why));
    }
    Ok(store.crawls().set_paused(crawl_id, paused)?)
}

/// Seals crawl `crawl_id` as cancelled, with what it had not finished.
pub fn cancel(store: &Store, crawl_id: i64) -> Result<(), VerbError> {
    let crawl = crawl(store, crawl_id)?;
    if let Some(why) = crawl.refuses_cancel() {
        return Err(refused(why));
    }
    Ok(store.crawls().cancel(crawl_id)?)
}

/// Prunes the process rows of finished work older than `older_than` (else `[retention]`'s
/// `keep_days`); with `dry_run`, only counts them. `compact` says how the space is given back.
pub fn prune(
    store: &Store,
    config: &Config,
    older_than: Option<Duration>,
    dry_run: bool,
    compact: Compact,
) -> Result<Pruned, VerbError> {
    let Some(keep) = older_than.or(config.retention.keep()) else {
        return Err(refused(
            "retention.keep_days is 0 (rows are kept for ever): say how old with --older-than"
                .into(),
        ));
    };
    Ok(store.processes().prune(cutoff_of(keep), dry_run, compact)?)
}

/// `[retention]`'s prune in the daemon's loop: at most `at_most` of the rows it takes (the rest
/// at later turns); nothing when retention keeps every row.
pub fn prune_some(store: &Store, config: &Config, at_most: u64) -> Result<Pruned, VerbError> {
    let Some(keep) = config.retention.keep() else {
        return Ok(Pruned::default());
    };
    Ok(store
        .processes()
        .prune_some(cutoff_of(keep), at_most, Compact::IfCheap)?)
}

/// The end time before which a row is old enough to go, when rows are kept for `keep`.
fn cutoff_of(keep: Duration) -> i64 {
    now_ms() - keep.as_millis() as i64
}

/// Queues the export of `crawls` into the ArchiveBox collection at `target`, their snapshots
/// filed under `user` (else `[archivebox]`'s); returns the crawls queued.
pub fn export(
    store: &Store,
    config: &Config,
    target: &Path,
    user: Option<&str>,
    crawls: &[i64],
) -> Result<Vec<i64>, VerbError> {
    let user = user.unwrap_or(&config.archivebox.user);
    crate::export::queue(store, target, user, crawls).map_err(refused)
}
