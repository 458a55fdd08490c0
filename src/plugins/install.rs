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
use std::path::{Path, PathBuf};

/// The program that installs binaries (from the abx-plugins virtualenv on the PATH).
pub const INSTALLER: &str = "abxpkg";

/// One binary to provision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallStep {
    /// The plugin that declared it (the first, if several did).
    pub plugin: String,
    pub binary: String,
    /// The variable an ArchiveBox user sets to name another one (`NODE_BINARY`): the
    /// placeholder of its declared name, else `<NAME>_BINARY` as abxpkg reads it.
    pub override_key: String,
    /// The installer's command line, program first.
    pub argv: Vec<String>,
}

/// Where the installer found (or installed) a binary, from the line it ends with on success:
/// `VERSION   ABSPATH (PROVIDER) NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub version: String,
    pub abspath: String,
    pub provider: String,
}

impl Found {
    pub fn parse(line: &str) -> Option<Found> {
        let (version, rest) = line.trim().split_once(char::is_whitespace)?;
        let (abspath, rest) = rest.trim_start().rsplit_once(" (")?;
        let (provider, _name) = rest.split_once(')')?;
        Some(Found {
            version: version.to_string(),
            abspath: abspath.trim().to_string(),
            provider: provider.to_string(),
        })
    }

    /// Its path made absolute: the installer prints one below its working directory `cwd` as
    /// `./lib/…` and one below its `home` as `~/…`, which mean nothing to a reader elsewhere.
    pub fn anchored(self, cwd: &Path, home: Option<&Path>) -> Found {
        let path = self.abspath.as_str();
        let abspath = match (path.strip_prefix("~/"), home) {
            (Some(below), Some(home)) => home.join(below),
            _ if Path::new(path).is_relative() && !path.starts_with('~') => {
                cwd.join(path.strip_prefix("./").unwrap_or(path))
            }
            _ => return self,
        };
        Found {
            abspath: abspath.display().to_string(),
            ..self
        }
    }
}

