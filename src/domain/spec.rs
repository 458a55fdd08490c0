//! A crawl's spec: the request for one crawl, whole — its seeds or what to import, how deep,
//! which plugins, and its rules — as `abxctl add`, `abxd run`, a schedule and the control
//! protocol carry it from the flag to the crawl's row.
//!
//! Invariants: one value from the edge to the store, never unpacked and rebuilt on the way (a new
//! crawl option is a field here, its flag, and where it takes effect); `[crawl]`'s defaults are
//! merged into it in one place, [`CrawlSpec::over`]; [`CrawlSpec::problem`] is the one judgement
//! of whether a spec makes a crawl, whoever asks.

use super::rules::CrawlRules;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one crawl is asked to be.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrawlSpec {
    /// Its seeds (none when it imports `input`).
    pub urls: Vec<String>,
    /// Follow discovered links this many levels deep.
    pub depth: u32,
    /// The plugins to run; every enabled one when absent.
    pub plugins: Option<Vec<String>>,
    /// Its own rules: as asked, over `[crawl]`'s defaults once merged ([`CrawlSpec::over`]).
    pub rules: CrawlRules,
    /// What to import instead of `urls` (bookmarks, a feed, JSONL, text): the crawl's first
    /// snapshot parses it into its seeds.
    pub input: Option<String>,
    /// What ArchiveBox's `add` also says of a crawl: its tags, its persona, its parser.
    #[serde(skip_serializing_if = "CrawlOptions::is_empty")]
    pub options: CrawlOptions,
    /// Record the crawl without running it (`--index-only`): it is added paused, and runs once
    /// resumed (`abxctl resume`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub index_only: bool,
    /// Variables its hooks get above every other setting (environment, `supervisor.toml`,
    /// `ArchiveBox.conf`): the frozen config of the ArchiveBox Crawl it runs (`[archivebox]
    /// serve_queue`), as ArchiveBox gives a Crawl's config to its hooks.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// What a crawl carries besides its seeds and rules, as ArchiveBox's `add` takes it: stored with
/// the crawl (and a schedule) whole, read where each takes effect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrawlOptions {
    /// Tags of each of its snapshots (`--tag`), as ArchiveBox tags them: shown, and written to
    /// each snapshot's `index.jsonl`, from which ArchiveBox's import tags its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The ArchiveBox persona its hooks archive as (`--persona`): the directory of that name
    /// under the personas directory — its browser profile, `cookies.txt` and `auth.json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// The one parser that reads what it imports (`--parser netscape`: the plugin
    /// `parse_netscape_urls`), instead of every one that accepts imports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parser: Option<String>,
    /// The ArchiveBox Crawl it runs, when abxd took it from an ArchiveBox collection's queue
    /// (`[archivebox] serve_queue`): ArchiveBox's rows follow its progress.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archivebox: Option<ArchiveBoxCrawl>,
}

/// An ArchiveBox Crawl a crawl runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveBoxCrawl {
    /// Its id (32 hex digits).
    pub id: String,
    /// The ArchiveBox user who queued it: its snapshots are filed under that user's directory.
    pub user: String,
    /// When the crawl runs some of the Crawl's Snapshots again (ArchiveBox queued them anew: a
    /// redo from its UI), those Snapshots: the crawl's seeds, each with its identity in
    /// ArchiveBox, so that what it makes replaces what they had. Empty for the Crawl's first run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redo: Vec<RedoSnapshot>,
}

/// An ArchiveBox Snapshot run again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedoSnapshot {
    /// Its id (the UUID of abxd's snapshot that runs it).
    pub uuid: String,
    pub url: String,
    /// When it was bookmarked (Unix ms): with its user, URL and id, where its directory lies.
    pub bookmarked_at: i64,
}

impl CrawlOptions {
    pub fn is_empty(&self) -> bool {
        *self == CrawlOptions::default()
    }

    /// The plugin `--parser NAME` names: `parse_NAME_urls` (a plugin's own name is taken as it
    /// is). `auto` names none: every parser that accepts imports runs.
    pub fn parser_plugin(&self) -> Option<String> {
        let name = self.parser.as_deref()?.trim();
        match name {
            "" | "auto" => None,
            name if name.starts_with("parse_") => Some(name.to_string()),
            name => Some(format!("parse_{name}_urls")),
        }
    }

    /// Why these options make no crawl, if they do not (naming the flag).
    pub fn problem(&self) -> Option<String> {
        if let Some(tag) = self.tags.iter().find(|t| t.contains(',')) {
            return Some(format!("--tag {tag:?}: a tag holds no comma"));
        }
        let persona = self.persona.as_deref()?;
        let bad = persona.is_empty()
            || persona.starts_with('.')
            || persona.contains('/')
            || persona.chars().any(char::is_control);
        bad.then(|| {
            format!(
                "--persona {persona:?}: a persona is the name of a directory (no '/', not \
                 starting with '.')"
            )
        })
    }
}

