//! A plugin's `config.json`: its config schema (`properties`, each with a default, `x-aliases`
//! and an `x-fallback`), the plugins it needs (`required_plugins`) and the binaries it declares
//! (`required_binaries`).
//!
//! Invariant: a manifest is read whole or refused with the reason; fields abxd does not use are
//! ignored, as abx-dl ignores them.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One config key of a plugin.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Property {
    #[serde(default)]
    pub default: Option<Value>,
    /// Other names the same setting goes by (e.g. `SAVE_TITLE` for `TITLE_ENABLED`).
    #[serde(default, rename = "x-aliases")]
    pub aliases: Vec<String>,
    /// The key whose value it takes when it is not set itself (e.g. `TIMEOUT`).
    #[serde(default, rename = "x-fallback")]
    pub fallback: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Manifest {
    #[serde(default)]
    pub properties: BTreeMap<String, Property>,
    #[serde(default)]
    pub required_plugins: Vec<String>,
    /// As declared; `abxd install` reads them.
    #[serde(default)]
    pub required_binaries: Vec<Value>,
    /// The runtimes the plugin is for (`archivebox`, `abx-dl`); every runtime when empty.
    #[serde(default, rename = "x-runtimes")]
    pub runtimes: Vec<String>,
    /// Whether a crawl that names no plugins runs it (abx-dl 1.13's `x-auto-run`; a plugin with
    /// `false` runs only when named, or required by one that runs).
    #[serde(default = "runs_by_default", rename = "x-auto-run")]
    pub auto_run: bool,
    /// Plugins whose hooks, once started in the snapshot, its hooks wait for (abx-dl 1.13: they
    /// read what those write).
    #[serde(default)]
    pub wait_for_plugins: Vec<String>,
    /// Its hooks start only once the snapshot's background hooks were stopped (abx-dl 1.13: it
    /// reads everything the snapshot wrote, e.g. to hash it).
    #[serde(default)]
    pub wait_for_background_cleanup: bool,
    /// Its snapshot hooks parse what an operator imports (`abxctl add --from FILE`: bookmarks,
    /// feeds, JSONL, text): abx-dl 1.13's `x-accepts-internal-input`.
    #[serde(default, rename = "x-accepts-internal-input")]
    pub accepts_input: bool,
}

fn runs_by_default() -> bool {
    true
}

impl Default for Manifest {
    fn default() -> Self {
        Manifest {
            properties: BTreeMap::new(),
            required_plugins: Vec::new(),
            required_binaries: Vec::new(),
            runtimes: Vec::new(),
            auto_run: true,
            wait_for_plugins: Vec::new(),
            wait_for_background_cleanup: false,
            accepts_input: false,
        }
    }
}

impl Manifest {
    /// Whether the plugin is for `runtime` (abx-dl's `_plugin_runtime_enabled`).
    pub fn for_runtime(&self, runtime: &str) -> bool {
        let runtime = runtime.trim().to_ascii_lowercase();
        self.runtimes.is_empty()
            || self
                .runtimes
                .iter()
                .any(|r| r.trim().to_ascii_lowercase() == runtime)
    }
}

impl Manifest {
    /// Reads `<dir>/config.json`; a plugin without one has an empty manifest.
    pub fn read(dir: &Path) -> Result<Manifest, String> {
        let path = dir.join("config.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Manifest::default())
            }
            Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
        };
        serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))
    }
}

/// A config value as a hook reads it from its environment (abx-dl's `dump_to_dotenv_format`):
/// booleans `True`/`False`, lists and objects as JSON, strings as they are.
pub fn env_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        other => other.to_string(),
    }
}

/// Whether an environment text means "off" (for `<PLUGIN>_ENABLED`).
pub fn is_false(text: &str) -> bool {
    matches!(
        text.trim().to_ascii_lowercase().as_str(),
        "false" | "0" | "no" | "off" | "n" | "f"
    )
}

/// The runtime plugins are loaded for: `ABX_RUNTIME`, else `abx-dl` — abxd runs hooks the way
/// abx-dl does, so plugins limited to ArchiveBox's own runtime are left out, as abx-dl leaves
/// them out.
pub(super) fn runtime() -> String {
    std::env::var("ABX_RUNTIME").unwrap_or_else(|_| "abx-dl".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_as_abx_dl_writes_them() {
        assert_eq!(env_text(&Value::Bool(true)), "True");
        assert_eq!(env_text(&serde_json::json!(30)), "30");
        assert_eq!(env_text(&serde_json::json!(["a", "b"])), "[\"a\",\"b\"]");
        assert_eq!(env_text(&serde_json::json!("x")), "x");
        assert!(is_false("False") && is_false("0") && !is_false("True"));
    }

    #[test]
    fn a_manifest_is_read_or_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Manifest::read(dir.path()), Ok(Manifest::default()));
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"title":"T","required_plugins":["chrome"],"properties":{"T_TIMEOUT":
               {"type":"integer","default":30,"x-fallback":"TIMEOUT","x-aliases":["SAVE_T"]}}}"#,
        )
        .unwrap();
        let manifest = Manifest::read(dir.path()).unwrap();
        assert_eq!(manifest.required_plugins, vec!["chrome".to_string()]);
        let timeout = &manifest.properties["T_TIMEOUT"];
        assert_eq!(timeout.fallback.as_deref(), Some("TIMEOUT"));
        assert_eq!(timeout.aliases, vec!["SAVE_T".to_string()]);
        std::fs::write(dir.path().join("config.json"), "{nope").unwrap();
        let err = Manifest::read(dir.path()).unwrap_err();
        assert!(err.contains("config.json"), "{err}");
    }
}
