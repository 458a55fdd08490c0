//! Where the plugins are when the config names no plugins dir: where abx-dl finds them — the
//! `abx_plugins` package of a Python on the `PATH` (a virtualenv's, the user's, the system's) —
//! else the plugins installed with abxd's package, else `plugins/` beside the config; and before
//! any of them the directories of `ABX_PLUGINS_DIR`, abx-dl's own override. Behind pyenv's shims
//! the Python is the version pyenv selects.
//!
//! Invariant: a look at the file system only (no Python is run): the first place that holds the
//! plugins wins, and none is no plugins dir at all rather than one that does not exist. A plugin
//! is taken from the first dir that has it, so the override's dirs come first, the last named
//! first: abx-dl loads them after its package, each replacing the plugins of the same name.

use std::path::{Path, PathBuf};

/// Where abxd's packages install the bundled plugins.
pub const PACKAGED_PLUGINS: &str = "/usr/share/abxd/plugins";

/// The plugins dir to use when none is configured, for a config in `base` under `environ`.
pub fn plugins_dirs(base: &Path, environ: impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = environ("ABX_PLUGINS_DIR")
        .unwrap_or_default()
        .split(':')
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .filter(|dir| dir.is_dir())
        .rev()
        .collect();
    let from_python = python_prefixes(&environ)
        .into_iter()
        .find_map(|prefix| abx_plugins_below(&prefix));
    let installed = from_python
        .or_else(|| Some(PathBuf::from(PACKAGED_PLUGINS)).filter(|d| d.is_dir()))
        .or_else(|| Some(base.join("plugins")).filter(|d| d.is_dir()));
    dirs.extend(installed);
    dirs.dedup();
    dirs
}

