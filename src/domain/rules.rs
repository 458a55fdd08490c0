//! A crawl's rules, as ArchiveBox gives them (`archivebox add --url-allowlist … --max-urls …`):
//! which discovered URLs it follows and the limits that end it. Given per crawl at `add`, over
//! the `[crawl]` defaults of `supervisor.toml(5)`, and kept on the crawl's row.
//!
//! Invariants: plain values, checked before they are kept (`CrawlRules::problem` names the flag
//! of what is wrong); an absent limit, or a limit of 0, is no limit; what a pattern matches is
//! decided here, apart from where URLs come from (`url_rule`) and who enforces limits (workers).

use super::words::words;
use serde::{Deserialize, Serialize};

words!(
    /// How far from its seeds a crawl may go (`--scope`).
    UrlScope {
        /// Anywhere the other rules let it.
        Any => "any",
        /// Only a seed's own host (and port).
        Host => "host",
        /// A seed's registrable domain (by the Public Suffix List), and every host below it.
        Domain => "domain",
    }
);

words!(
    /// Whether the kernel holds a crawl's hooks to its egress policy (`[crawl] egress`).
    Egress {
        /// No connect or send to a network the crawl may not reach (the default); a crawl the
        /// kernel cannot hold to it is refused.
        Restricted => "restricted",
        /// Hooks reach whatever the host reaches.
        Unrestricted => "unrestricted",
    }
);

words!(
    /// Which of a crawl's limits ended it (or one of its snapshots).
    Limit {
        /// `--max-urls`: no more snapshots than this in the crawl.
        MaxUrls => "max_urls",
        /// `--max-size`: bytes archived by the whole crawl.
        MaxSize => "max_size",
        /// `--timeout`: the crawl's wall time since it first started.
        Timeout => "timeout",
        /// `--snapshot-max-size`: bytes archived by one snapshot.
        SnapshotMaxSize => "snapshot_max_size",
        /// `[politeness] max_backoffs`: its site said 429 or 503 that many times; the snapshot
        /// was sealed with what it had.
        MaxBackoffs => "max_backoffs",
    }
);

impl Limit {
    /// The `abxctl add` flag that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            Limit::MaxUrls => "--max-urls",
            Limit::MaxSize => "--max-size",
            Limit::Timeout => "--timeout",
            Limit::SnapshotMaxSize => "--snapshot-max-size",
            Limit::MaxBackoffs => "[politeness] max_backoffs",
        }
    }
}

/// One crawl's rules. As given (a request, a config section) a field that is absent is not
/// given; as kept on a crawl it is no limit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrawlRules {
    /// Discovered URLs must match one of these (none: every URL may).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub url_allowlist: Vec<String>,
    /// Discovered URLs that match one of these are refused (before the allowlist is asked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub url_denylist: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<UrlScope>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_urls: Option<u64>,
    /// Bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_size: Option<u64>,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_max_size: Option<u64>,
    /// Add no discovered URL that another crawl archived already (`--only-new`; seeds are
    /// always crawled: a feed is fetched again to find what is new in it). `Some(false)`:
    /// asked not to (`--no-only-new`, `--overwrite`), whatever `[crawl]` says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only_new: Option<bool>,
    /// How many of its snapshots run at once (`--crawl-max-concurrent-snapshots`), in place of
    /// `[limits] max_snapshot_workers`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent_snapshots: Option<u64>,
    /// How many of its snapshots of one host key run at once (`--max-per-host`), in place of
    /// `[politeness]`'s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_per_host: Option<u64>,
    /// Milliseconds between two starts of its snapshots on one host key (`--delay`), in place
    /// of `[politeness]`'s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Which queued crawl is claimed first (`--priority`; higher first, 0 by default): kept on
    /// the crawl's row too, where the claim orders by it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Networks its hooks may reach although they are not public (`--allow-network`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow_networks: Vec<String>,
    /// Whether its hooks are held to its egress policy (unset: restricted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress: Option<Egress>,
}

impl CrawlRules {
    /// These rules where given, else `defaults`'s: a list given replaces the default one; a
    /// limit of 0 (given or default) is kept as none.
    pub fn over(&self, defaults: &CrawlRules) -> CrawlRules {
        let list = |given: &Vec<String>, default: &Vec<String>| {
            if given.is_empty() {
                default.clone()
            } else {
                given.clone()
            }
        };
        let limit = |given: Option<u64>, default: Option<u64>| given.or(default).filter(|&n| n > 0);
        CrawlRules {
            url_allowlist: list(&self.url_allowlist, &defaults.url_allowlist),
            url_denylist: list(&self.url_denylist, &defaults.url_denylist),
            scope: self
                .scope
                .or(defaults.scope)
                .filter(|&s| s != UrlScope::Any),
            max_urls: limit(self.max_urls, defaults.max_urls),
            max_size: limit(self.max_size, defaults.max_size),
            timeout: limit(self.timeout, defaults.timeout),
            snapshot_max_size: limit(self.snapshot_max_size, defaults.snapshot_max_size),
            only_new: self.only_new.or(defaults.only_new).filter(|&only| only),
            max_concurrent_snapshots: limit(
                self.max_concurrent_snapshots,
                defaults.max_concurrent_snapshots,
            ),
            max_per_host: self.max_per_host.filter(|&n| n > 0),
            delay_ms: self.delay_ms,
            priority: self.priority.filter(|&p| p != 0),
            allow_networks: list(&self.allow_networks, &defaults.allow_networks),
            egress: self.egress.or(defaults.egress),
        }
    }

