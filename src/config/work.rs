//! `[crawl]`: the rules every crawl gets unless `add` gives its own; `[hooks]`: who hooks run as;
//! `[install]`: whether the binaries plugins need are installed when a crawl wants them;
//! `[archivebox]`: the ArchiveBox collection sealed crawls are imported into.

use super::bytes;
use super::file::{duration, duration_text};
use crate::domain::{CrawlRules, Egress, UrlScope};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// `[crawl]`: default crawl rules (`abxctl add`'s flags override them, crawl by crawl). A limit
/// of 0 is no limit.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CrawlDefaults {
    pub url_allowlist: Vec<String>,
    pub url_denylist: Vec<String>,
    pub scope: UrlScope,
    pub max_urls: u64,
    #[serde(deserialize_with = "bytes::size", serialize_with = "bytes::size_text")]
    pub max_size: u64,
    #[serde(deserialize_with = "duration", serialize_with = "duration_text")]
    pub timeout: Duration,
    #[serde(deserialize_with = "bytes::size", serialize_with = "bytes::size_text")]
    pub snapshot_max_size: u64,
    /// Networks hooks may reach although they are not public ("10.1.0.0/16", "fd00::/8", or
    /// one address).
    pub allow_networks: Vec<String>,
    /// Whether the kernel holds hooks to the crawl's egress policy.
    pub egress: Egress,
    /// Follow no discovered URL another crawl archived already (ArchiveBox's `ONLY_NEW`), unless
    /// a crawl says `--no-only-new`.
    pub only_new: bool,
}

impl Default for CrawlDefaults {
    fn default() -> Self {
        CrawlDefaults {
            url_allowlist: Vec::new(),
            url_denylist: Vec::new(),
            scope: UrlScope::Any,
            max_urls: 0,
            max_size: 0,
            timeout: Duration::ZERO,
            snapshot_max_size: 0,
            allow_networks: Vec::new(),
            egress: Egress::Restricted,
            only_new: false,
        }
    }
}

impl CrawlDefaults {
    /// These defaults as rules (what a crawl given none gets).
    pub fn rules(&self) -> CrawlRules {
        CrawlRules {
            url_allowlist: self.url_allowlist.clone(),
            url_denylist: self.url_denylist.clone(),
            scope: Some(self.scope),
            max_urls: Some(self.max_urls),
            max_size: Some(self.max_size),
            timeout: Some(self.timeout.as_secs()),
            snapshot_max_size: Some(self.snapshot_max_size),
            only_new: Some(self.only_new),
            max_concurrent_snapshots: None,
            max_per_host: None,
            delay_ms: None,
            priority: None,
            allow_networks: self.allow_networks.clone(),
            egress: Some(self.egress),
        }
        .over(&CrawlRules::default())
    }
}

/// `[hooks]`: how hooks are started.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Hooks {
    /// The user a root abxd runs hooks (and everything under them) as. Unset, a root abxd
    /// refuses to start a crawl; `"root"` accepts the risk explicitly. Ignored when abxd is not
    /// root (hooks run as abxd's own user).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// A group whose members (as the group database lists them) are the users crawls' hooks run
    /// as: each crawl running on this host as one of its own, so that a hook of one cannot
    /// reach another's directories or processes. `user` then installs the binaries, into the
    /// library they all read. Unset: every crawl's hooks run as `user`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crawl_users: Option<String>,
}

/// `[install]`: the binaries the plugins declare (`required_binaries`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Install {
    /// Resolve (and install when missing) a due crawl's binaries before it starts, as abx-dl
    /// does; `false`: only `abxd install` provisions them, and plugins lacking one are skipped.
    pub auto: bool,
}

impl Default for Install {
    fn default() -> Self {
        Install { auto: true }
    }
}

/// `[archivebox]`: an ArchiveBox collection abxd's crawls are imported into once they seal.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArchiveBox {
    /// The collection's data dir (where `archivebox init` ran). Unset: crawls are not exported
    /// unless `abxctl export --archivebox DIR` asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// The ArchiveBox user the snapshots are filed under (`archive/users/<user>/`).
    pub user: String,
    /// The `archivebox` program (its path, or a name looked up on the `PATH`).
    pub command: PathBuf,
    /// Be the collection's runner: take the Crawls its UI, `add --bg`, REST API and schedules
    /// queue, and write back their progress as ArchiveBox's own runner does (`docs/plugins.md`).
    pub serve_queue: bool,
    /// How often a turn of serving the queue runs (claims, progress written back, leases
    /// renewed); it must stay well inside ArchiveBox's 60 s lease.
    #[serde(deserialize_with = "duration", serialize_with = "duration_text")]
    pub queue_interval: Duration,
}

impl Default for ArchiveBox {
    fn default() -> Self {
        ArchiveBox {
            data_dir: None,
            user: "system".into(),
            command: PathBuf::from("archivebox"),
            serve_queue: false,
            queue_interval: Duration::from_secs(5),
        }
    }
}

impl super::Config {
    /// Where the ArchiveBox personas a crawl names are (`--persona`): the collection's
    /// `personas/` with `[archivebox] data_dir`, else the data dir's.
    pub fn personas_root(&self) -> PathBuf {
        let collection = self.archivebox.data_dir.as_ref();
        collection.unwrap_or(&self.data_dir).join("personas")
    }
}

impl ArchiveBox {
    /// The longest `queue_interval`: a third of ArchiveBox's 60 s lease, so that a lease is
    /// renewed twice before it could lapse.
    pub const MAX_QUEUE_INTERVAL: Duration = Duration::from_secs(20);

    /// Why `serve_queue` cannot be as it is set, if it cannot.
    pub(super) fn serve_queue_problem(&self) -> Option<String> {
        if !self.serve_queue {
            return None;
        }
        if self.data_dir.is_none() {
            return Some(
                "serving a collection's queue needs archivebox.data_dir, the collection".into(),
            );
        }
        let interval = self.queue_interval;
        (interval.is_zero() || interval > Self::MAX_QUEUE_INTERVAL).then(|| {
            format!(
                "archivebox.queue_interval is {}: it must be above 0 and at most {} (ArchiveBox's \
                 leases last 60 s and are renewed at each turn)",
                humantime::format_duration(interval),
                humantime::format_duration(Self::MAX_QUEUE_INTERVAL)
            )
        })
    }

    /// Where a new crawl is exported once it seals: the collection's data dir and the user its
    /// snapshots are filed under — `None` without a `data_dir`.
    pub fn export_to(&self) -> Option<(&std::path::Path, &str)> {
        (self.data_dir.as_deref()).map(|dir| (dir, self.user.as_str()))
    }
}