/// Tags as ArchiveBox's `--tag` takes them: comma-separated, each trimmed, empty ones dropped,
/// each once (told apart as ArchiveBox tells them: not by case), in the order given.
pub fn split_tags<'a>(given: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    for tag in given.into_iter().flat_map(|text| text.split(',')) {
        let tag = tag.trim();
        if !tag.is_empty() && !tags.iter().any(|t| t.to_lowercase() == tag.to_lowercase()) {
            tags.push(tag.to_string());
        }
    }
    tags
}

impl CrawlSpec {
    /// A crawl of `urls`, `depth` deep, with every enabled plugin and no rules of its own.
    pub fn of_urls(urls: Vec<String>, depth: u32) -> CrawlSpec {
        CrawlSpec {
            urls,
            depth,
            ..CrawlSpec::default()
        }
    }

    /// This spec with its rules over `defaults` (`[crawl]`): what a crawl asked for is kept,
    /// what it left out is the default (see [`CrawlRules::over`]).
    pub fn over(self, defaults: &CrawlRules) -> CrawlSpec {
        CrawlSpec {
            rules: self.rules.over(defaults),
            ..self
        }
    }

    /// Why this spec makes no crawl, if it does not: no seed and nothing to import, both, an
    /// empty import, or a rule that is wrong (naming its flag). Seeds are judged by the URL rule
    /// on their own (`url_rule::seed_problem`), plugins by the catalog that runs them.
    pub fn problem(&self) -> Option<String> {
        match (&self.input, self.urls.is_empty()) {
            (None, true) => Some("a crawl needs at least one URL".into()),
            (Some(_), false) => Some("a crawl takes URLs or an input to import, not both".into()),
            (Some(text), true) if text.trim().is_empty() => {
                Some("the input to import is empty".into())
            }
            _ => self.rules.problem().or_else(|| self.options.problem()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_needs_seeds_or_an_input_but_not_both() {
        assert!(CrawlSpec::default()
            .problem()
            .unwrap()
            .contains("at least one URL"));
        let both = CrawlSpec {
            input: Some("http://a/".into()),
            ..CrawlSpec::of_urls(vec!["http://a/".into()], 0)
        };
        assert!(both.problem().unwrap().contains("not both"));
        let empty = CrawlSpec {
            input: Some(" \n".into()),
            ..CrawlSpec::default()
        };
        assert!(empty.problem().unwrap().contains("empty"));
        assert_eq!(
            CrawlSpec::of_urls(vec!["http://a/".into()], 1).problem(),
            None
        );
    }

    #[test]
    fn a_wrong_rule_is_named_by_its_flag() {
        let spec = CrawlSpec {
            rules: CrawlRules {
                url_allowlist: vec!["(".into()],
                ..CrawlRules::default()
            },
            ..CrawlSpec::of_urls(vec!["http://a/".into()], 0)
        };
        assert!(spec.problem().unwrap().starts_with("--url-allowlist"));
    }

    #[test]
    fn merging_defaults_keeps_what_was_asked_and_fills_the_rest() {
        let asked = CrawlSpec {
            rules: CrawlRules {
                max_urls: Some(5),
                ..CrawlRules::default()
            },
            ..CrawlSpec::of_urls(vec!["http://a/".into()], 2)
        };
        let defaults = CrawlRules {
            max_urls: Some(100),
            timeout: Some(60),
            ..CrawlRules::default()
        };
        let merged = asked.clone().over(&defaults);
        assert_eq!(merged.rules.max_urls, Some(5));
        assert_eq!(merged.rules.timeout, Some(60));
        assert_eq!((merged.urls, merged.depth), (asked.urls, asked.depth));
    }

    #[test]
    fn tags_are_split_on_commas_trimmed_and_kept_once() {
        assert_eq!(
            split_tags(["news, tech,,News", " a b "]),
            vec!["news", "tech", "a b"]
        );
    }

    #[test]
    fn a_parser_names_its_plugin_and_auto_names_none() {
        let parser = |name: &str| CrawlOptions {
            parser: Some(name.into()),
            ..CrawlOptions::default()
        };
        assert_eq!(
            parser("netscape").parser_plugin().as_deref(),
            Some("parse_netscape_urls")
        );
        assert_eq!(
            parser("parse_rss_urls").parser_plugin().as_deref(),
            Some("parse_rss_urls")
        );
        assert_eq!(parser("auto").parser_plugin(), None);
    }

    #[test]
    fn a_persona_is_a_plain_directory_name() {
        let persona = |name: &str| CrawlOptions {
            persona: Some(name.into()),
            ..CrawlOptions::default()
        };
        assert_eq!(persona("Work").problem(), None);
        for bad in ["", "../x", "a/b", ".hidden"] {
            assert!(
                persona(bad).problem().unwrap().starts_with("--persona"),
                "{bad}"
            );
        }
    }

    /// On the wire a spec is the fields of an `add` request as they always were.
    #[test]
    fn a_spec_reads_the_fields_an_add_request_always_had() {
        let spec: CrawlSpec =
            serde_json::from_str(r#"{"urls":["http://a/"],"depth":1,"plugins":["title"]}"#)
                .unwrap();
        assert_eq!(spec.plugins, Some(vec!["title".to_string()]));
        assert!(serde_json::from_str::<CrawlSpec>(r#"{"urls":[],"deep":1}"#).is_err());
    }
}
