//! A crawl's ArchiveBox persona (`abxctl add --persona NAME`). ArchiveBox keeps each persona in
//! a directory of its name under its collection's `personas/`: a browser profile
//! (`chrome_profile/`), `cookies.txt`, `auth.json`. As ArchiveBox does for its own crawls, hooks
//! never work in the persona itself: each runtime persona (the `PERSONAS_DIR` a hook gets, see
//! `request`) gets a copy of it, made before its first hook starts, and the hooks get the
//! variables that name that copy — `ACTIVE_PERSONA`, and `COOKIES_FILE` and `AUTH_STORAGE_FILE`
//! where the persona has them, unless abxd's own config names others.
//!
//! Invariants: the persona is only read, and nothing in it is followed through a symbolic link
//! (a link is not copied); what a browser holds only while it runs (locks, caches, sessions) is
//! not copied, as ArchiveBox leaves it out; a runtime persona is copied once — a crawl started
//! again keeps the profile its browser left — and is its hooks' user's.

use crate::hook_user::HookUser;
use std::path::Path;

/// What a browser holds only while it runs, or rebuilds: left out of the copy (ArchiveBox's
/// `VOLATILE_PROFILE_DIR_NAMES` and `VOLATILE_PROFILE_FILE_NAMES`).
const VOLATILE: &[&str] = &[
    "Cache",
    "Code Cache",
    "GPUCache",
    "ShaderCache",
    "Crashpad",
    "BrowserMetrics",
    "Sessions",
    "Sessions_Encrypted",
    "BrowserMetrics-spare.pma",
    "RunningChromeVersion",
    "DevToolsActivePort",
    "SingletonCookie",
    "SingletonLock",
    "SingletonSocket",
    "Current Session",
    "Current Tabs",
    "Last Session",
    "Last Tabs",
];

/// The files of a persona a hook is pointed at, by the variable that names each: only if the
/// persona has it (`auth.json` only if not empty), as ArchiveBox derives them.
const NAMED_FILES: &[(&str, &str)] = &[
    ("COOKIES_FILE", "cookies.txt"),
    ("AUTH_STORAGE_FILE", "auth.json"),
];

/// The variables a hook whose runtime personas are in `runtime` gets for persona `name`, over
/// `env` (the hook's own, whose non-empty `COOKIES_FILE` or `AUTH_STORAGE_FILE` stands).
pub fn env_for(name: &str, runtime: &Path, env: &mut Vec<(String, String)>) {
    env.retain(|(key, _)| key != "ACTIVE_PERSONA");
    env.push(("ACTIVE_PERSONA".into(), name.into()));
    let copy = runtime.join(name);
    for (variable, file) in NAMED_FILES {
        let given = env.iter().any(|(k, v)| k == variable && !v.is_empty());
        let path = copy.join(file);
        if !given && path.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
            env.retain(|(key, _)| key != variable);
            env.push((variable.to_string(), path.display().to_string()));
        }
    }
}

/// Copies persona `name` from `root` into the runtime personas dir `runtime`, unless it was
/// copied there before, giving the copy to `user` (the hooks' user, if not abxd's own). A
/// persona that does not exist is an error naming it (the crawl's hooks would archive as
/// nobody, which is not what was asked).
pub fn prepare(
    root: &Path,
    name: &str,
    runtime: &Path,
    user: Option<&HookUser>,
) -> std::io::Result<()> {
    let (persona, copy) = (root.join(name), runtime.join(name));
    if copy.symlink_metadata().is_ok() {
        return Ok(());
    }
    if !persona.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "no persona {name:?}: {} is not a directory",
                persona.display()
            ),
        ));
    }
    // (The runtime personas dir, and each dir made on the way to it, is its hooks' to write in:
    // other plugins keep state there, as they do when they make it themselves.)
    let mut missing = Vec::new();
    let mut dir = runtime;
    while dir.symlink_metadata().is_err() {
        missing.push(dir);
        dir = dir.parent().unwrap_or(Path::new("/"));
    }
    for dir in missing.into_iter().rev() {
        std::fs::create_dir(dir)?;
        if let Some(user) = user {
            user.own_tree(dir)?;
        }
    }
    // (Copied beside, then renamed: a copy cut short is never taken for a whole one.)
    let partial = runtime.join(format!(".{name}.partial"));
    if partial.symlink_metadata().is_ok() {
        std::fs::remove_dir_all(&partial)?;
    }
    copy_dir(&persona, &partial)?;
    std::fs::create_dir_all(partial.join("chrome_profile"))?;
    if let Some(user) = user {
        user.own_tree(&partial)?;
    }
    std::fs::rename(&partial, &copy)
}

