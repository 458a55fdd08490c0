//! Politeness to the sites a crawl visits: how many snapshots of one host key run at once and how
//! far apart they start ([`HostLimits`]), and how long a host that answered 429 or 503 is left
//! alone ([`Throttle`], [`cool_down`]).
//!
//! Invariants: plain decisions on what was read — no clock, no file, no database: a wait is
//! computed from the values given; a wait is never longer than the cap given, whatever a site
//! asks (a `Retry-After` of a year would otherwise hold a crawl for a year).

use std::time::Duration;

/// What one host key may take at once, as the claim that would start a snapshot on it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimits {
    /// Snapshots of the host key running at once (at least 1).
    pub most: u32,
    /// Time between two starts on the host key.
    pub delay: Duration,
}

/// What a snapshot's hooks saw that asks abxd to slow down: a status of 429 (Too Many Requests)
/// or 503 (Service Unavailable), and the `Retry-After` it came with, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    pub status: u16,
    /// How long the site asked to be left alone, read as of when it was seen.
    pub retry_after: Option<Duration>,
}

impl Throttle {
    /// The statuses that say "slow down".
    pub const STATUSES: [u16; 2] = [429, 503];

    /// What it says, for `abxctl hosts` and the log: "HTTP 429, Retry-After 3s".
    pub fn reason(&self) -> String {
        match self.retry_after {
            Some(wait) => format!(
                "HTTP {}, Retry-After {}",
                self.status,
                humantime::format_duration(wait)
            ),
            None => format!("HTTP {}", self.status),
        }
    }
}

/// How long a host key cools down after `throttle`, its `backoffs`-th in a row (1 for the first):
/// its `Retry-After` when it gave one, else `delay` doubled per back-off in a row (at least a
/// second); never more than `cap`.
pub fn cool_down(throttle: &Throttle, delay: Duration, backoffs: u32, cap: Duration) -> Duration {
    let wait = throttle.retry_after.unwrap_or_else(|| {
        let base = delay.max(Duration::from_secs(1));
        let doublings = backoffs.saturating_sub(1).min(20);
        base.saturating_mul(1 << doublings)
    });
    wait.min(cap)
}

/// The throttle a `headers.json` (abx-plugins' headers hook, and abxd's bundled one) or a
/// `navigation.json` (abx-plugins' chrome navigate hook: the status alone) records, if its status
/// is one of [`Throttle::STATUSES`]: `{"status": 429, "response_headers": {...}}` (or
/// `"headers"`), with `Retry-After` read as seconds or an HTTP date (`now_unix_ms` is when it is
/// read: a date in the past is no wait).
pub fn throttle_recorded(text: &str, now_unix_ms: i64) -> Option<Throttle> {
    let record: serde_json::Value = serde_json::from_str(text).ok()?;
    let status = record.get("status").and_then(status_of)?;
    if !Throttle::STATUSES.contains(&status) {
        return None;
    }
    let retry_after = ["response_headers", "headers"]
        .iter()
        .filter_map(|key| record.get(key)?.as_object())
        .flat_map(|headers| headers.iter())
        .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))
        .and_then(|(_, value)| value.as_str())
        .and_then(|value| retry_after(value, now_unix_ms));
    Some(Throttle {
        status,
        retry_after,
    })
}

/// A status as JSON gives it: a number, or a number in a string.
fn status_of(value: &serde_json::Value) -> Option<u16> {
    match value {
        serde_json::Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A `Retry-After` value (RFC 9110): delay-seconds, or an HTTP date.
pub fn retry_after(value: &str, now_unix_ms: i64) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = jiff::fmt::rfc2822::parse(value).ok()?.timestamp();
    let left = at.as_millisecond().saturating_sub(now_unix_ms).max(0);
    Some(Duration::from_millis(left as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_445_412_480_000; // Wed, 21 Oct 2015 07:28:00 GMT

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(retry_after("3", NOW), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:10 GMT", NOW),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:27:00 GMT", NOW),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("soon", NOW), None);
    }

    #[test]
    fn a_throttle_is_read_from_either_headers_hook() {
        let ours = r#"{"url": "u", "status": 429, "headers": {"Retry-After": "3"}}"#;
        assert_eq!(
            throttle_recorded(ours, NOW),
            Some(Throttle {
                status: 429,
                retry_after: Some(Duration::from_secs(3))
            })
        );
        let theirs =
            r#"{"status": 503, "response_headers": {"retry-after": "7", ":status": "503"}}"#;
        assert_eq!(
            throttle_recorded(theirs, NOW).and_then(|t| t.retry_after),
            Some(Duration::from_secs(7))
        );
        let plain = r#"{"status": 429, "response_headers": {}}"#;
        assert_eq!(throttle_recorded(plain, NOW).unwrap().retry_after, None);
        for fine in [r#"{"status": 200}"#, r#"{"status": null}"#, "not json"] {
            assert_eq!(throttle_recorded(fine, NOW), None, "{fine}");
        }
    }

    #[test]
    fn a_cool_down_follows_retry_after_else_doubles_and_is_capped() {
        let cap = Duration::from_secs(600);
        let second = Duration::from_secs(1);
        let asked = Throttle {
            status: 429,
            retry_after: Some(Duration::from_secs(3)),
        };
        assert_eq!(cool_down(&asked, second, 4, cap), Duration::from_secs(3));
        let silent = Throttle {
            status: 503,
            retry_after: None,
        };
        let waits: Vec<u64> = (1..=4)
            .map(|n| cool_down(&silent, second * 2, n, cap).as_secs())
            .collect();
        assert_eq!(waits, [2, 4, 8, 16]);
        assert_eq!(cool_down(&silent, Duration::ZERO, 1, cap), second);
        assert_eq!(cool_down(&silent, second, 40, cap), cap);
        let greedy = Throttle {
            status: 429,
            retry_after: Some(Duration::from_secs(86_400 * 365)),
        };
        assert_eq!(cool_down(&greedy, second, 1, cap), cap);
    }
}
