//! The rule a URL a hook discovered must pass to become a snapshot: a link on a page from the
//! web must not steer the crawl at local files, other schemes, the host's own services or the
//! cloud's metadata endpoint.
//!
//! Invariants: what is admitted is http or https, normalized as a browser would (scheme and host
//! lower-cased, IDN as punycode, the default port dropped, the fragment dropped), with a host
//! that is neither a cloud metadata address (never) nor — unless the crawl's own seeds were on
//! one — a loopback, link-local, private or unspecified address (`egress::ranges`, the table
//! the kernel's egress policy reads too); everything else is a
//! [`Refusal`] with its reason. Past that rule, a [`CrawlFilter`] applies the crawl's own rules
//! (`domain::CrawlRules`): its scope, then its denylist, then its allowlist. Pure functions of
//! their inputs: no DNS (a public name that resolves to a private address is not caught here).

use crate::domain::{CrawlRules, Pattern, Refusal, UrlScope};
use crate::egress::ranges::{classify, Reach};
use std::collections::HashSet;
use std::net::IpAddr;
use url::{Host, Url};

/// Where a crawl's seeds are: whether any of them is itself on a non-public address (a site
/// served on loopback, a file served by `abxd run`), which lets its links stay there too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seeds {
    pub local: bool,
}

impl Seeds {
    /// What the crawl's seed URLs say (a `file://` seed is served on loopback: local).
    pub fn of(urls: &[String]) -> Seeds {
        let local = urls.iter().any(|url| match Url::parse(url) {
            Ok(url) if url.scheme() == "file" => true,
            Ok(url) => url.host().is_some_and(|host| !is_public(&host)),
            Err(_) => false,
        });
        Seeds { local }
    }

    /// What they say with an import's seeds among them, by their hosts (as a URL writes one).
    pub fn with_hosts<'a>(self, hosts: impl IntoIterator<Item = &'a str>) -> Seeds {
        let local_host = |host: &str| {
            Url::parse(&format!("http://{host}/"))
                .is_ok_and(|url| url.host().is_some_and(|host| !is_public(&host)))
        };
        Seeds {
            local: self.local || hosts.into_iter().any(local_host),
        }
    }
}

/// What is wrong with `url` as a seed an operator gives (`abxctl add`, the socket's `add`), if
/// anything: it must be an http, https or file URL without whitespace, and never a cloud
/// metadata address. (Local addresses are the operator's to seed: their crawl is then local.)
pub fn seed_problem(url: &str) -> Option<String> {
    let shaped = url.split_once("://").is_some_and(|(scheme, rest)| {
        matches!(scheme, "http" | "https" | "file") && !rest.is_empty()
    }) && !url.chars().any(char::is_whitespace);
    if !shaped {
        return Some(format!(
            "{url:?} is not an http://, https:// or file:// URL"
        ));
    }
    let metadata = Url::parse(url)
        .ok()
        .is_some_and(|parsed| parsed.host().is_some_and(|host| is_metadata(&host)));
    metadata.then(|| {
        format!(
            "{url:?} is a cloud metadata address, which abxd never archives (it holds credentials)"
        )
    })
}

/// `url`, discovered by a hook of a crawl whose seeds are `seeds`: normalized, or why not.
pub fn admit(url: &str, seeds: Seeds) -> Result<String, Refusal> {
    let mut parsed = Url::parse(url.trim()).map_err(|_| Refusal::Invalid)?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Refusal::Scheme);
    }
    let host = parsed.host().ok_or(Refusal::Invalid)?;
    if is_metadata(&host) {
        return Err(Refusal::MetadataAddress);
    }
    if !seeds.local && !is_public(&host) {
        return Err(Refusal::PrivateAddress);
    }
    parsed.set_fragment(None);
    Ok(parsed.into())
}

