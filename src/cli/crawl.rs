//! How to crawl: the flags `abxd run` and `abxctl add` share — depth, plugins, and the crawl's
//! rules (`supervisor.toml(5)`'s `[crawl]` holds their defaults), named as ArchiveBox names them.

use crate::domain::{CrawlRules, CrawlSpec, Egress, Pattern, UrlScope};
use clap::Args;

/// How to crawl: shared by `abxd run` and `abxctl add`.
#[derive(Debug, Args)]
pub struct CrawlArgs {
    /// Follow discovered links this many levels deep.
    #[arg(long, default_value_t = 0)]
    pub depth: u32,
    /// Only these plugins (comma-separated), instead of every enabled one.
    #[arg(long, value_delimiter = ',')]
    pub plugins: Option<Vec<String>>,
    /// Follow only discovered URLs that match one of these: a domain (that host and those below
    /// it; `*.example.com` only below it) or a regular expression (repeat the flag for more).
    #[arg(long, value_name = "PATTERN", alias = "domain-allowlist", value_parser = pattern)]
    pub url_allowlist: Vec<String>,
    /// Never follow discovered URLs that match one of these (as `--url-allowlist`).
    #[arg(long, value_name = "PATTERN", alias = "domain-denylist", value_parser = pattern)]
    pub url_denylist: Vec<String>,
    /// Follow discovered URLs only on a seed's host, or its domain (and below), or anywhere.
    #[arg(long, value_name = "any|host|domain")]
    pub scope: Option<UrlScope>,
    /// Start no more snapshots than this in the crawl (0: no limit).
    #[arg(long, value_name = "N")]
    pub max_urls: Option<u64>,
    /// Stop the crawl once it archived this much ("500M", "2G"; 0: no limit).
    #[arg(long, value_name = "SIZE", alias = "crawl-max-size", value_parser = size)]
    pub max_size: Option<u64>,
    /// Stop the crawl this long after it first started ("90s", "2h", or seconds; 0: no limit).
    #[arg(long, value_name = "DURATION", alias = "crawl-timeout", value_parser = seconds)]
    pub timeout: Option<u64>,
    /// Stop a snapshot once it archived this much ("50M"; 0: no limit).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub snapshot_max_size: Option<u64>,
    /// Follow no discovered URL that another crawl archived already (seeds are crawled
    /// again: a feed, to find what is new in it).
    #[arg(long)]
    pub only_new: bool,
    /// Let its hooks reach this network although it is not public: an address or
    /// ADDRESS/PREFIX ("10.1.0.0/16"; repeat the flag for more). The metadata address never.
    #[arg(long, value_name = "NETWORK", value_parser = network)]
    pub allow_network: Vec<String>,
    /// Hold its hooks to its egress policy (restricted), or let them reach whatever the host
    /// reaches (unrestricted).
    #[arg(long, value_name = "restricted|unrestricted")]
    pub egress: Option<Egress>,
}

impl CrawlArgs {
    /// The crawl these flags ask for, of `urls` (what they leave out is left to `[crawl]`'s
    /// defaults, merged where the crawl is admitted).
    pub fn spec(&self, urls: Vec<String>) -> CrawlSpec {
        CrawlSpec {
            urls,
            depth: self.depth,
            plugins: self.plugins.clone(),
            rules: self.rules(),
            input: None,
        }
    }

    /// The rules these flags give.
    fn rules(&self) -> CrawlRules {
        CrawlRules {
            url_allowlist: self.url_allowlist.clone(),
            url_denylist: self.url_denylist.clone(),
            scope: self.scope,
            max_urls: self.max_urls,
            max_size: self.max_size,
            timeout: self.timeout,
            snapshot_max_size: self.snapshot_max_size,
            only_new: self.only_new,
            allow_networks: self.allow_network.clone(),
            egress: self.egress,
        }
    }
}

fn pattern(text: &str) -> Result<String, String> {
    Pattern::new(text).map(|_| text.to_string())
}

fn network(text: &str) -> Result<String, String> {
    (text.parse::<crate::egress::policy::Network>()).map(|_| text.to_string())
}

fn size(text: &str) -> Result<u64, String> {
    crate::config::parse_size(text)
}

fn seconds(text: &str) -> Result<u64, String> {
    if let Ok(seconds) = text.trim().parse::<u64>() {
        return Ok(seconds);
    }
    humantime::parse_duration(text.trim())
        .map(|d| d.as_secs())
        .map_err(|err| {
            format!("invalid duration {text:?}: {err} (write it like \"90s\" or \"2h\")")
        })
}
