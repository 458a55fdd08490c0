//! The config file's shape — what a user may write, read strictly by serde and written back
//! (with every path resolved) for workers — and the views derived from it.

use super::{ConfigError, Limits, Log, PluginConfig, Retention, Timeouts};
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
    pub(super) plugins: BTreeMap<String, PluginConfig>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct FilePaths {
    pub(super) data_dir: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) database: Option<PathBuf>,
    pub(super) plugins_dirs: Vec<PathBuf>,
}

impl Default for FilePaths {
    fn default() -> Self {
        FilePaths {
            data_dir: PathBuf::from("data"),
            database: None,
            plugins_dirs: vec![PathBuf::from("plugins")],
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
            max_frame_bytes: 1 << 20,
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