/// Why the installer could not have a binary, from the error box it prints on stderr: what
/// each provider said, one clause each (`env: … resolved node with version 22.23.3 which does
/// not satisfy min_version 24.22.1; apt: …`), or `None` when it printed no such box.
pub fn failure_of(stderr: &str) -> Option<String> {
    let inside = stderr
        .lines()
        .skip_while(|line| !line.trim_start().starts_with('╭'))
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('╰'))
        .map(|line| line.trim().trim_matches('│').trim_end());
    let mut clauses: Vec<String> = Vec::new();
    for line in inside {
        let text = line.trim();
        let starts_clause = !line.starts_with("  ")
            && text.split_once(": ").is_some_and(|(head, _)| {
                !head.is_empty()
                    && head
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
        match clauses.last_mut() {
            _ if text.is_empty() => {}
            Some(last) if !starts_clause => {
                last.push(' ');
                last.push_str(text);
            }
            _ => clauses.push(text.to_string()),
        }
    }
    // (The first line only says which providers were tried: each clause names its own.)
    if clauses
        .first()
        .is_some_and(|c| c.starts_with("Unable to install"))
        && clauses.len() > 1
    {
        clauses.remove(0);
    }
    let said = clauses.join("; ");
    (!said.is_empty()).then_some(said)
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
fn step_of(plugin: &str, declared: &Value, record: &Value) -> Result<InstallStep, String> {
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
    if let Some(version) = record["max_version"].as_str().filter(|v| !v.is_empty()) {
        argv.push(format!("--max-version={version}"));
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
        override_key: override_key(declared["name"].as_str().unwrap_or(&name)),
        binary: name,
        argv,
    })
}

/// The variable that names another binary for a declared name: `{NODE_BINARY}` → `NODE_BINARY`,
/// `abxbus` → `ABXBUS_BINARY` (abxpkg's own override for a literal name).
fn override_key(declared: &str) -> String {
    let declared = declared.trim();
    match declared.strip_prefix('{').and_then(|d| d.strip_suffix('}')) {
        Some(key) => key.to_string(),
        None => format!("{}_BINARY", declared.to_uppercase().replace('-', "_")),
    }
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
            match step_of(name, record, &hydrate(record, &resolved)) {
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

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn what_the_installer_ends_with_says_where_the_binary_is() {
        assert_eq!(
            Found::parse("156.0.8078   /usr/bin/chromium (puppeteer) chromium"),
            Some(Found {
                version: "156.0.8078".into(),
                abspath: "/usr/bin/chromium".into(),
                provider: "puppeteer".into(),
            })
        );
        assert_eq!(
            Found::parse("1.21.3       ./lib/env/bin/wget (env) wget").map(|f| f.abspath),
            Some("./lib/env/bin/wget".into())
        );
        assert_eq!(Found::parse("Done!"), None);
    }

    #[test]
    fn a_path_the_installer_printed_relative_is_recorded_absolute() {
        let found = |line: &str| {
            let home = Path::new("/var/lib/abxd");
            Found::parse(line)
                .unwrap()
                .anchored(home, Some(home))
                .abspath
        };
        assert_eq!(
            found("2.5.56  ./.config/abx/lib/pnpm/index.js (pnpm) abxbus"),
            "/var/lib/abxd/.config/abx/lib/pnpm/index.js"
        );
        assert_eq!(
            found("22.23.3  ~/.config/abx/lib/env/bin/node (env) node"),
            "/var/lib/abxd/.config/abx/lib/env/bin/node"
        );
        assert_eq!(
            found("1.0  lib/env/bin/wget (env) wget"),
            "/var/lib/abxd/lib/env/bin/wget"
        );
        assert_eq!(
            found("156  /usr/bin/chromium (env) chromium"),
            "/usr/bin/chromium"
        );
    }

    #[test]
    fn the_installers_error_box_becomes_one_clause_per_provider() {
        let stderr = "⛟  Installing node via node...\n  $ /usr/bin/echo 1.0.0\n\
╭─ Error ──────────────────────────────────────────────────────────────────────╮\n\
│ Unable to install binary node via providers env, node, apt, brew.            │\n\
│ env: 🚫 EnvProvider.install resolved node with version 22.23.3 which does    │\n\
│ not satisfy min_version 24.22.1                                              │\n\
│ node: <urlopen error [Errno -2] Name or service not known>                   │\n\
│ apt: 🚫 AptProvider.update resolved node with version 20.20.2 which does not │\n\
│ satisfy min_version 24.22.1                                                  │\n\
╰──────────────────────────────────────────────────────────────────────────────╯\n";
        assert_eq!(
            failure_of(stderr).unwrap(),
            "env: 🚫 EnvProvider.install resolved node with version 22.23.3 which does not \
             satisfy min_version 24.22.1; node: <urlopen error [Errno -2] Name or service not \
             known>; apt: 🚫 AptProvider.update resolved node with version 20.20.2 which does \
             not satisfy min_version 24.22.1"
        );
        let pnpm = "╭─ Error ─╮\n\
│ Unable to install binary abxbus via providers pnpm.                          │\n\
│ pnpm: PnpmProvider install failed for ['abxbus@2.5.79'] with returncode 1    │\n\
│     ERR_PNPM_NO_MATCHING_VERSION  No matching version found for              │\n\
│ abxbus@2.5.79 while fetching it from https://registry.example/               │\n\
│                                                                              │\n\
│     The latest release of abxbus is \"2.5.56\". Published at 9/13/2026         │\n\
╰─╯\n";
        assert_eq!(
            failure_of(pnpm).unwrap(),
            "pnpm: PnpmProvider install failed for ['abxbus@2.5.79'] with returncode 1 \
             ERR_PNPM_NO_MATCHING_VERSION  No matching version found for abxbus@2.5.79 while \
             fetching it from https://registry.example/ The latest release of abxbus is \
             \"2.5.56\". Published at 9/13/2026"
        );
        assert_eq!(failure_of("Traceback …\nValueError: x\n"), None);
    }

    #[test]
    fn the_override_of_a_binary_is_its_placeholder_or_abxpkgs_name_binary() {
        assert_eq!(override_key("{CHROME_BINARY}"), "CHROME_BINARY");
        assert_eq!(override_key("abxbus"), "ABXBUS_BINARY");
        assert_eq!(override_key("single-file"), "SINGLE_FILE_BINARY");
    }
}
