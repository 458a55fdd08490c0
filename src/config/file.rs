//! The config file's shape — what a user may write, read strictly by serde and written back
//! (with every path resolved) for workers — and the views derived from it.

use super::{
    ArchiveBox, Config, ConfigError, CrawlDefaults, Hooks, Install, Limits, Location, Log,
    PluginConfig, Retention, Timeouts,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file's shape: what a user may write, before paths are resolved.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct FileConfig {
    pub(super) paths: FilePaths,
    pub(super) limits: Limits,
    pub(super) timeouts: Timeouts,
    pub(super) control: FileControl,
    pub(super) log: Log,
    pub(super) retention: Retention,
    pub(super) politeness: super::Politeness,
    pub(super) store: FileStore,
    pub(super) crawl: CrawlDefaults,
    pub(super) hooks: Hooks,
    pub(super) install: Install,
    pub(super) archivebox: ArchiveBox,
    pub(super) plugins: BTreeMap<String, PluginConfig>,
    pub(super) web: FileWeb,
}

/// `[web]`: where the read-only web view and `/metrics` listen (unset: nowhere).
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct FileWeb {
    /// A loopback `IP:PORT` or a Unix socket path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) listen: Option<String>,
}

/// `[store]`: what connecting to a PostgreSQL `paths.database` needs besides its URL.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct FileStore {
    /// A file whose first line is the password (so it is in neither the URL nor the config).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) password_file: Option<PathBuf>,
    /// This host's id among the machines sharing the database (default: /etc/machine-id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) machine_id: Option<String>,
    /// Whether what abxd answers for is on disk before it answers (default: true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) synchronous_commit: Option<bool>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct FilePaths {
    pub(super) data_dir: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) database: Option<PathBuf>,
    /// None: found where abx-dl finds them (`discover`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) plugins_dirs: Option<Vec<PathBuf>>,
}

impl Default for FilePaths {
    fn default() -> Self {
        FilePaths {
            data_dir: PathBuf::from("data"),
            database: None,
            plugins_dirs: None,
        }
    }
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct FileControl {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) socket: Option<PathBuf>,
    pub(super) max_frame_bytes: usize,
    pub(super) allow_debug_spawn: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) group: Option<String>,
    pub(super) public_read: bool,
}

impl Default for FileControl {
    fn default() -> Self {
        FileControl {
            socket: None,
            // (An import travels in one frame: a browser's export of 100,000 bookmarks is 9 MB.)
            max_frame_bytes: 32 << 20,
            allow_debug_spawn: false,
            group: None,
            public_read: false,
        }
    }
}

pub(super) fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    humantime::parse_duration(&text).map_err(|err| {
        serde::de::Error::custom(format!(
            "invalid duration {text:?}: {err} (write it like \"30s\", \"500ms\" or \"2m\")"
        ))
    })
}

pub(super) fn optional_duration<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    duration(deserializer).map(Some)
}

pub(super) fn duration_text<S: Serializer>(
    value: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&humantime::format_duration(*value).to_string())
}

pub(super) fn optional_duration_text<S: Serializer>(
    value: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => duration_text(value, serializer),
        None => serializer.serialize_none(),
    }
}

pub(super) fn level_text<S: Serializer>(
    value: &log::LevelFilter,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&value.as_str().to_ascii_lowercase())
}

pub(super) fn level<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<log::LevelFilter, D::Error> {
    let text = String::deserialize(deserializer)?;
    text.parse().map_err(|_| {
        serde::de::Error::custom(format!(
            "invalid log level {text:?} (one of off, error, warn, info, debug, trace)"
        ))
    })
}

/// A config as dotted keys and their values (tables of plugins included).
pub(super) fn flatten(file: &FileConfig) -> BTreeMap<String, String> {
    fn walk(prefix: &str, value: &toml::Value, out: &mut BTreeMap<String, String>) {
        match value {
            toml::Value::Table(table) => {
                for (key, value) in table {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    walk(&path, value, out);
                }
            }
            toml::Value::String(text) => {
                out.insert(prefix.to_string(), text.clone());
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    let value = toml::Value::try_from(file).expect("a config serializes");
    walk("", &value, &mut out);
    out
}

pub(super) fn parse_file(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
    let deserializer = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let key = err.path().to_string();
        let inner = err.into_inner();
        let location = inner
            .span()
            .map(|span| {
                let line = text[..span.start].matches('\n').count() + 1;
                format!(" (line {line})")
            })
            .unwrap_or_default();
        let message = format!("{}{location}", inner.message().trim_end());
        if key.is_empty() || key == "." {
            ConfigError::Syntax {
                path: path.to_path_buf(),
                message,
            }
        } else {
            ConfigError::Invalid {
                path: path.to_path_buf(),
                key,
                message,
            }
        }
    })
}

impl Config {
    /// The file form of this config, every path resolved: what [`Config::running_text`] and
    /// [`Config::changes_from`] are derived from, so no key can be forgotten by either.
    pub(super) fn file_form(&self) -> FileConfig {
        FileConfig {
            paths: FilePaths {
                data_dir: self.data_dir.clone(),
                database: Some(PathBuf::from(self.database.as_config_text())),
                plugins_dirs: Some(self.plugins_dirs.clone()),
            },
            limits: self.limits.clone(),
            timeouts: self.timeouts.clone(),
            control: FileControl {
                socket: Some(self.control.socket.clone()),
                max_frame_bytes: self.control.max_frame_bytes,
                allow_debug_spawn: self.control.allow_debug_spawn,
                group: self.control.group.clone(),
                public_read: self.control.public_read,
            },
            log: self.log.clone(),
            retention: self.retention.clone(),
            politeness: self.politeness.clone(),
            store: FileStore {
                password_file: match &self.database {
                    Location::Postgres(server) => server.password_file.clone(),
                    Location::File(_) => None,
                },
                machine_id: self.machine_id.clone(),
                synchronous_commit: Some(self.synchronous_commit),
            },
            crawl: self.crawl.clone(),
            hooks: self.hooks.clone(),
            install: self.install.clone(),
            archivebox: self.archivebox.clone(),
            plugins: self.plugins.clone(),
            web: FileWeb {
                listen: self.web.as_ref().map(ToString::to_string),
            },
        }
    }

    /// This config as a file (every path absolute): what a worker is handed, so it runs with the
    /// config its daemon runs with — including the paths the daemon kept across a reload — even
    /// if the file was changed (or broken) since.
    pub fn running_text(&self) -> String {
        toml::to_string(&self.file_form()).expect("a config serializes")
    }

    /// This config as a file for people (`abxd check-config`): the running text, with a
    /// server's password left out.
    pub fn shown_text(&self) -> String {
        toml::to_string(&self.shown_form()).expect("a config serializes")
    }

    /// The file form as people may see it: a server's URL without its password.
    fn shown_form(&self) -> FileConfig {
        let mut form = self.file_form();
        form.paths.database = Some(PathBuf::from(self.database.to_string()));
        form
    }

    /// The differences between two configs, one line per changed key, for logging a reload.
    pub fn changes_from(&self, old: &Config) -> Vec<String> {
        let (before, after) = (flatten(&old.shown_form()), flatten(&self.shown_form()));
        let keys: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        let absent = String::from("(unset)");
        keys.into_iter()
            .filter(|key| before.get(*key) != after.get(*key))
            .map(|key| {
                let old = before.get(key).unwrap_or(&absent);
                let new = after.get(key).unwrap_or(&absent);
                format!("{key}: {old} -> {new}")
            })
            .collect()
    }
}