/// Copies the directory `from` to `to` (made anew), leaving out links, what is not a file or a
/// directory, and [`VOLATILE`] names.
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let mode = from.symlink_metadata()?.permissions().mode() & 0o777;
    std::fs::DirBuilder::new().mode(mode | 0o700).create(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if VOLATILE.iter().any(|v| name.to_str() == Some(v)) {
            continue;
        }
        let kind = entry.file_type()?;
        let (source, target) = (entry.path(), to.join(&name));
        if kind.is_dir() {
            copy_dir(&source, &target)?;
        } else if kind.is_file() {
            match std::fs::copy(&source, &target) {
                Ok(_) => {}
                // (As ArchiveBox: a part of a profile abxd cannot read is not needed to start
                // a browser on the copy.)
                Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
                    log::warn!("persona: {} not copied: {err}", source.display());
                }
                Err(err) => return Err(err),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_persona_is_copied_once_without_what_a_browser_holds_while_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (root, runtime) = (dir.path().join("personas"), dir.path().join("run"));
        let profile = root.join("Work/chrome_profile");
        std::fs::create_dir_all(profile.join("Default/Cache")).unwrap();
        std::fs::write(profile.join("Default/Cookies"), "db").unwrap();
        std::fs::write(profile.join("Default/Cache/x"), "cache").unwrap();
        std::os::unix::fs::symlink("/etc", profile.join("SingletonLock")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", profile.join("elsewhere")).unwrap();
        std::fs::write(
            root.join("Work/cookies.txt"),
            "# Netscape HTTP Cookie File\n",
        )
        .unwrap();
        std::fs::write(root.join("Work/auth.json"), "").unwrap();

        prepare(&root, "Work", &runtime, None).unwrap();
        let copy = runtime.join("Work/chrome_profile");
        assert_eq!(
            std::fs::read_to_string(copy.join("Default/Cookies")).unwrap(),
            "db"
        );
        assert!(!copy.join("Default/Cache").exists());
        assert!(copy.join("SingletonLock").symlink_metadata().is_err());
        assert!(copy.join("elsewhere").symlink_metadata().is_err());

        // The browser's changes to the copy are kept when the crawl starts again.
        std::fs::write(copy.join("Default/Cookies"), "changed").unwrap();
        prepare(&root, "Work", &runtime, None).unwrap();
        assert_eq!(
            std::fs::read_to_string(copy.join("Default/Cookies")).unwrap(),
            "changed"
        );

        let mut env = vec![("COOKIES_FILE".to_string(), String::new())];
        env_for("Work", &runtime, &mut env);
        let get = |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        assert_eq!(get("ACTIVE_PERSONA").as_deref(), Some("Work"));
        let cookies = runtime.join("Work/cookies.txt").display().to_string();
        assert_eq!(get("COOKIES_FILE"), Some(cookies));
        assert_eq!(
            get("AUTH_STORAGE_FILE"),
            None,
            "an empty auth.json names nothing"
        );

        // abxd's own config names its cookies: they stand.
        let mut env = vec![("COOKIES_FILE".to_string(), "/etc/abxd/cookies.txt".into())];
        env_for("Work", &runtime, &mut env);
        assert_eq!(env[0].1, "/etc/abxd/cookies.txt");
    }

    #[test]
    fn a_persona_that_does_not_exist_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = prepare(&dir.path().join("personas"), "Nobody", dir.path(), None).unwrap_err();
        assert!(err.to_string().contains("no persona \"Nobody\""), "{err}");
    }
}
