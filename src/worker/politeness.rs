//! A snapshot whose site said "slow down" (HTTP 429 or 503, as its headers or chrome navigate
//! hook recorded it) is
//! not sealed with the error page: it goes back to the queue for after its host key's cool-down,
//! which every crawl's claims respect — up to `[politeness] max_backoffs` times, after which it is
//! sealed with what it has, ended by `max_backoffs` (which `abxctl show` names).
//!
//! Invariant: the decision ([`decide`]) is apart from the reading and the writing; only a
//! snapshot that ran to its end (not interrupted, no limit reached) is judged.

use super::{Context, WorkerError};
use crate::config::Politeness;
use crate::domain::{Crawl, CrawlRules, Snapshot, Throttle};
use crate::supervisor::SnapshotWorkerChild;
use std::path::Path;
use std::time::Duration;

/// What becomes of a snapshot whose site throttled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Back to the queue; its host key cools down this long.
    BackOff(Duration),
    /// Sealed with what it has: it was put back `max_backoffs` times already. Its host key
    /// still cools down this long.
    GiveUp(Duration),
}

/// What to do after `throttle` with a snapshot on host key `host` of a crawl with `rules`, put
/// back `backoffs` times already.
pub(super) fn decide(
    politeness: &Politeness,
    rules: &CrawlRules,
    backoffs: u32,
    host: &str,
    throttle: &Throttle,
) -> Verdict {
    let delay = politeness.limits(host, rules).delay;
    let cap = politeness.max_cooldown;
    let wait = crate::domain::cool_down(throttle, delay, backoffs + 1, cap);
    match backoffs >= politeness.max_backoffs {
        true => Verdict::GiveUp(wait),
        false => Verdict::BackOff(wait),
    }
}

/// What the hooks that record a page's HTTP status write, in their plugin's directory:
/// abx-plugins' headers hook and abxd's bundled one (`headers.json`, with the response headers
/// and so `Retry-After`), and abx-plugins' chrome navigate hook (`navigation.json`, the status
/// alone).
const STATUS_FILES: [&str; 2] = ["headers.json", "navigation.json"];

/// The throttle the snapshot's hooks recorded in `dir`, if one did — one that says how long to
/// wait (`Retry-After`) before one that does not.
pub(super) fn throttle_in(dir: &Path) -> Option<Throttle> {
    let now = crate::store::now_ms();
    let mut found: Vec<Throttle> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .flat_map(|entry| STATUS_FILES.map(|file| entry.path().join(file)))
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .filter_map(|text| crate::domain::throttle_recorded(&text, now))
        .collect();
    found.sort_by_key(|throttle| throttle.retry_after.is_none());
    found.into_iter().next()
}

/// Puts the snapshot back if its site throttled it. `Ok(true)`: put back, the worker exits
/// without sealing; `Ok(false)`: seal it as usual.
pub(super) fn back_off_if_throttled(
    cx: &mut Context<SnapshotWorkerChild>,
    crawl: &Crawl,
    snapshot: &Snapshot,
    dir: &Path,
) -> Result<bool, WorkerError> {
    if cx.interrupted || cx.ended_by.is_some() {
        return Ok(false);
    }
    let Some(throttle) = throttle_in(dir) else {
        return Ok(false);
    };
    let host = crate::url_rule::host_key(&snapshot.url);
    if host.is_empty() {
        return Ok(false);
    }
    let id = snapshot.id;
    let politeness = &cx.config.politeness;
    let wait = match decide(
        politeness,
        &crawl.rules,
        snapshot.backoffs,
        &host,
        &throttle,
    ) {
        Verdict::GiveUp(wait) => {
            // (Best effort: the snapshot is sealed whether or not the site's record says so.)
            let cooled = cx.store.queue().hosts().cool_down(&host, &throttle, wait);
            if let Err(err) = cooled {
                log::warn!("snapshot {id}: {host} not cooled down: {err}");
            }
            log::warn!(
                "snapshot {id}: {host} said {} again; sealed with what it has after {} \
                 back-offs (max_backoffs)",
                throttle.reason(),
                snapshot.backoffs
            );
            // (Its row says why: `abxctl show` names the limit that ended it.)
            cx.ended_by = Some(crate::domain::Limit::MaxBackoffs);
            return Ok(false);
        }
        Verdict::BackOff(wait) => wait,
    };
    let Some(claim) = cx.store.fence() else {
        return Ok(false);
    };
    let put_back = cx.persist(|store| {
        store
            .queue()
            .hosts()
            .back_off(claim, &host, &throttle, wait)
    })?;
    if put_back == Some(true) {
        log::warn!(
            "snapshot {id}: {host} said {}: put back for {} (back-off {} of {})",
            throttle.reason(),
            humantime::format_duration(wait),
            snapshot.backoffs + 1,
            cx.config.politeness.max_backoffs
        );
        return Ok(true);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_is_read_from_the_headers_or_the_navigation_a_hook_wrote() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(throttle_in(dir.path()), None);
        std::fs::create_dir(dir.path().join("chrome")).unwrap();
        std::fs::write(
            dir.path().join("chrome/navigation.json"),
            r#"{"url": "u", "status": 503, "waitUntil": "load"}"#,
        )
        .unwrap();
        assert_eq!(
            throttle_in(dir.path()),
            Some(Throttle {
                status: 503,
                retry_after: None
            })
        );
        std::fs::create_dir(dir.path().join("headers")).unwrap();
        std::fs::write(
            dir.path().join("headers/headers.json"),
            r#"{"status": 503, "response_headers": {"Retry-After": "9"}}"#,
        )
        .unwrap();
        assert_eq!(
            throttle_in(dir.path()).and_then(|t| t.retry_after),
            Some(Duration::from_secs(9))
        );
    }

    #[test]
    fn a_throttled_snapshot_backs_off_until_max_backoffs() {
        let politeness = Politeness {
            max_backoffs: 2,
            ..Politeness::default()
        };
        let throttle = Throttle {
            status: 503,
            retry_after: None,
        };
        let rules = CrawlRules::default();
        let verdicts: Vec<Verdict> = (0..3)
            .map(|n| decide(&politeness, &rules, n, "example.com", &throttle))
            .collect();
        assert_eq!(
            verdicts,
            [
                Verdict::BackOff(Duration::from_secs(1)),
                Verdict::BackOff(Duration::from_secs(2)),
                Verdict::GiveUp(Duration::from_secs(4))
            ]
        );
    }
}
