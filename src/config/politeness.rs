//! `[politeness]`: how hard abxd may press one site — snapshots of one host key at once, time
//! between their starts, how long a site that said 429 or 503 is left alone — with
//! `[politeness.hosts."example.com"]` for a host key of its own, and a crawl's own
//! `--max-per-host` / `--delay` above both.
//!
//! Invariant: [`Politeness::limits`] is the one place these three layers are merged.

use super::file::{duration, duration_text, optional_duration, optional_duration_text};
use crate::domain::{CrawlRules, HostLimits};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Politeness {
    /// Snapshots of one host key running at once, across every crawl (and every host of a
    /// fleet).
    pub max_per_host: u32,
    /// Time between two starts of snapshots on one host key.
    #[serde(deserialize_with = "duration", serialize_with = "duration_text")]
    pub delay: Duration,
    /// Times one snapshot is put back for a site's 429 or 503 before it is sealed with what it
    /// has.
    pub max_backoffs: u32,
    /// The longest a host key cools down, whatever its `Retry-After` asks.
    #[serde(deserialize_with = "duration", serialize_with = "duration_text")]
    pub max_cooldown: Duration,
    /// Host keys with limits of their own.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub hosts: BTreeMap<String, HostPoliteness>,
}

/// `[politeness.hosts."KEY"]`: what is not given is `[politeness]`'s.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostPoliteness {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_per_host: Option<u32>,
    #[serde(
        deserialize_with = "optional_duration",
        serialize_with = "optional_duration_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub delay: Option<Duration>,
}

impl Default for Politeness {
    fn default() -> Self {
        Politeness {
            max_per_host: 2,
            delay: Duration::from_secs(1),
            max_backoffs: 5,
            max_cooldown: Duration::from_secs(600),
            hosts: BTreeMap::new(),
        }
    }
}

impl Politeness {
    /// The limits a start of a snapshot of crawl `rules` on host key `host` is held to: the
    /// crawl's own, else the host key's section, else `[politeness]`'s.
    pub fn limits(&self, host: &str, rules: &CrawlRules) -> HostLimits {
        let section = self.hosts.get(host);
        let most = (rules
            .max_per_host
            .map(|n| n.min(u64::from(u32::MAX)) as u32))
        .or_else(|| section.and_then(|s| s.max_per_host))
        .unwrap_or(self.max_per_host)
        .max(1);
        let delay = (rules.delay_ms.map(Duration::from_millis))
            .or_else(|| section.and_then(|s| s.delay))
            .unwrap_or(self.delay);
        HostLimits { most, delay }
    }

    /// What is wrong with it, as `(key, why)`.
    pub(super) fn problem(&self) -> Option<(String, String)> {
        let zero = |key: String, n: Option<u32>| {
            (n == Some(0)).then(|| (key, "must be at least 1, got 0".to_string()))
        };
        zero("politeness.max_per_host".into(), Some(self.max_per_host)).or_else(|| {
            self.hosts.iter().find_map(|(host, section)| {
                let key = format!("politeness.hosts.{host:?}.max_per_host");
                zero(key, section.max_per_host)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crawls_own_limits_win_then_the_hosts_then_the_defaults() {
        let mut politeness = Politeness::default();
        politeness.hosts.insert(
            "example.com".into(),
            HostPoliteness {
                max_per_host: Some(1),
                delay: None,
            },
        );
        let none = CrawlRules::default();
        let second = Duration::from_secs(1);
        assert_eq!(
            politeness.limits("example.org", &none),
            HostLimits {
                most: 2,
                delay: second
            }
        );
        assert_eq!(
            politeness.limits("example.com", &none),
            HostLimits {
                most: 1,
                delay: second
            }
        );
        let own = CrawlRules {
            max_per_host: Some(4),
            delay_ms: Some(2500),
            ..CrawlRules::default()
        };
        assert_eq!(
            politeness.limits("example.com", &own),
            HostLimits {
                most: 4,
                delay: Duration::from_millis(2500)
            }
        );
    }
}
