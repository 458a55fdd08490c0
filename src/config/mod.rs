//! Configuration: `supervisor.toml`, parsed strictly and resolved once.
//!
//! Invariant: a [`Config`] value is always valid. Unknown keys, values of the wrong type and values
//! out of range are refused at load time with a [`ConfigError`] that names the file, the dotted key
//! and what is wrong; nothing downstream re-checks them. Relative paths in the file are resolved
//! against the directory that holds the file, so a config means the same thing from any cwd.
//!
//! This file holds the model — the resolved [`Config`] and its sections; `file` the shape of the
//! file (what serde reads and writes) and the derived views of a config (its running text, its
//! keys); `resolve` how a file becomes a config; `validate` what a config may not hold;
//! `environment` what it needs of the machine; `web` where the web view listens.

mod bytes;
mod collection;
mod discover;
mod environment;
mod file;
mod load;
mod location;
mod plugin;
mod politeness;
mod resolve;
mod tls;
mod validate;
mod web;
mod work;

pub use collection::CollectionSettings;
pub use load::Found;
pub(crate) use location::Client;
pub use location::{redacted, Location, Server};

pub use bytes::parse as parse_size;
pub use plugin::PluginConfig;
pub use politeness::{HostPoliteness, Politeness};
pub use validate::group_id;
pub use web::Listen;
pub use work::{ArchiveBox, CrawlDefaults, Hooks, Install};

use file::{duration, duration_text, level, level_text};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The longest path a Unix socket address can hold (`sun_path` is 108 bytes with its NUL).
const MAX_SOCKET_PATH_BYTES: usize = 107;

/// The environment variable through which a worker receives its daemon's running config (see
/// [`Config::running_text`]).
pub const CONFIG_TEXT_ENV: &str = "ABXD_CONFIG_TEXT";

/// The standard variable a PostgreSQL password may come from: handed to workers, never to hooks.
pub const PASSWORD_ENV: &str = "PGPASSWORD";

/// Where `abxd` and `abxctl` look for their config when `--config` is not given.
pub fn default_config_path() -> PathBuf {
    if let Some(path) = std::env::var_os("ABXD_CONFIG") {
        return PathBuf::from(path);
    }
    let local = PathBuf::from("supervisor.toml");
    let system = PathBuf::from("/etc/abxd/supervisor.toml");
    if !local.exists() && system.exists() {
        system
    } else {
        local
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {cause}")]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path}: key `{key}`: {message}")]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("{path}: {message}")]
    Syntax { path: PathBuf, message: String },
}

/// The resolved configuration (all paths absolute).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The file this was loaded from.
    pub source: PathBuf,
    pub data_dir: PathBuf,
    /// `paths.database`: the SQLite file, or a PostgreSQL server's URL.
    pub database: Location,
    /// `store.machine_id`: this host's id among the machines sharing the database.
    pub machine_id: Option<String>,
    /// `store.synchronous_commit`: whether a crawl added, a result's end, a seal — every write
    /// abxd answers for — is on disk before the answer (`store::engine::durable`).
    pub synchronous_commit: bool,
    pub plugins_dirs: Vec<PathBuf>,
    pub limits: Limits,
    pub timeouts: Timeouts,
    pub control: Control,
    pub log: Log,
    pub retention: Retention,
    pub politeness: Politeness,
    /// `[crawl]`: the rules a crawl gets unless `add` gives its own.
    pub crawl: CrawlDefaults,
    /// `[hooks]`: who hooks run as.
    pub hooks: Hooks,
    /// `[install]`: whether binaries are installed when a crawl wants them.
    pub install: Install,
    /// `[archivebox]`: the ArchiveBox collection sealed crawls are imported into.
    pub archivebox: ArchiveBox,
    /// The ArchiveBox collection's own settings (`ArchiveBox.conf` in `[archivebox] data_dir`),
    /// read with the config: what its hooks get below abxd's own (see `plugins::env`).
    pub collection: CollectionSettings,
    /// Per-plugin settings, by plugin (folder) name.
    pub plugins: BTreeMap<String, PluginConfig>,
    /// `[web]`: where the web view and metrics are served (`None`: nowhere, the default).
    pub web: Option<Listen>,
    /// Set on a client's lenient read of a file the daemon would refuse (see
    /// [`Config::parse_for_client`]): the error for which only `[paths]` and `[control]` were
    /// kept. Such a config reaches the daemon, never the work: the verbs refuse to write under
    /// it (their defaults, plugins and collection would be wrong).
    pub read_partly: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// How processes are contained: cgroup v2 where possible (`auto`), always, or never.
    pub containment: crate::cgroup::Mode,
    pub max_crawl_workers: u32,
    pub max_snapshot_workers: u32,
    /// How many snapshots run at once on this host, every crawl's and those lent to other
    /// hosts' together, dealt out as `domain::turn` says (unset: 4, or `max_snapshot_workers`
    /// where that is more, so that one crawl alone may run as many as it is allowed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_snapshots: Option<u32>,
    pub max_result_attempts: u32,
    pub max_log_bytes: u64,
    /// Start no crawl or snapshot while less memory than this is left (`admission`; 0: none).
    #[serde(deserialize_with = "bytes::size", serialize_with = "bytes::size_text")]
    pub memory_floor: u64,
    /// Launch no browser (a crawl's or, isolated, a snapshot's) while this many are alive (0:
    /// no cap).
    pub max_browsers: u32,
    /// What a snapshot is taken to cost in memory until one of its crawl was measured (unset:
    /// the hooks' `MEMORY_LIMIT`, else 2 GiB; see `admission`).
    #[serde(
        deserialize_with = "bytes::optional",
        serialize_with = "bytes::optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub snapshot_memory: Option<u64>,
    /// Start no crawl or snapshot while less space than this is free where abxd writes (the
    /// data dir's filesystem, the database's; `disk`; 0: none).
    #[serde(deserialize_with = "bytes::size", serialize_with = "bytes::size_text")]
    pub min_free_space: u64,
}

