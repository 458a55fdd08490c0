//! What a turn of serving ArchiveBox's queue said (its stdout, a JSON record a line), read into
//! what the daemon does next; and a claimed Crawl made into the spec of abxd's crawl.
//!
//! Invariant: pure — lines in, values out; a line that is not a record the daemon knows is
//! kept as an error to log, never a panic.

use crate::domain::{
    split_tags, ArchiveBoxCrawl, CrawlOptions, CrawlRules, CrawlSpec, RedoSnapshot,
};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// A Crawl claimed in ArchiveBox, as the turn read it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct Claimed {
    pub archivebox_crawl: String,
    /// The ArchiveBox user who queued it.
    pub user: String,
    pub urls: Vec<String>,
    pub depth: u32,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub config: BTreeMap<String, Value>,
    #[serde(default)]
    pub persona: Option<String>,
    /// The plugins to run, when not those its config's `PLUGINS` names: a redo of the plugins
    /// that failed (ArchiveBox's `RETRY_PLUGINS`).
    #[serde(default)]
    pub plugins: Option<Vec<String>>,
    /// Its Snapshots ArchiveBox queued again, when this is a redo of them (`urls` are theirs).
    #[serde(default)]
    pub redo: Vec<RedoSnapshot>,
}

/// What ArchiveBox changed of a Crawl, for abxd to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Control {
    Pause,
    Resume,
    Cancel,
}

impl std::fmt::Display for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Control::Pause => "paused",
            Control::Resume => "resumed",
            Control::Cancel => "cancelled",
        })
    }
}

/// One record of a turn's output.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(super) enum Said {
    Claimed(Claimed),
    Seen {
        archivebox_crawl: String,
        status: String,
    },
    Control {
        archivebox_crawl: String,
        action: Control,
    },
    Mirrored {
        archivebox_crawl: String,
        snapshot: String,
    },
    Released {
        archivebox_crawl: String,
    },
    Error {
        message: String,
    },
}

/// The records of a turn's output; a line that is none is an [`Said::Error`] naming it.
pub(super) fn records(lines: &[String]) -> Vec<Said> {
    (lines.iter())
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|err| Said::Error {
                message: format!("a line that is no record ({err}): {}", shortened(line)),
            })
        })
        .collect()
}