/// The prefixes a Python on the `PATH` installs packages below, in the order it is found: each
/// `PATH` entry's parent (a virtualenv's `bin/`) — for pyenv's `shims/`, the prefix of the
/// version pyenv selects — then the user's and the system's.
fn python_prefixes(environ: &impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut prefixes: Vec<PathBuf> = environ("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|dir| !dir.is_empty())
        .flat_map(|dir| match pyenv_versions(Path::new(dir), environ) {
            Some(versions) => versions,
            None => Path::new(dir)
                .parent()
                .map(Path::to_path_buf)
                .into_iter()
                .collect(),
        })
        .collect();
    if let Some(home) = environ("HOME") {
        prefixes.push(Path::new(&home).join(".local"));
    }
    prefixes.extend(["/usr/local", "/usr"].map(PathBuf::from));
    prefixes
}

/// For a `PATH` entry that is pyenv's `shims/` (beside a `versions/`), the prefixes of the
/// versions pyenv selects, as it selects them: `PYENV_VERSION`, else the first
/// `.python-version` from the current directory up, else the global `version` file (several
/// names, separated by `:` or lines, are tried in order; `system` is the system's, below).
fn pyenv_versions(dir: &Path, environ: &impl Fn(&str) -> Option<String>) -> Option<Vec<PathBuf>> {
    let root = dir
        .parent()
        .filter(|_| dir.file_name().is_some_and(|n| n == "shims"))?;
    let versions = root.join("versions");
    if !versions.is_dir() {
        return None;
    }
    let local = || {
        let cwd = std::env::current_dir().ok()?;
        cwd.ancestors()
            .find_map(|d| std::fs::read_to_string(d.join(".python-version")).ok())
    };
    let named = environ("PYENV_VERSION")
        .or_else(local)
        .or_else(|| std::fs::read_to_string(root.join("version")).ok())
        .unwrap_or_default();
    Some(
        named
            .split([':', '\n'])
            .map(str::trim)
            .filter(|v| !v.is_empty() && *v != "system")
            .map(|v| versions.join(v))
            .collect(),
    )
}

/// `<prefix>/lib/python3.*/{site,dist}-packages/abx_plugins/plugins`, if one is there.
fn abx_plugins_below(prefix: &Path) -> Option<PathBuf> {
    let mut pythons: Vec<PathBuf> = std::fs::read_dir(prefix.join("lib"))
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path())
        .collect();
    pythons.sort();
    pythons.reverse();
    pythons.into_iter().find_map(|lib| {
        ["site-packages", "dist-packages"]
            .map(|packages| lib.join(packages).join("abx_plugins/plugins"))
            .into_iter()
            .find(|dir| dir.is_dir())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_abx_plugins_of_a_virtualenv_on_the_path_come_first_then_plugins_beside_the_config() {
        let root = tempfile::tempdir().unwrap();
        let venv = root.path().join("venv");
        let plugins = venv.join("lib/python3.13/site-packages/abx_plugins/plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        let config_dir = root.path().join("etc");
        std::fs::create_dir_all(config_dir.join("plugins")).unwrap();
        let path = format!("/nowhere/bin:{}:/usr/bin", venv.join("bin").display());
        let with_venv = |key: &str| (key == "PATH").then(|| path.clone());
        assert_eq!(plugins_dirs(&config_dir, with_venv), vec![plugins]);
        let without = |_: &str| None;
        let found = plugins_dirs(&config_dir, without);
        if !Path::new(PACKAGED_PLUGINS).is_dir() {
            assert_eq!(found, vec![config_dir.join("plugins")]);
        }
        let empty = root.path().join("empty");
        if !Path::new(PACKAGED_PLUGINS).is_dir() {
            assert!(plugins_dirs(&empty, without).is_empty());
        }
    }

    #[test]
    fn behind_pyenvs_shims_the_version_pyenv_selects_is_looked_in() {
        let root = tempfile::tempdir().unwrap();
        let pyenv = root.path().join(".pyenv");
        let plugins = |version: &str| {
            pyenv.join(format!(
                "versions/{version}/lib/python3.13/site-packages/abx_plugins/plugins"
            ))
        };
        for version in ["3.11.7", "3.13.0"] {
            std::fs::create_dir_all(pyenv.join("versions").join(version).join("bin")).unwrap();
        }
        std::fs::create_dir_all(plugins("3.13.0")).unwrap();
        std::fs::create_dir_all(pyenv.join("shims")).unwrap();
        std::fs::write(pyenv.join("version"), "3.11.7\n3.13.0\n").unwrap();
        let path = format!("{}:/usr/bin", pyenv.join("shims").display());
        let global = |key: &str| (key == "PATH").then(|| path.clone());
        // (The global file names 3.11.7 first, which has no abx-plugins: 3.13.0 is next.)
        assert_eq!(plugins_dirs(root.path(), global)[0], plugins("3.13.0"));
        let chosen = |key: &str| match key {
            "PATH" => Some(path.clone()),
            "PYENV_VERSION" => Some("3.11.7".into()),
            _ => None,
        };
        assert!(!plugins_dirs(root.path(), chosen).contains(&plugins("3.13.0")));
    }

    #[test]
    fn abx_plugins_dir_comes_before_the_package_the_last_named_first_as_abx_dl_overrides() {
        let root = tempfile::tempdir().unwrap();
        let venv = root.path().join("venv");
        let plugins = venv.join("lib/python3.13/site-packages/abx_plugins/plugins");
        let (first, second) = (root.path().join("first"), root.path().join("second"));
        for dir in [&plugins, &venv.join("bin"), &first, &second] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let path = venv.join("bin").display().to_string();
        let overrides = format!(
            "{}::{}:{}",
            first.display(),
            root.path().join("missing").display(),
            second.display()
        );
        let environ = |key: &str| match key {
            "PATH" => Some(path.clone()),
            "ABX_PLUGINS_DIR" => Some(overrides.clone()),
            _ => None,
        };
        assert_eq!(
            plugins_dirs(root.path(), environ),
            vec![second, first, plugins]
        );
    }
}