/// The domain a crawl of `host` stays in under `--scope domain`: its registrable domain, by the
/// Public Suffix List (`blog.example.co.uk` → `example.co.uk`, never `co.uk`; `a.github.io` →
/// itself, since `github.io` is a suffix anyone registers below) — or, for an address or a name
/// the list makes nothing of (`localhost`), the host without a leading `www.`.
pub fn registrable_domain(host: &str) -> &str {
    let address = host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[');
    let listed = (!address).then(|| psl::domain_str(host)).flatten();
    listed.unwrap_or_else(|| host.strip_prefix("www.").unwrap_or(host))
}

/// The host key politeness counts `url`'s snapshot under (see `docs/design.md`, "Politeness"):
/// its host's registrable domain (`a.example.co.uk` and `b.example.co.uk` share
/// `example.co.uk`), an address as itself (`127.0.0.2`, whatever the port), lower case; `""`
/// for what is no network host (an import's `input:` snapshot, a `file:` URL), which no limit
/// holds.
pub fn host_key(url: &str) -> String {
    let Ok(url) = Url::parse(url) else {
        return String::new();
    };
    if !matches!(url.scheme(), "http" | "https" | "ftp" | "ws" | "wss") {
        return String::new();
    }
    match url.host_str() {
        Some(host) => registrable_domain(&host.to_ascii_lowercase()).to_string(),
        None => String::new(),
    }
}

/// The host and port (`None`: the scheme's default) of `url`, as a scope compares them.
pub fn host_and_port(url: &str) -> Option<(String, Option<u16>)> {
    let url = Url::parse(url).ok()?;
    Some((url.host_str()?.to_string(), url.port()))
}

/// The rule of one crawl: [`admit`] for its seeds, then its own rules.
#[derive(Debug, Clone)]
pub struct CrawlFilter {
    seeds: Seeds,
    /// The seeds' hosts and ports (for `--scope host`), lower case.
    seed_hosts: HashSet<(String, Option<u16>)>,
    /// The seeds' registrable domains (for `--scope domain`).
    seed_domains: HashSet<String>,
    scope: Option<UrlScope>,
    allow: Vec<Pattern>,
    deny: Vec<Pattern>,
}

impl CrawlFilter {
    /// The filter of a crawl seeded with `urls` under `rules`; why not, if a pattern is wrong
    /// (checked at `add`, so only a database edited by hand gets here with one).
    pub fn new(urls: &[String], rules: &CrawlRules) -> Result<CrawlFilter, String> {
        let patterns = |list: &[String]| -> Result<Vec<Pattern>, String> {
            list.iter().map(|p| Pattern::new(p)).collect()
        };
        let seed_hosts: Vec<(String, Option<u16>)> =
            urls.iter().filter_map(|url| host_and_port(url)).collect();
        let filter = CrawlFilter {
            seeds: Seeds::of(urls),
            seed_hosts: HashSet::new(),
            seed_domains: HashSet::new(),
            scope: rules.scope,
            allow: patterns(&rules.url_allowlist)?,
            deny: patterns(&rules.url_denylist)?,
        };
        Ok(filter.with_imported(seed_hosts))
    }

    /// The filter with the hosts and ports of an import's seeds among its seeds' (the store
    /// keeps them apart from the crawl's `urls`: `crawls().seed_hosts`).
    pub fn with_imported(
        mut self,
        hosts: impl IntoIterator<Item = (String, Option<u16>)>,
    ) -> CrawlFilter {
        for (host, port) in hosts {
            self.seeds = self.seeds.with_hosts([host.as_str()]);
            self.seed_domains
                .insert(registrable_domain(&host).to_string());
            self.seed_hosts.insert((host, port));
        }
        self
    }

    /// `url`, discovered by one of the crawl's hooks: normalized, or why not.
    pub fn admit(&self, url: &str) -> Result<String, Refusal> {
        let url = admit(url, self.seeds)?;
        let parsed = Url::parse(&url).map_err(|_| Refusal::Invalid)?;
        let (host, port) = (parsed.host_str().unwrap_or_default(), parsed.port());
        let in_scope = match self.scope {
            None | Some(UrlScope::Any) => true,
            Some(UrlScope::Host) => self.seed_hosts.contains(&(host.to_string(), port)),
            // (The host, or a domain it is below, is a seed's.)
            Some(UrlScope::Domain) => {
                std::iter::successors(Some(host), |name| name.split_once('.').map(|(_, up)| up))
                    .any(|name| self.seed_domains.contains(name))
            }
        };
        if !in_scope {
            return Err(Refusal::Scope);
        }
        if self.deny.iter().any(|p| p.matches(&url, host)) {
            return Err(Refusal::Denylist);
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|p| p.matches(&url, host)) {
            return Err(Refusal::Allowlist);
        }
        Ok(url)
    }
}

/// The cloud metadata endpoints (AWS, GCP, Azure, … share the IPv4 one; AWS's IPv6 one).
fn is_metadata(host: &Host<&str>) -> bool {
    let reach = match host {
        Host::Ipv4(ip) => classify(IpAddr::V4(*ip)),
        Host::Ipv6(ip) => classify(IpAddr::V6(*ip)),
        Host::Domain(name) => return *name == "metadata.google.internal",
    };
    reach == Some(Reach::Metadata)
}

/// Whether `host` may be a public address: not loopback, link-local, private, unspecified (or
/// the names of loopback: `localhost` and below it).
fn is_public(host: &Host<&str>) -> bool {
    match host {
        Host::Ipv4(ip) => is_public_ip(IpAddr::V4(*ip)),
        Host::Ipv6(ip) => is_public_ip(IpAddr::V6(*ip)),
        Host::Domain(name) => *name != "localhost" && !name.ends_with(".localhost"),
    }
}

fn is_public_ip(ip: IpAddr) -> bool {
    classify(ip).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PUBLIC: Seeds = Seeds { local: false };
    const LOCAL: Seeds = Seeds { local: true };

    #[test]
    fn other_schemes_and_non_urls_are_refused() {
        for url in [
            "file:///etc/shadow",
            "javascript:alert(1)",
            "data:text/html,<b>x</b>",
            "ftp://example.com/file",
            "mailto:a@example.com",
        ] {
            assert_eq!(admit(url, LOCAL), Err(Refusal::Scheme), "{url}");
        }
        for url in ["/etc/shadow", "not a url", "http://", ""] {
            assert_eq!(admit(url, LOCAL), Err(Refusal::Invalid), "{url}");
        }
    }

    #[test]
    fn the_metadata_address_is_refused_even_to_a_local_crawl() {
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/",
            "http://[::ffff:169.254.169.254]/",
            "http://metadata.google.internal/computeMetadata/v1/",
            // (Spelled otherwise, parsed as browsers do: still that address.)
            "http://0xa9fea9fe/",
            "http://2852039166/",
        ] {
            assert_eq!(admit(url, LOCAL), Err(Refusal::MetadataAddress), "{url}");
        }
    }

    #[test]
    fn an_operators_seed_may_be_local_or_a_file_but_never_the_metadata_address() {
        for url in [
            "http://127.0.0.1:9/",
            "file:///srv/site/",
            "https://example.com/",
        ] {
            assert_eq!(seed_problem(url), None, "{url}");
        }
        for url in ["not a url", "ftp://example.com/", "http://a b/"] {
            assert!(
                seed_problem(url).unwrap().contains("is not an http://"),
                "{url}"
            );
        }
        for url in ["http://169.254.169.254/latest/", "http://[fd00:ec2::254]/"] {
            assert!(seed_problem(url).unwrap().contains("metadata"), "{url}");
        }
    }

    #[test]
    fn private_addresses_only_for_a_crawl_whose_seed_is_on_one() {
        for url in [
            "http://127.0.0.1:8000/",
            "http://localhost/",
            "http://a.localhost/",
            "http://10.1.2.3/",
            "http://192.168.0.1/",
            "http://172.16.0.1/",
            "http://100.64.0.1/",
            "http://169.254.1.1/",
            "http://0.0.0.0/",
            "http://[::1]/",
            "http://[fc00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://0x7f000001/",
        ] {
            assert_eq!(admit(url, PUBLIC), Err(Refusal::PrivateAddress), "{url}");
            assert!(admit(url, LOCAL).is_ok(), "{url}");
        }
        assert!(admit("http://93.184.216.34/", PUBLIC).is_ok());
        assert!(admit("http://[2606:2800:220:1::]/", PUBLIC).is_ok());
    }

    #[test]
    fn admitted_urls_are_normalized() {
        assert_eq!(
            admit("HTTP://Example.COM:80/a/b?q=1#frag", PUBLIC).unwrap(),
            "http://example.com/a/b?q=1"
        );
        assert_eq!(
            admit("https://example.com:443", PUBLIC).unwrap(),
            "https://example.com/"
        );
        assert_eq!(
            admit("https://bücher.example/", PUBLIC).unwrap(),
            "https://xn--bcher-kva.example/"
        );
        assert_eq!(
            admit("http://example.com:8080/x", PUBLIC).unwrap(),
            "http://example.com:8080/x"
        );
    }

    fn filter(seed: &str, rules: CrawlRules) -> CrawlFilter {
        CrawlFilter::new(&[seed.to_string()], &rules).unwrap()
    }

    #[test]
    fn a_scope_keeps_the_crawl_on_its_seeds_host_or_domain() {
        let host = filter(
            "https://www.example.com/",
            CrawlRules {
                scope: Some(UrlScope::Host),
                ..CrawlRules::default()
            },
        );
        assert!(host.admit("https://WWW.example.com/a#x").is_ok());
        assert_eq!(host.admit("https://docs.example.com/"), Err(Refusal::Scope));
        assert_eq!(
            host.admit("https://www.example.com:8443/"),
            Err(Refusal::Scope)
        );
        let domain = filter(
            "https://www.example.com/",
            CrawlRules {
                scope: Some(UrlScope::Domain),
                ..CrawlRules::default()
            },
        );
        for url in ["https://example.com/", "http://docs.example.com/x"] {
            assert!(domain.admit(url).is_ok(), "{url}");
        }
        for url in ["https://notexample.com/", "https://example.org/"] {
            assert_eq!(domain.admit(url), Err(Refusal::Scope), "{url}");
        }
        // A registrable domain, by the Public Suffix List.
        let uk = filter(
            "https://blog.example.co.uk/",
            CrawlRules {
                scope: Some(UrlScope::Domain),
                ..CrawlRules::default()
            },
        );
        for url in ["https://example.co.uk/", "https://shop.example.co.uk/"] {
            assert!(uk.admit(url).is_ok(), "{url}");
        }
        for url in ["https://other.co.uk/", "https://co.uk/"] {
            assert_eq!(uk.admit(url), Err(Refusal::Scope), "{url}");
        }
    }

    #[test]
    fn an_imports_seed_hosts_count_as_its_seeds_for_scope_and_reach() {
        let imported = [("docs.example.org", None), ("127.0.0.1", Some(8080))];
        let with = |scope| {
            let rules = CrawlRules {
                scope,
                ..CrawlRules::default()
            };
            let hosts = imported.map(|(host, port)| (host.to_string(), port));
            CrawlFilter::new(&[], &rules).unwrap().with_imported(hosts)
        };
        let (host, domain) = (with(Some(UrlScope::Host)), with(Some(UrlScope::Domain)));
        for url in ["https://docs.example.org/a", "http://127.0.0.1:8080/b"] {
            assert!(host.admit(url).is_ok(), "{url}");
        }
        assert_eq!(host.admit("http://127.0.0.1:8081/"), Err(Refusal::Scope));
        assert!(domain.admit("https://www.example.org/").is_ok());
        assert_eq!(domain.admit("https://example.com/"), Err(Refusal::Scope));
    }

    #[test]
    fn a_host_key_is_the_registrable_domain_or_the_address() {
        for (url, key) in [
            ("https://blog.example.co.uk/a", "example.co.uk"),
            ("http://WWW.Example.com:8080/", "example.com"),
            ("http://127.0.0.2:8001/x", "127.0.0.2"),
            ("http://[::1]:80/", "[::1]"),
            ("http://localhost:3000/", "localhost"),
            ("input:0190", ""),
            ("file:///tmp/x.html", ""),
        ] {
            assert_eq!(host_key(url), key, "{url}");
        }
    }

    #[test]
    fn a_registrable_domain_comes_from_the_public_suffix_list() {
        for (host, domain) in [
            ("blog.example.co.uk", "example.co.uk"),
            ("www.example.com", "example.com"),
            ("a.b.example.com", "example.com"),
            ("someone.github.io", "someone.github.io"),
            ("localhost", "localhost"),
            ("127.0.0.1", "127.0.0.1"),
            ("[::1]", "[::1]"),
        ] {
            assert_eq!(registrable_domain(host), domain, "{host}");
        }
    }

    #[test]
    fn the_denylist_wins_over_the_allowlist_and_the_allowlist_admits_only_its_matches() {
        let lists = filter(
            "https://example.com/",
            CrawlRules {
                url_allowlist: vec![r"/docs/".into(), "cdn.example.net".into()],
                url_denylist: vec![r"\.pdf$".into()],
                ..CrawlRules::default()
            },
        );
        assert!(lists.admit("https://example.com/docs/a.html").is_ok());
        assert!(lists.admit("https://img.cdn.example.net/x.png").is_ok());
        assert_eq!(
            lists.admit("https://example.com/docs/a.pdf"),
            Err(Refusal::Denylist)
        );
        assert_eq!(
            lists.admit("https://example.com/blog/"),
            Err(Refusal::Allowlist)
        );
        // The base rule comes first: no list admits another scheme.
        assert_eq!(lists.admit("file:///docs/"), Err(Refusal::Scheme));
    }

    #[test]
    fn a_crawl_is_local_when_a_seed_is_on_a_non_public_address_or_a_file() {
        let seeds =
            |urls: &[&str]| Seeds::of(&urls.iter().map(|u| u.to_string()).collect::<Vec<_>>());
        assert!(seeds(&["http://127.0.0.1:9/"]).local);
        assert!(seeds(&["file:///srv/site/index.html"]).local);
        assert!(seeds(&["https://example.com/", "http://localhost:8000/"]).local);
        assert!(!seeds(&["https://example.com/"]).local);
    }
}
