//! What a crawl was asked and what it turned away, as `abxctl show` prints them: its rules on one
//! line, its options a line each, and the links and connects it refused by reason.
//!
//! Invariant: what came from outside (URLs, patterns, tags) is printed escaped.

use crate::domain::{CrawlOptions, CrawlRules, Limit, Refusal};
use crate::printable;
use crate::store::RefusedUrls;
use std::collections::BTreeMap;
use std::time::Duration;

/// The links the crawl's hooks discovered and the URL rule refused: a line per reason, with the
/// first ones refused (shown escaped: they come from pages); and what its egress policy refused.
pub(super) fn refused_lines(refused: &BTreeMap<Refusal, RefusedUrls>, out: &mut String) {
    for (reason, urls) in refused {
        if urls.first.is_empty() {
            // (Its egress policy's: connects and sends the kernel refused, no URL named.)
            out.push_str(&format!(
                "  refused: {} {reason} (connects or sends of its hooks)\n",
                urls.count
            ));
            continue;
        }
        let more = if urls.count > urls.first.len() as u64 {
            ", …"
        } else {
            ""
        };
        out.push_str(&format!(
            "  refused: {} {reason}: {}{more}\n",
            urls.count,
            printable::line(&urls.first.join(", "))
        ));
    }
}

/// A crawl's rules as shown, if it has any: `scope host, denylist \.pdf$, max_urls 3`.
pub(super) fn rules_line(rules: &CrawlRules) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(scope) = rules.scope {
        parts.push(format!("scope {scope}"));
    }
    for (name, list) in [
        ("allowlist", &rules.url_allowlist),
        ("denylist", &rules.url_denylist),
    ] {
        if !list.is_empty() {
            parts.push(format!("{name} {}", printable::line(&list.join(" "))));
        }
    }
    if rules.only_new() {
        parts.push("only_new".into());
    }
    if let Some(most) = rules.max_concurrent_snapshots {
        parts.push(format!("max_concurrent_snapshots {most}"));
    }
    if let Some(most) = rules.max_per_host {
        parts.push(format!("max_per_host {most}"));
    }
    if let Some(ms) = rules.delay_ms {
        parts.push(format!("delay {}", super::short_duration(ms as i64)));
    }
    if let Some(priority) = rules.priority {
        parts.push(format!("priority {priority}"));
    }
    for limit in Limit::ALL {
        if let Some(value) = rules.limit(*limit) {
            let shown = match limit {
                Limit::MaxUrls => value.to_string(),
                Limit::Timeout => {
                    humantime::format_duration(Duration::from_secs(value)).to_string()
                }
                Limit::MaxSize | Limit::SnapshotMaxSize => format!("{value} bytes"),
                Limit::MaxBackoffs => value.to_string(),
            };
            parts.push(format!("{limit} {shown}"));
        }
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// A crawl's ArchiveBox Crawl, tags, persona and parser, a line each that it has.
pub(super) fn options_lines(options: &CrawlOptions, out: &mut String) {
    if let Some(served) = &options.archivebox {
        let (id, user) = (printable::line(&served.id), printable::line(&served.user));
        out.push_str(&format!(
            "  ArchiveBox's: its Crawl {id}, queued there by {user}\n"
        ));
    }
    if !options.tags.is_empty() {
        let tags = options.tags.join(", ");
        out.push_str(&format!("  tags: {}\n", printable::line(&tags)));
    }
    if let Some(persona) = &options.persona {
        out.push_str(&format!("  persona: {}\n", printable::line(persona)));
    }
    if let Some(parser) = &options.parser {
        out.push_str(&format!("  parser: {}\n", printable::line(parser)));
    }
}