fn shortened(line: &str) -> String {
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// Keys of a Crawl's config that never become a hook's variables: what decides where and as
/// what a process runs, and abxd's own.
fn kept_out(key: &str) -> bool {
    const KEPT_OUT: &[&str] = &[
        "PATH",
        "HOME",
        "USER",
        "SHELL",
        "DATA_DIR",
        "SNAP_DIR",
        "CRAWL_DIR",
        "TMP_DIR",
        "EXTRA_CONTEXT",
        "PYTHONPATH",
        "NODE_OPTIONS",
        "NODE_PATH",
    ];
    let well_formed = key.starts_with(|c: char| c.is_ascii_uppercase())
        && key
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    !well_formed || KEPT_OUT.contains(&key) || key.starts_with("LD_") || key.starts_with("ABXD_")
}

impl Claimed {
    /// The spec of the crawl that runs this Crawl (or a redo of some of its Snapshots): its
    /// URLs, depth and tags, its persona, the plugins asked for or its config's `PLUGINS` names
    /// (all enabled ones when it names none), and its frozen config as its hooks' variables (as
    /// abx-dl writes a config value into one).
    pub(super) fn spec(&self) -> CrawlSpec {
        let named = (self.config.get("PLUGINS"))
            .map(crate::plugins::manifest::env_text)
            .unwrap_or_default();
        let named = named.split(',').map(str::to_string).collect();
        let plugins: Vec<String> = (self.plugins.clone().unwrap_or(named).iter())
            .map(|name| name.trim().to_ascii_lowercase())
            .filter(|name| !name.is_empty())
            .collect();
        let env = (self.config.iter())
            .filter(|(key, _)| !kept_out(key))
            .map(|(key, value)| (key.clone(), crate::plugins::manifest::env_text(value)))
            .collect();
        CrawlSpec {
            rules: self.rules(),
            options: CrawlOptions {
                tags: split_tags(self.tags.iter().map(String::as_str)),
                persona: self.persona.clone(),
                archivebox: Some(ArchiveBoxCrawl {
                    id: self.archivebox_crawl.clone(),
                    user: self.user.clone(),
                    redo: self.redo.clone(),
                }),
                ..CrawlOptions::default()
            },
            env,
            plugins: (!plugins.is_empty()).then_some(plugins),
            ..CrawlSpec::of_urls(self.urls.clone(), self.depth)
        }
    }
}

impl Claimed {
    /// The rules the Crawl's config sets, as ArchiveBox reads them: its allow and deny lists
    /// (`split_filter_patterns`: a pattern a line, or a list), its limits (0: none) and
    /// `ONLY_NEW`. What it leaves unset is `[crawl]`'s.
    fn rules(&self) -> CrawlRules {
        let text = |key: &str| self.config.get(key).map(crate::plugins::manifest::env_text);
        let patterns = |key: &str| -> Vec<String> {
            match self.config.get(key) {
                Some(Value::Array(items)) => (items.iter())
                    .map(crate::plugins::manifest::env_text)
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty())
                    .collect(),
                Some(other) => (crate::plugins::manifest::env_text(other).lines())
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(String::from)
                    .collect(),
                None => Vec::new(),
            }
        };
        let limit = |key: &str| {
            let value = text(key)?.trim().parse::<f64>().ok()?;
            (value >= 1.0).then_some(value as u64)
        };
        CrawlRules {
            url_allowlist: patterns("URL_ALLOWLIST"),
            url_denylist: patterns("URL_DENYLIST"),
            max_urls: limit("CRAWL_MAX_URLS"),
            max_size: limit("CRAWL_MAX_SIZE"),
            timeout: limit("CRAWL_TIMEOUT"),
            snapshot_max_size: limit("SNAPSHOT_MAX_SIZE"),
            max_concurrent_snapshots: limit("CRAWL_MAX_CONCURRENT_SNAPSHOTS"),
            only_new: text("ONLY_NEW").map(|v| !crate::plugins::manifest::is_false(&v)),
            ..CrawlRules::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_is_a_record_and_a_stray_line_an_error() {
        let lines = [
            r#"{"type": "seen", "archivebox_crawl": "ab", "status": "started"}"#,
            r#"{"type": "control", "archivebox_crawl": "ab", "action": "cancel"}"#,
            "",
            "Traceback (most recent call last):",
        ]
        .map(String::from);
        let said = records(&lines);
        assert_eq!(
            said[..2],
            [
                Said::Seen {
                    archivebox_crawl: "ab".into(),
                    status: "started".into()
                },
                Said::Control {
                    archivebox_crawl: "ab".into(),
                    action: Control::Cancel
                },
            ]
        );
        assert_eq!(said.len(), 3);
        assert!(matches!(&said[2], Said::Error { message } if message.contains("Traceback")));
    }

    #[test]
    fn a_claimed_crawl_keeps_its_urls_depth_tags_and_config_as_variables() {
        let line = r#"{"type": "claimed", "archivebox_crawl": "06b0", "user": "admin",
            "urls": ["http://a/"],
            "depth": 1, "tags": ["news", "News"], "persona": "Default",
            "config": {"TIMEOUT": 60, "SAVE_WGET": true, "CHROME_ARGS": ["--a"], "PATH": "/x",
                       "LD_PRELOAD": "/evil.so", "lower": "1", "ABXD_PROCESS_ID": "1",
                       "PLUGINS": "title, Wget"}}"#;
        let [Said::Claimed(claimed)] = &records(&[line.replace('\n', " ")])[..] else {
            panic!("not one claim");
        };
        let spec = claimed.spec();
        assert_eq!(
            (spec.urls.clone(), spec.depth),
            (vec!["http://a/".into()], 1)
        );
        assert_eq!(spec.options.tags, ["news"]);
        let served = spec.options.archivebox.clone().unwrap();
        assert_eq!(
            (served.id.as_str(), served.user.as_str()),
            ("06b0", "admin")
        );
        assert_eq!(spec.options.persona.as_deref(), Some("Default"));
        let env: Vec<(&str, &str)> = (spec.env.iter())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            env,
            [
                ("CHROME_ARGS", "[\"--a\"]"),
                ("PLUGINS", "title, Wget"),
                ("SAVE_WGET", "True"),
                ("TIMEOUT", "60")
            ]
        );
        assert_eq!(spec.plugins, Some(vec!["title".into(), "wget".into()]));
    }

    #[test]
    fn a_claimed_crawls_config_gives_its_rules_as_archivebox_reads_them() {
        let line = r#"{"type": "claimed", "archivebox_crawl": "06b0", "user": "system",
            "urls": ["http://a/"], "depth": 2, "config": {"URL_ALLOWLIST": "a\\.com\n\nb\\.org",
            "URL_DENYLIST": ["\\.css$"], "CRAWL_MAX_URLS": 7, "CRAWL_MAX_SIZE": 0,
            "CRAWL_TIMEOUT": 60, "ONLY_NEW": false, "CRAWL_MAX_CONCURRENT_SNAPSHOTS": 3}}"#;
        let [Said::Claimed(claimed)] = &records(&[line.replace('\n', " ")])[..] else {
            panic!("not one claim");
        };
        let rules = claimed.spec().rules;
        assert_eq!(rules.url_allowlist, [r"a\.com", r"b\.org"]);
        assert_eq!(rules.url_denylist, [r"\.css$"]);
        assert_eq!(
            (rules.max_urls, rules.max_size, rules.timeout),
            (Some(7), None, Some(60))
        );
        assert_eq!(rules.only_new, Some(false));
        assert_eq!(rules.max_concurrent_snapshots, Some(3));
    }

    #[test]
    fn a_redo_runs_the_plugins_asked_for_on_snapshots_that_keep_their_identity() {
        let line = r#"{"type": "claimed", "archivebox_crawl": "06b0", "user": "admin",
            "urls": ["http://a/"], "depth": 0, "config": {"PLUGINS": "title,wget"},
            "plugins": ["Screenshot"], "redo": [{"uuid": "0196a3c2-0000-7000-8000-000000000001",
            "url": "http://a/", "bookmarked_at": 1764000000000}]}"#;
        let [Said::Claimed(claimed)] = &records(&[line.replace('\n', " ")])[..] else {
            panic!("not one claim");
        };
        let spec = claimed.spec();
        assert_eq!(spec.plugins, Some(vec!["screenshot".into()]));
        assert_eq!(spec.env["PLUGINS"], "title,wget");
        let redo = &spec.options.archivebox.unwrap().redo;
        assert_eq!(redo.len(), 1);
        assert_eq!(
            (redo[0].url.as_str(), redo[0].bookmarked_at),
            ("http://a/", 1764000000000)
        );
    }
}