    /// Whether its hooks are held to its egress policy.
    pub fn restricted(&self) -> bool {
        self.egress != Some(Egress::Unrestricted)
    }

    /// What is wrong with these rules, naming the flag: a pattern that is neither a domain nor
    /// a regular expression, or a network that is not one.
    pub fn problem(&self) -> Option<String> {
        let lists = [
            ("--url-allowlist", &self.url_allowlist),
            ("--url-denylist", &self.url_denylist),
        ];
        let pattern = lists.into_iter().find_map(|(flag, patterns)| {
            patterns.iter().find_map(|p| {
                Pattern::new(p)
                    .err()
                    .map(|why| format!("{flag} {p:?}: {why}"))
            })
        });
        let network = || {
            (self.allow_networks.iter())
                .find_map(|n| n.parse::<crate::egress::policy::Network>().err())
                .map(|why| format!("--allow-network {why}"))
        };
        pattern.or_else(network)
    }

    /// The limit of `limit`, if it has one.
    pub fn limit(&self, limit: Limit) -> Option<u64> {
        match limit {
            Limit::MaxUrls => self.max_urls,
            Limit::MaxSize => self.max_size,
            Limit::Timeout => self.timeout,
            Limit::SnapshotMaxSize => self.snapshot_max_size,
            // (The config's, not the crawl's.)
            Limit::MaxBackoffs => None,
        }
        .filter(|&n| n > 0)
    }

    /// Whether it follows only URLs no other crawl archived (`--only-new`).
    pub fn only_new(&self) -> bool {
        self.only_new == Some(true)
    }

    /// Whether these rules say anything (a crawl without rules shows none).
    pub fn is_empty(&self) -> bool {
        *self == CrawlRules::default()
    }
}

/// One allow- or denylist pattern, as ArchiveBox reads them: a bare domain (`example.com`:
/// that host and every host below it; `*.example.com`: only below it), else a regular
/// expression searched anywhere in the URL.
#[derive(Debug, Clone)]
pub enum Pattern {
    Domain { host: String, only_below: bool },
    Regex(regex::Regex),
}

impl Pattern {
    pub fn new(text: &str) -> Result<Pattern, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty pattern".into());
        }
        let domain_like = text
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '*'));
        let wildcard = text.strip_prefix("*.");
        if domain_like && !text[usize::from(wildcard.is_some()) * 2..].contains('*') {
            let host = wildcard
                .unwrap_or(text)
                .trim_end_matches('.')
                .to_lowercase();
            return Ok(Pattern::Domain {
                host,
                only_below: wildcard.is_some(),
            });
        }
        regex::Regex::new(text)
            .map(Pattern::Regex)
            .map_err(|err| format!("not a domain nor a regular expression ({err})"))
    }

    /// Whether `url` (whose host is `host`, lower case) matches.
    pub fn matches(&self, url: &str, host: &str) -> bool {
        match self {
            Pattern::Domain {
                host: own,
                only_below,
            } => {
                let below = host
                    .strip_suffix(own.as_str())
                    .is_some_and(|h| h.ends_with('.'));
                below || (!only_below && host == own)
            }
            Pattern::Regex(regex) => regex.is_match(url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_domain_matches_its_host_and_below_and_anything_else_is_a_regex() {
        let domain = Pattern::new("Example.com").unwrap();
        assert!(domain.matches("http://example.com/", "example.com"));
        assert!(domain.matches("http://docs.example.com/", "docs.example.com"));
        assert!(!domain.matches("http://notexample.com/", "notexample.com"));
        let below = Pattern::new("*.example.com").unwrap();
        assert!(!below.matches("http://example.com/", "example.com"));
        assert!(below.matches("http://a.example.com/", "a.example.com"));
        let regex = Pattern::new(r"/tutorial/.*\.html$").unwrap();
        assert!(regex.matches("http://h/tutorial/a.html", "h"));
        assert!(!regex.matches("http://h/library/a.html", "h"));
    }

    #[test]
    fn a_pattern_that_is_no_regular_expression_is_refused_naming_its_flag() {
        let rules = CrawlRules {
            url_denylist: vec!["ok.example".into(), "(unclosed".into()],
            ..CrawlRules::default()
        };
        let why = rules.problem().unwrap();
        assert!(why.starts_with("--url-denylist \"(unclosed\""), "{why}");
        assert_eq!(CrawlRules::default().problem(), None);
    }

    #[test]
    fn given_rules_win_over_defaults_and_zero_is_no_limit() {
        let defaults = CrawlRules {
            url_denylist: vec!["ads.example".into()],
            max_urls: Some(100),
            timeout: Some(60),
            scope: Some(UrlScope::Domain),
            ..CrawlRules::default()
        };
        let given = CrawlRules {
            max_urls: Some(0),
            max_size: Some(1 << 20),
            scope: Some(UrlScope::Any),
            ..CrawlRules::default()
        };
        let rules = given.over(&defaults);
        assert_eq!(rules.url_denylist, vec!["ads.example".to_string()]);
        assert_eq!(rules.max_urls, None, "an explicit 0 lifts the default");
        assert_eq!(rules.max_size, Some(1 << 20));
        assert_eq!(rules.timeout, Some(60));
        assert_eq!(rules.scope, None, "any is no scope");
        assert_eq!(rules.limit(Limit::Timeout), Some(60));
    }
}
