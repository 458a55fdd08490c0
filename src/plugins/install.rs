//! Provisioning the binaries the selected plugins declare (`required_binaries` of their
//! `config.json`), the way abx-dl's install step does: each record, its `{KEY}` placeholders
//! filled from the plugin's resolved config, becomes one `abxpkg … install NAME` run — a process
//! of the table like a hook, so an operator sees it in `abxctl ps`.
//!
//! Invariant: planning only reads; the same binary (name and providers) is installed once however
//! many plugins declare it; a record whose name stays a placeholder is reported, never run.

use super::{env, Catalog};
use crate::config::Config;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The program that installs binaries (from the abx-plugins virtualenv on the PATH).
pub const INSTALLER: &str = "abxpkg";

/// One binary to provision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallStep {
    /// The plugin that declared it (the first, if several did).
    pub plugin: String,
    pub binary: String,
    /// The installer's command line, program first.
    pub argv: Vec<String>,
}

/// abxpkg's default library dir, as abx-dl and abxpkg compute it (`~/.config/abx/lib`).
fn default_lib_dir(environ: env::Environ<'_>) -> Option<String> {
    let config_home = environ("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| environ("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config_home.join("abx/lib").display().to_string())
}

/// Replaces every `{KEY}` in the strings of `value` by the config's value of KEY, if it has one.
fn hydrate(value: &Value, config: &BTreeMap<String, String>) -> Value {
    match value {
        Value::String(text) => {
            let mut out = text.clone();
            for (key, replacement) in config {
                out = out.replace(&format!("{{{key}}}"), replacement);
            }
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| hydrate(v, config)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), hydrate(v, config)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The installer run of one hydrated record, or why it cannot run.
fn step_of(plugin: &str, record: &Value) -> Result<InstallStep, String> {
    let name = record["name"].as_str().unwrap_or("").trim().to_string();
    if name.is_empty() || name.contains('{') {
        return Err(format!(
            "plugin {plugin}: a required binary has no name ({name:?})"
        ));
    }
    let providers = record["binproviders"].as_str().unwrap_or("env");
    let mut argv = vec![INSTALLER.to_string(), format!("--binproviders={providers}")];
    if let Some(version) = record["min_version"].as_str().filter(|v| !v.is_empty()) {
        argv.push(format!("--min-version={version}"));
    }
    if let Some(overrides) = record["overrides"].as_object().filter(|o| !o.is_empty()) {
        argv.push(format!("--overrides={}", Value::Object(overrides.clone())));
    }
    if let Some(allowed) = record["postinstall_scripts"].as_bool() {
        let text = if allowed { "True" } else { "False" };
        argv.push(format!("--postinstall-scripts={text}"));
    }
    if let Some(days) = record["min_release_age"].as_f64() {
        argv.push(format!("--min-release-age={days}"));
    }
    argv.extend(["install".to_string(), name.clone()]);
    Ok(InstallStep {
        plugin: plugin.to_string(),
        binary: name,
        argv,
    })
}

/// What provisioning the selected plugins runs, and the records that cannot run (with why).
pub fn plan(
    catalog: &Catalog,
    selected: &BTreeSet<String>,
    config: &Config,
    environ: env::Environ<'_>,
) -> (Vec<InstallStep>, Vec<String>) {
    let mut steps: Vec<InstallStep> = Vec::new();
    let mut problems = Vec::new();
    for name in selected {
        let plugin = &catalog.plugins[name];
        let mut resolved = env::resolve(plugin, catalog, config, environ);
        if let Some(lib) = environ("ABXPKG_LIB_DIR")
            .filter(|d| !d.is_empty())
            .or_else(|| default_lib_dir(environ))
        {
            resolved.entry("ABXPKG_LIB_DIR".into()).or_insert(lib);
        }
        for record in &plugin.manifest.required_binaries {
            match step_of(name, &hydrate(record, &resolved)) {
                Ok(step) if steps.iter().any(|s| s.argv == step.argv) => {}
                Ok(step) => steps.push(step),
                Err(problem) => problems.push(problem),
            }
        }
    }
    (steps, problems)
}

/// For each selected plugin, the binaries it declares that `installed` lacks (a plugin whose
/// declared binaries are not all provisioned does not run: see `abxd install`).
pub fn unprovisioned(
    catalog: &Catalog,
    selected: &BTreeSet<String>,
    config: &Config,
    installed: &BTreeSet<String>,
    environ: env::Environ<'_>,
) -> BTreeMap<String, Vec<String>> {
    let mut missing = BTreeMap::new();
    for plugin in selected {
        let one = BTreeSet::from([plugin.clone()]);
        let (steps, problems) = plan(catalog, &one, config, environ);
        let mut lacking: Vec<String> = steps
            .into_iter()
            .map(|s| s.binary)
            .filter(|b| !installed.contains(b))
            .collect();
        lacking.extend(problems);
        if !lacking.is_empty() {
            missing.insert(plugin.clone(), lacking);
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn records_become_installer_runs_with_placeholders_filled_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let chrome = dir.path().join("chrome");
        std::fs::create_dir_all(&chrome).unwrap();
        std::fs::write(
            chrome.join("config.json"),
            r#"{"properties":{"NODE_BINARY":{"type":"string","default":"node"}},
                "required_binaries":[
                  {"name":"{NODE_BINARY}","binproviders":"env,apt","min_version":"22.12.0",
                   "overrides":{"apt":{"install_args":["nodejs"]}}},
                  {"name":"browsers","binproviders":"pnpm","postinstall_scripts":false,
                   "overrides":{"pnpm":{"install_root":"{ABXPKG_LIB_DIR}/pnpm/chrome"}}},
                  {"name":"{MISSING_BINARY}"}]}"#,
        )
        .unwrap();
        let title = dir.path().join("title");
        std::fs::create_dir_all(&title).unwrap();
        std::fs::write(
            title.join("config.json"),
            r#"{"required_plugins":["chrome"],"properties":{"NODE_BINARY":{"default":"node"}},
                "required_binaries":[{"name":"{NODE_BINARY}","binproviders":"env,apt",
                "min_version":"22.12.0","overrides":{"apt":{"install_args":["nodejs"]}}}]}"#,
        )
        .unwrap();
        let catalog = Catalog::load(&[dir.path().to_path_buf()]);
        let config = Config::parse(Path::new("/etc/abxd/supervisor.toml"), "").unwrap();
        let selected = catalog.select(&config, None).unwrap();
        let environ = |k: &str| (k == "HOME").then(|| "/home/op".to_string());
        let (steps, problems) = plan(&catalog, &selected, &config, &environ);
        let argvs: Vec<Vec<String>> = steps.iter().map(|s| s.argv.clone()).collect();
        assert_eq!(
            argvs,
            vec![
                vec![
                    "abxpkg".to_string(),
                    "--binproviders=env,apt".into(),
                    "--min-version=22.12.0".into(),
                    r#"--overrides={"apt":{"install_args":["nodejs"]}}"#.into(),
                    "install".into(),
                    "node".into(),
                ],
                vec![
                    "abxpkg".to_string(),
                    "--binproviders=pnpm".into(),
                    r#"--overrides={"pnpm":{"install_root":"/home/op/.config/abx/lib/pnpm/chrome"}}"#
                        .into(),
                    "--postinstall-scripts=False".into(),
                    "install".into(),
                    "browsers".into(),
                ],
            ]
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("MISSING_BINARY"), "{problems:?}");
    }
}
