//! How to crawl: the flags `abxd run` and `abxctl add` share — depth, plugins, and the crawl's
//! rules (`supervisor.toml(5)`'s `[crawl]` holds their defaults), named as ArchiveBox names them.

use crate::domain::{split_tags, CrawlOptions, CrawlRules, CrawlSpec, Egress, Pattern, UrlScope};
use clap::Args;

/// How to crawl: shared by `abxd run`, `abxctl add` and `abxctl schedule add`.
#[derive(Debug, Args)]
pub struct CrawlArgs {
    /// Follow discovered links this many levels deep.
    #[arg(short = 'd', long, default_value_t = 0)]
    pub depth: u32,
    /// Only these plugins (comma-separated), instead of every enabled one.
    #[arg(short = 'p', long, value_delimiter = ',')]
    pub plugins: Option<Vec<String>>,
    /// More plugins to run (comma-separated), added to --plugins (ArchiveBox's --extract; its
    /// output types, such as text/html, are not matched: name the plugins).
    #[arg(long, value_delimiter = ',', value_name = "PLUGINS")]
    pub extract: Vec<String>,
    /// Tag each of its snapshots (comma-separated; repeat the flag for more): shown, and
    /// written to each snapshot's index.jsonl, whence ArchiveBox's import tags them.
    #[arg(short = 't', long = "tag", value_name = "TAGS")]
    pub tags: Vec<String>,
    /// Read what it imports with this parser only ("netscape": the plugin parse_netscape_urls;
    /// "auto", the default: every parser that accepts imports).
    #[arg(long, value_name = "NAME")]
    pub parser: Option<String>,
    /// Archive as this ArchiveBox persona: its directory under the personas directory
    /// ([archivebox] data_dir's personas/, else the data dir's) gives the hooks its browser
    /// profile, cookies.txt and auth.json.
    #[arg(long, value_name = "NAME")]
    pub persona: Option<String>,
    /// Follow only discovered URLs that match one of these: a domain (that host and those below
    /// it; `*.example.com` only below it) or a regular expression (one per line, as ArchiveBox
    /// reads them, or repeat the flag).
    #[arg(long, value_name = "PATTERN", alias = "domain-allowlist", value_parser = patterns)]
    pub url_allowlist: Vec<String>,
    /// Never follow discovered URLs that match one of these (as `--url-allowlist`).
    #[arg(long, value_name = "PATTERN", alias = "domain-denylist", value_parser = patterns)]
    pub url_denylist: Vec<String>,
    /// Follow discovered URLs only on a seed's host, or its registrable domain (and below), or
    /// anywhere.
    #[arg(long, value_name = "any|host|domain")]
    pub scope: Option<UrlScope>,
    /// Start no more snapshots than this in the crawl (0: no limit).
    #[arg(long, value_name = "N")]
    pub max_urls: Option<u64>,
    /// Stop the crawl once it archived this much ("500M", "2G"; 0: no limit).
    #[arg(long = "crawl-max-size", value_name = "SIZE", alias = "max-size", value_parser = size)]
    pub max_size: Option<u64>,
    /// Stop the crawl this long after it first started ("90s", "2h", or seconds; 0: no limit).
    #[arg(long = "crawl-timeout", value_name = "DURATION", alias = "timeout", value_parser = seconds)]
    pub timeout: Option<u64>,
    /// Stop a snapshot once it archived this much ("50M"; 0: no limit).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub snapshot_max_size: Option<u64>,
    /// Run at most this many of its snapshots at once, in place of the limit [limits] sets for
    /// every crawl (within the host's [limits] max_snapshots, which `abxd run` raises to it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub crawl_max_concurrent_snapshots: Option<u64>,
    /// Run at most this many of its snapshots of one site (host key: the registrable domain, or
    /// the address) at once, in place of [politeness] max_per_host.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_per_host: Option<u64>,
    /// Start its snapshots of one site at least this far apart ("2s", "500ms", or seconds; 0:
    /// no wait), in place of [politeness] delay.
    #[arg(long, value_name = "DURATION", value_parser = millis)]
    pub delay: Option<u64>,
    /// Start this crawl before queued crawls of lower priority when a crawl slot frees (higher
    /// first; default 0, negative allowed), and weigh its share of the host's snapshot slots
    /// ([limits] max_snapshots) by it: 1 takes twice the slots of 0, -1 half.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub priority: Option<i64>,
    /// Follow no discovered URL that another crawl archived already (seeds are crawled
    /// again: a feed, to find what is new in it).
    #[arg(long, overrides_with = "no_only_new")]
    pub only_new: bool,
    /// Follow discovered URLs whether or not another crawl archived them, whatever [crawl]
    /// says (--overwrite and --update say the same, as in ArchiveBox).
    #[arg(long, aliases = ["overwrite", "update"], overrides_with = "only_new")]
    pub no_only_new: bool,
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
        let plugins = match (&self.plugins, self.extract.is_empty()) {
            (plugins, true) => plugins.clone(),
            (plugins, false) => {
                let mut all = plugins.clone().unwrap_or_default();
                for plugin in &self.extract {
                    if !all.contains(plugin) {
                        all.push(plugin.clone());
                    }
                }
                Some(all)
            }
        };
        CrawlSpec {
            urls,
            depth: self.depth,
            plugins,
            rules: self.rules(),
            input: None,
            options: CrawlOptions {
                tags: split_tags(self.tags.iter().map(String::as_str)),
                persona: self.persona.clone(),
                parser: self.parser.clone(),
                archivebox: None,
            },
            index_only: false,
            env: Default::default(),
        }
    }

    /// The rules these flags give.
    fn rules(&self) -> CrawlRules {
        CrawlRules {
            url_allowlist: split_lines(&self.url_allowlist),
            url_denylist: split_lines(&self.url_denylist),
            scope: self.scope,
            max_urls: self.max_urls,
            max_size: self.max_size,
            timeout: self.timeout,
            snapshot_max_size: self.snapshot_max_size,
            only_new: match (self.only_new, self.no_only_new) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            max_concurrent_snapshots: self.crawl_max_concurrent_snapshots,
            max_per_host: self.max_per_host,
            delay_ms: self.delay,
            priority: self.priority,
            allow_networks: self.allow_network.clone(),
            egress: self.egress,
        }
    }
}