impl Limits {
    /// How many snapshots run at once on this host: `max_snapshots`, else its default.
    pub fn snapshot_budget(&self) -> u32 {
        self.max_snapshots
            .unwrap_or(self.max_snapshot_workers.max(DEFAULT_SNAPSHOT_BUDGET))
    }
}

/// `max_snapshots` unless set (or `max_snapshot_workers` is more).
const DEFAULT_SNAPSHOT_BUDGET: u32 = 4;

impl Config {
    /// The filesystems abxd writes to: the data dir's and the SQLite file's (none of a server).
    pub fn written_places(&self) -> Vec<PathBuf> {
        let mut places = vec![self.data_dir.clone()];
        if let Location::File(file) = &self.database {
            places.extend(file.parent().map(Path::to_path_buf));
        }
        places
    }

    /// The bounds admission decides by: `[limits]`, and the hooks' `MEMORY_LIMIT` as they get
    /// it (abxd's environment, else the collection's `ArchiveBox.conf`).
    pub fn admission(&self) -> crate::admission::Bounds {
        let memory_limit = std::env::var("MEMORY_LIMIT")
            .ok()
            .or_else(|| self.collection.get("MEMORY_LIMIT").map(str::to_owned));
        crate::admission::Bounds {
            memory_floor: self.limits.memory_floor,
            min_free_space: self.limits.min_free_space,
            max_browsers: self.limits.max_browsers,
            snapshot_prior: crate::admission::snapshot_prior(
                self.limits.snapshot_memory,
                memory_limit.as_deref(),
            ),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            containment: crate::cgroup::Mode::Auto,
            max_crawl_workers: 2,
            max_snapshot_workers: 4,
            max_snapshots: None,
            max_result_attempts: 3,
            max_log_bytes: 64 << 20,
            memory_floor: 256 << 20,
            max_browsers: 0,
            snapshot_memory: None,
            min_free_space: 1 << 30,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    #[serde(deserialize_with = "duration", serialize_with = "duration_text")]
    pub hook_timeout: Duration,
    #[serde(deserialize_with = "duration", serialize_with = "duration_text")]
    pub kill_grace: Duration,
    #[serde(deserialize_with = "duration", serialize_with = "duration_text")]
    pub min_grace: Duration,
    #[serde(deserialize_with = "duration", serialize_with = "duration_text")]
    pub lease: Duration,
    #[serde(deserialize_with = "duration", serialize_with = "duration_text")]
    pub descendant_scan: Duration,
    #[serde(deserialize_with = "duration", serialize_with = "duration_text")]
    pub retry_backoff: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            hook_timeout: Duration::from_secs(60),
            kill_grace: Duration::from_secs(5),
            min_grace: Duration::from_secs(1),
            lease: Duration::from_secs(60),
            descendant_scan: Duration::from_secs(1),
            retry_backoff: Duration::from_secs(2),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Control {
    pub socket: PathBuf,
    pub max_frame_bytes: usize,
    pub allow_debug_spawn: bool,
    pub group: Option<String>,
    pub public_read: bool,
}

/// How long the process rows of finished work are kept (`[retention]`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Retention {
    /// Days a final process row of a sealed crawl (or of no crawl) is kept after it ended; 0
    /// keeps every row for ever.
    pub keep_days: u32,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { keep_days: 30 }
    }
}

impl Retention {
    /// How long rows are kept, if they are not kept for ever.
    pub fn keep(&self) -> Option<Duration> {
        (self.keep_days > 0).then(|| Duration::from_secs(u64::from(self.keep_days) * 86_400))
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Log {
    #[serde(deserialize_with = "level", serialize_with = "level_text")]
    pub level: log::LevelFilter,
}

impl Default for Log {
    fn default() -> Self {
        Log {
            level: log::LevelFilter::Info,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("/etc/abxd/supervisor.toml"), text)
    }

    #[test]
    fn a_postgres_url_names_a_server_kept_for_workers_and_never_shown_with_its_password() {
        let text = "[paths]\ndatabase = \"postgres://abxd:s3cret@db/abxd\"\n";
        let config = parse(text).unwrap();
        let Location::Postgres(server) = &config.database else {
            panic!("not a server: {:?}", config.database);
        };
        assert_eq!(server.url, "postgres://abxd:s3cret@db/abxd");
        assert_eq!(config.database.to_string(), "postgres://abxd@db/abxd");
        // Workers get it whole; a reload's log line does not.
        let handed = parse(&config.running_text()).unwrap();
        assert_eq!(handed.database, config.database);
        let other = parse("[paths]\ndatabase = \"postgres://abxd:other@db2/abxd\"\n").unwrap();
        let changes = other.changes_from(&config).join("\n");
        assert!(
            changes.contains("paths.database: postgres://abxd@db/abxd -> postgres://abxd@db2/abxd"),
            "{changes}"
        );
        assert!(
            !changes.contains("s3cret") && !changes.contains("other@"),
            "{changes}"
        );
    }

    #[test]
    fn a_password_file_is_resolved_and_refused_beside_a_database_file() {
        let text = "[paths]\ndatabase = \"postgres://abxd@db/abxd\"\n[store]\npassword_file = \"pg-password\"\n";
        let config = parse(text).unwrap();
        let Location::Postgres(server) = &config.database else {
            panic!("not a server");
        };
        assert_eq!(
            server.password_file.as_deref(),
            Some(Path::new("/etc/abxd/pg-password"))
        );
        assert_eq!(parse(&config.running_text()).unwrap(), config);
        let err = parse("[store]\npassword_file = \"pg-password\"\n").unwrap_err();
        assert!(err.to_string().contains("store.password_file"), "{err}");
    }

    #[test]
    fn empty_file_gives_documented_defaults() {
        let config = parse("").unwrap();
        assert_eq!(config.data_dir, PathBuf::from("/etc/abxd/data"));
        assert_eq!(
            config.database,
            Location::File(PathBuf::from("/etc/abxd/data/abxd.sqlite3"))
        );
        assert_eq!(
            config.control.socket,
            PathBuf::from("/etc/abxd/data/abxd.sock")
        );
        assert_eq!(config.limits, Limits::default());
        assert_eq!(config.timeouts, Timeouts::default());
    }

    #[test]
    fn containment_and_plugin_limits_are_read_and_checked() {
        let config = parse(
            "[limits]\ncontainment = \"cgroup\"\n\
             [plugins.wget]\nmemory_max = \"512M\"\ntasks_max = 64\ncpu_weight = 50\n",
        )
        .unwrap();
        assert_eq!(config.limits.containment, crate::cgroup::Mode::Cgroup);
        let limits = config.plugins["wget"].limits();
        assert_eq!(limits.memory_max, Some(512 << 20));
        assert_eq!(limits.tasks_max, Some(64));
        assert_eq!(limits.cpu_weight, Some(50));
        assert_eq!(
            parse("").unwrap().limits.containment,
            crate::cgroup::Mode::Auto
        );

        let err = parse("[limits]\ncontainment = \"jail\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("containment") && err.contains("jail"), "{err}");
        let err = parse("[plugins.wget]\ncpu_weight = 0\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("plugins.wget.cpu_weight"), "{err}");
        let err = parse("[plugins.wget]\nmemory_max = \"lots\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"lots\""), "{err}");
    }

    #[test]
    fn bundled_supervisor_toml_equals_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("supervisor.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let documented = Config::parse(&path, &text).unwrap();
        let defaults = Config::parse(&path, "").unwrap();
        assert_eq!(documented, defaults);
    }

    #[test]
    fn unknown_key_is_named_with_its_table() {
        let err = parse("[timeouts]\nkill_gracee = \"1s\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("/etc/abxd/supervisor.toml"), "{err}");
        assert!(err.contains("kill_gracee"), "{err}");
        assert!(err.contains("timeouts"), "{err}");
    }

    #[test]
    fn bad_duration_names_key_and_value() {
        let err = parse("[timeouts]\nkill_grace = \"soon\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("timeouts.kill_grace"), "{err}");
        assert!(err.contains("\"soon\""), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn zero_limit_is_refused() {
        let err = parse("[limits]\nmax_crawl_workers = 0\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("limits.max_crawl_workers"), "{err}");
        assert!(err.contains("at least 1"), "{err}");
    }

    #[test]
    fn negative_limit_is_refused() {
        let err = parse("[limits]\nmax_snapshot_workers = -3\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("limits.max_snapshot_workers"), "{err}");
    }

    #[test]
    fn overlong_socket_path_is_refused() {
        let long = format!("[control]\nsocket = \"/tmp/{}.sock\"\n", "x".repeat(120));
        let err = parse(&long).unwrap_err().to_string();
        assert!(err.contains("control.socket"), "{err}");
        assert!(err.contains("Unix socket"), "{err}");
    }

    #[test]
    fn plugin_sections_are_strict() {
        let config = parse("[plugins.wget]\nenabled = false\ntimeout = \"5s\"\n").unwrap();
        assert!(!config.plugins["wget"].enabled);
        assert_eq!(config.plugins["wget"].timeout, Some(Duration::from_secs(5)));
        let err = parse("[plugins.wget]\nenable = false\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("plugins.wget.enable"), "{err}");
    }

    #[test]
    fn a_machine_id_is_taken_as_written_and_one_that_cannot_name_a_cgroup_is_refused() {
        let config = parse("[store]\nmachine_id = \"archiver-1\"\n").unwrap();
        assert_eq!(config.machine_id.as_deref(), Some("archiver-1"));
        for bad in ["", "a/b", "a@b", "has space"] {
            let err = parse(&format!("[store]\nmachine_id = {bad:?}\n")).unwrap_err();
            assert!(err.to_string().contains("store.machine_id"), "{err}");
        }
    }

    #[test]
    fn bad_log_level_is_refused() {
        let err = parse("[log]\nlevel = \"loud\"\n").unwrap_err().to_string();
        assert!(err.contains("log.level"), "{err}");
    }

    #[test]
    fn the_running_text_parses_back_to_the_same_config_from_anywhere() {
        let config = parse(
            "[paths]\ndata_dir = \"d\"\n[plugins.wget]\nenabled = false\ntimeout = \"5s\"\n\
             [plugins.wget.env]\nA = \"1\"\n[log]\nlevel = \"debug\"\n",
        )
        .unwrap();
        let again = Config::parse(Path::new("/elsewhere/x.toml"), &config.running_text()).unwrap();
        assert_eq!(
            Config {
                source: config.source.clone(),
                ..again
            },
            config
        );
    }

    #[test]
    fn changes_cover_every_key_including_plugins() {
        let old = parse("").unwrap();
        let new = parse(
            "[control]\npublic_read = true\n[plugins.wget]\nenabled = false\n[log]\nlevel = \"warn\"\n",
        )
        .unwrap();
        assert_eq!(
            new.changes_from(&old),
            vec![
                "control.public_read: false -> true".to_string(),
                "log.level: info -> warn".to_string(),
                "plugins.wget.enabled: (unset) -> false".to_string(),
            ]
        );
        assert!(new.changes_from(&new).is_empty());
    }

    #[test]
    fn changes_name_each_changed_key() {
        let old = parse("").unwrap();
        let new = parse("[limits]\nmax_crawl_workers = 7\n").unwrap();
        assert_eq!(
            new.changes_from(&old),
            vec!["limits.max_crawl_workers: 2 -> 7".to_string()]
        );
    }
}
