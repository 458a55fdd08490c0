//! `[plugins.<name>]`: one plugin's settings in the config file.

use super::bytes;
use super::file::{optional_duration, optional_duration_text};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// `[plugins.<name>]`: one plugin's settings.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginConfig {
    /// Whether its hooks run at all.
    pub enabled: bool,
    /// Its hooks' timeout, instead of `timeouts.hook_timeout`.
    #[serde(
        deserialize_with = "optional_duration",
        serialize_with = "optional_duration_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// Extra environment variables for its hooks.
    pub env: BTreeMap<String, String>,
    /// Memory limit of each of its hooks' cgroups, in bytes ("512M", "2G" or a number).
    #[serde(
        deserialize_with = "bytes::optional",
        serialize_with = "bytes::optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub memory_max: Option<u64>,
    /// Most processes (tasks) each of its hooks' cgroups may hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks_max: Option<u64>,
    /// CPU weight of its hooks' cgroups (1–10000; 100 is the default of every cgroup).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_weight: Option<u64>,
}

impl PluginConfig {
    /// The cgroup limits of its hooks.
    pub fn limits(&self) -> crate::cgroup::Limits {
        crate::cgroup::Limits {
            memory_max: self.memory_max,
            memory_limit: None,
            tasks_max: self.tasks_max,
            cpu_weight: self.cpu_weight,
        }
    }
}

impl Default for PluginConfig {
    fn default() -> Self {
        PluginConfig {
            enabled: true,
            timeout: None,
            env: BTreeMap::new(),
            memory_max: None,
            tasks_max: None,
            cpu_weight: None,
        }
    }
}