/// Patterns as ArchiveBox's `Crawl.split_filter_patterns` reads a list: one per line, trimmed,
/// empty lines dropped, each once.
fn split_lines(given: &[String]) -> Vec<String> {
    let mut patterns: Vec<String> = Vec::new();
    for line in given.iter().flat_map(|text| text.lines()) {
        let line = line.trim();
        if !line.is_empty() && !patterns.iter().any(|p| p == line) {
            patterns.push(line.to_string());
        }
    }
    patterns
}

fn patterns(text: &str) -> Result<String, String> {
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        pattern(line)?;
    }
    Ok(text.to_string())
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

/// A duration in milliseconds: "2s", "500ms", or a number of seconds ("1.5").
fn millis(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        if seconds.is_finite() && seconds >= 0.0 {
            return Ok((seconds * 1000.0).round() as u64);
        }
        return Err(format!("invalid duration {text:?}: must not be negative"));
    }
    humantime::parse_duration(text)
        .map(|d| d.as_millis().min(u128::from(u64::MAX)) as u64)
        .map_err(|err| {
            format!("invalid duration {text:?}: {err} (write it like \"2s\" or \"500ms\")")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Add {
        #[command(flatten)]
        crawl: CrawlArgs,
    }

    fn spec(args: &[&str]) -> CrawlSpec {
        let add = Add::try_parse_from(std::iter::once("add").chain(args.iter().copied()));
        add.unwrap().crawl.spec(vec!["https://example.com/".into()])
    }

    /// `archivebox add -d 1 -t news,tech -p title,wget --extract favicon --overwrite
    /// --crawl-max-size 1gb --crawl-timeout 60 --domain-allowlist "a.com\nb.com"`, read as
    /// ArchiveBox reads it.
    #[test]
    fn an_archivebox_add_line_means_what_it_means_to_archivebox() {
        let spec = spec(&[
            "-d",
            "1",
            "-t",
            "news, tech",
            "--tag",
            "later",
            "-p",
            "title,wget",
            "--extract",
            "favicon",
            "--overwrite",
            "--crawl-max-size",
            "1gb",
            "--crawl-timeout",
            "60",
            "--domain-allowlist",
            "a.com\nb.com\n",
            "--crawl-max-concurrent-snapshots",
            "4",
            "--persona",
            "Work",
            "--parser",
            "netscape",
        ]);
        assert_eq!(spec.depth, 1);
        assert_eq!(spec.options.tags, ["news", "tech", "later"]);
        assert_eq!(spec.plugins.unwrap(), ["title", "wget", "favicon"]);
        assert_eq!(spec.rules.only_new, Some(false));
        assert_eq!(spec.rules.max_size, Some(1 << 30));
        assert_eq!(spec.rules.timeout, Some(60));
        assert_eq!(spec.rules.url_allowlist, ["a.com", "b.com"]);
        assert_eq!(spec.rules.max_concurrent_snapshots, Some(4));
        assert_eq!(spec.options.persona.as_deref(), Some("Work"));
        assert_eq!(spec.options.parser.as_deref(), Some("netscape"));
    }

    #[test]
    fn the_last_of_only_new_and_no_only_new_wins() {
        assert_eq!(spec(&["--only-new"]).rules.only_new, Some(true));
        assert_eq!(
            spec(&["--only-new", "--update"]).rules.only_new,
            Some(false)
        );
        assert_eq!(
            spec(&["--no-only-new", "--only-new"]).rules.only_new,
            Some(true)
        );
        assert_eq!(spec(&[]).rules.only_new, None);
        // abxd's own names for the limits still work.
        assert_eq!(
            spec(&["--max-size", "2k", "--timeout", "5"]).rules.timeout,
            Some(5)
        );
    }
}
