//! What a hook is started with: argv, cwd, environment, log files (`abxd-hooks(7)`).
//!
//! Invariant: every hook gets absolute `CRAWL_DIR` and `SNAP_DIR` (a crawl hook's `SNAP_DIR` is
//! its crawl dir, as abx-dl runs crawl hooks in the run dir), `EXTRA_CONTEXT`, its plugin's
//! resolved config, a `TMP_DIR`, a `PERSONAS_DIR` of the crawl's own outside the archive unless
//! one is configured (see `personas_dir`), and a cwd of `<dir>/<plugin>/`; a foreground hook's row carries its timeout,
//! a background hook's none (it lives as long as its scope). A hook of a hook user (`hook_user`)
//! runs as it, with its `HOME`, `USER` and `LOGNAME`.

use crate::domain::Kind;
use crate::hook_user::HookUser;
use crate::logs::Logs;
use crate::plugins::Prepared;
use crate::spawn::SpawnRequest;
use crate::store::{Crawl, NewProcess, Snapshot};
use std::path::{Path, PathBuf};

pub fn crawl_dir(data_dir: &Path, crawl_id: i64) -> PathBuf {
    data_dir.join("crawls").join(crawl_id.to_string())
}

pub fn snapshot_dir(data_dir: &Path, crawl_id: i64, snapshot_id: i64) -> PathBuf {
    crawl_dir(data_dir, crawl_id)
        .join("snapshots")
        .join(snapshot_id.to_string())
}

/// What a set of hooks runs for: a crawl (crawl hooks) or one of its snapshots.
#[derive(Debug, Clone)]
pub struct Scope {
    pub data_dir: PathBuf,
    pub crawl: Crawl,
    pub snapshot: Option<Snapshot>,
    /// The process row of the worker running the hooks.
    pub parent_row: i64,
    /// The user the hooks run as, if not abxd's own (`hook_user`).
    pub run_as: Option<HookUser>,
    /// Where the ArchiveBox personas are, the crawl's `--persona` among them (`persona`).
    pub personas: PathBuf,
}

impl Scope {
    /// The dir the scope's hooks write under (`SNAP_DIR`).
    pub fn dir(&self) -> PathBuf {
        match &self.snapshot {
            Some(s) => snapshot_dir(&self.data_dir, self.crawl.id, s.id),
            None => crawl_dir(&self.data_dir, self.crawl.id),
        }
    }

    pub fn snapshot_id(&self) -> Option<i64> {
        self.snapshot.as_ref().map(|s| s.id)
    }

    fn url(&self) -> &str {
        match &self.snapshot {
            Some(s) => &s.url,
            None => self.crawl.urls.first().map(String::as_str).unwrap_or(""),
        }
    }
}

/// The `TMP_DIR` of a scope's hooks (disposable runtime files, browser profiles): abxd's own
/// `TMP_DIR` when set, else `<data_dir>/tmp` — below it, a crawl user's own (`run_as`).
pub fn tmp_dir(data_dir: &Path, run_as: Option<&HookUser>) -> PathBuf {
    let shared = crate::plugins::env::process_environ("TMP_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| data_dir.join("tmp"));
    match run_as {
        Some(user) => user.tmp_below(&shared),
        None => shared,
    }
}

/// Where the runtime persona (a browser profile) of the work in `dir` lives, as abx-dl 1.13
/// keeps it: outside the archive, in `<TMP_DIR>/personas/<key of dir>/.persona` — unless
/// `<dir>/.persona` is a link the host made to a prepared one (`linked`), which is used.
pub fn runtime_persona(dir: &Path, tmp_dir: &Path, linked: bool) -> PathBuf {
    if linked {
        return dir.join(".persona");
    }
    // FNV-1a of the path: stable across runs and builds, so a restarted crawl finds its profile.
    let key = dir
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    tmp_dir
        .join("personas")
        .join(format!("{key:016x}"))
        .join(".persona")
}

/// Whether the host linked a prepared persona at `<dir>/.persona` (see [`runtime_persona`]).
fn host_linked_persona(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(".persona")).is_ok_and(|m| m.is_symlink())
}

/// Removes the runtime persona of the work in `dir` (its work is over), unless the host linked
/// one there.
pub fn drop_runtime_persona(dir: &Path, data_dir: &Path, run_as: Option<&HookUser>) {
    let linked = host_linked_persona(dir);
    let persona = runtime_persona(dir, &tmp_dir(data_dir, run_as), linked);
    if let (false, Some(key_dir)) = (linked, persona.parent()) {
        match std::fs::remove_dir_all(key_dir) {
            Ok(()) => log::debug!("removed the runtime persona {}", key_dir.display()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => log::warn!("cannot remove {}: {err}", key_dir.display()),
        }
    }
}

/// The `PERSONAS_DIR` a hook gets where abxd decides it, as abx-dl does: the runtime persona of
/// its snapshot when Chrome runs per snapshot (`CHROME_ISOLATION=snapshot`), else, unless one is
/// configured, its crawl's — so each crawl's browser has a profile of its own, never one shared
/// with another crawl running at the same time or left by an earlier one. `None`: the configured
/// one stands. (`persona_of` gives a dir's runtime persona.)
fn personas_dir(
    configured: Option<&str>,
    isolation: Option<&str>,
    crawl_dir: &Path,
    snapshot_dir: Option<&Path>,
    persona_of: impl Fn(&Path) -> PathBuf,
) -> Option<PathBuf> {
    let per_snapshot = isolation.is_some_and(|i| i.trim().eq_ignore_ascii_case("snapshot"));
    match (snapshot_dir, per_snapshot, configured) {
        (Some(dir), true, _) => Some(persona_of(dir)),
        (_, _, None) => Some(persona_of(crawl_dir)),
        (_, _, Some(_)) => None,
    }
}

/// A row's UUIDv7, or (a row written before there were any) its integer id.
fn uuid_or_id(uuid: &Option<String>, id: i64) -> String {
    uuid.clone().unwrap_or_else(|| id.to_string())
}

/// The spawn request of `prepared` in `scope`, for result `result_id`.
pub fn spawn_request(prepared: &Prepared, scope: &Scope, result_id: i64) -> SpawnRequest {
    let hook = &prepared.hook;
    let dir = scope.dir();
    let cwd = dir.join(&hook.plugin);
    let mut argv = vec![
        hook.path.display().to_string(),
        format!("--url={}", scope.url()),
    ];
    // abx-dl 1.13: a snapshot hook gets its snapshot and depth; a crawl hook its URL alone.
    // (Ids as abx-dl gives them: the UUIDv7s; abxd's own are in CRAWL_ID and SNAPSHOT_ID.)
    let snapshot_uuid = scope.snapshot.as_ref().map(|s| uuid_or_id(&s.uuid, s.id));
    if let Some(snapshot) = &scope.snapshot {
        argv.push(format!(
            "--snapshot-id={}",
            uuid_or_id(&snapshot.uuid, snapshot.id)
        ));
        argv.push(format!("--depth={}", snapshot.depth));
    }

    let extra_context = serde_json::json!({
        "crawl_id": uuid_or_id(&scope.crawl.uuid, scope.crawl.id),
        "snapshot_id": snapshot_uuid,
        // (1.13 hooks read `--depth`; 1.12 ones read this.)
        "snapshot_depth": scope.snapshot.as_ref().map(|s| s.depth),
        "plugin": hook.plugin,
        "hook_name": hook.stem,
    });
    let crawl_dir = crawl_dir(&scope.data_dir, scope.crawl.id);
    let mut env: Vec<(String, String)> = prepared
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !prepared.env.contains_key("TIMEOUT") {
        let seconds = prepared.timeout.as_secs_f64().ceil().max(1.0) as u64;
        env.push(("TIMEOUT".into(), seconds.to_string()));
    }
    env.extend([
        ("DATA_DIR".into(), scope.data_dir.display().to_string()),
        ("CRAWL_DIR".into(), crawl_dir.display().to_string()),
        ("SNAP_DIR".into(), dir.display().to_string()),
        ("EXTRA_CONTEXT".into(), extra_context.to_string()),
        ("CRAWL_ID".into(), scope.crawl.id.to_string()),
        ("URL".into(), scope.url().to_string()),
        ("PLUGIN".into(), hook.plugin.clone()),
    ]);
    let isolation = prepared.env.get("CHROME_ISOLATION").map(String::as_str);
    // (Configured: in the plugin's resolved config, or inherited from abxd's environment.)
    let configured =
        prepared.env.get("PERSONAS_DIR").cloned().or_else(|| {
            crate::plugins::env::process_environ("PERSONAS_DIR").filter(|v| !v.is_empty())
        });
    let snapshot_dir = scope.snapshot.is_some().then_some(dir.as_path());
    let tmp = tmp_dir(&scope.data_dir, scope.run_as.as_ref());
    let persona_of = |dir: &Path| runtime_persona(dir, &tmp, host_linked_persona(dir));
    if !prepared.env.contains_key("TMP_DIR") {
        env.push(("TMP_DIR".into(), tmp.display().to_string()));
    }
    let decided = personas_dir(
        configured.as_deref(),
        isolation,
        &crawl_dir,
        snapshot_dir,
        persona_of,
    );
    if let Some(personas) = decided {
        env.retain(|(key, _)| key != "PERSONAS_DIR");
        env.push(("PERSONAS_DIR".into(), personas.display().to_string()));
    }
    if let Some(snapshot) = &scope.snapshot {
        env.push(("SNAPSHOT_ID".into(), snapshot.id.to_string()));
        env.push(("SNAPSHOT_DIR".into(), dir.display().to_string()));
        env.push(("SNAPSHOT_DEPTH".into(), snapshot.depth.to_string()));
    }
    if let Some(user) = &scope.run_as {
        env.retain(|(key, _)| !matches!(key.as_str(), "HOME" | "USER" | "LOGNAME"));
        env.extend([
            ("HOME".into(), user.home.display().to_string()),
            ("USER".into(), user.name.clone()),
            ("LOGNAME".into(), user.name.clone()),
        ]);
        // (A crawl user's hooks use the library the crawl users share.)
        if let Some(library) = &user.library {
            env.retain(|(key, _)| key != "ABXPKG_LIB_DIR");
            env.push(("ABXPKG_LIB_DIR".into(), library.dir.display().to_string()));
        }
    }
    let logs = dir.join("logs");
    let timeout_ms = (!hook.background).then_some(prepared.timeout.as_millis() as i64);
    SpawnRequest {
        process: NewProcess {
            parent_id: Some(scope.parent_row),
            kind: Kind::Hook,
            crawl_id: Some(scope.crawl.id),
            snapshot_id: scope.snapshot_id(),
            result_id: Some(result_id),
            argv,
            cwd: cwd.display().to_string(),
            timeout_ms,
        },
        env,
        inherit_env: true,
        logs: Logs::Files {
            stdout: logs.join(format!("{}.stdout.log", hook.file_name)),
            stderr: logs.join(format!("{}.stderr.log", hook.file_name)),
            beneath: scope.data_dir.clone(),
        },
        limits: cgroup_limits(prepared),
        run_as: scope.run_as.as_ref().map(|user| (user.uid, user.gid)),
        umask: None,
        groups: scope
            .run_as
            .as_ref()
            .map(HookUser::more_groups)
            .unwrap_or_default(),
        stdin: None,
    }
}

/// The limits of a hook's cgroup: `[plugins.X]`'s, and its memory limit (`MEMORY_LIMIT`, the
/// hook contract's) — the kernel bounds the tree by it where the memory controller is there;
/// the runner's watch of its resident memory does everywhere.
fn cgroup_limits(prepared: &Prepared) -> crate::cgroup::Limits {
    crate::cgroup::Limits {
        memory_limit: super::memory::limit_of(prepared, crate::plugins::env::process_environ),
        ..prepared.limits
    }
}

#[cfg(test)]
mod tests {
    use super::{personas_dir, runtime_persona};
    use std::path::{Path, PathBuf};

    const CRAWL: &str = "/data/crawls/7";
    const SNAP: &str = "/data/crawls/7/snapshots/9";

    fn decide(configured: Option<&str>, isolation: Option<&str>, snap: bool) -> Option<PathBuf> {
        let persona_of = |dir: &Path| dir.join("persona-of");
        personas_dir(
            configured,
            isolation,
            Path::new(CRAWL),
            snap.then(|| Path::new(SNAP)),
            persona_of,
        )
    }

    #[test]
    fn every_hook_of_a_crawl_shares_the_crawls_own_persona_unless_one_is_configured() {
        let crawls = Some(PathBuf::from("/data/crawls/7/persona-of"));
        assert_eq!(decide(None, None, false), crawls);
        assert_eq!(decide(None, Some("crawl"), true), crawls);
        assert_eq!(decide(Some("/srv/personas"), None, false), None);
        assert_eq!(decide(Some("/srv/personas"), Some("crawl"), true), None);
    }

    #[test]
    fn a_browser_per_snapshot_gets_the_snapshots_own_persona_as_abx_dl_gives_it() {
        let own = Some(PathBuf::from("/data/crawls/7/snapshots/9/persona-of"));
        assert_eq!(decide(None, Some("snapshot"), true), own);
        assert_eq!(decide(Some("/srv/personas"), Some(" Snapshot "), true), own);
        // (Crawl hooks have no snapshot: the crawl's.)
        assert_eq!(
            decide(None, Some("snapshot"), false),
            Some(PathBuf::from("/data/crawls/7/persona-of"))
        );
    }

    #[test]
    fn a_runtime_persona_lives_outside_the_archive_one_per_dir_unless_the_host_linked_one() {
        let tmp = Path::new("/data/tmp");
        let crawl = runtime_persona(Path::new(CRAWL), tmp, false);
        assert!(crawl.starts_with("/data/tmp/personas"), "{crawl:?}");
        assert!(crawl.ends_with(".persona"));
        assert_eq!(crawl, runtime_persona(Path::new(CRAWL), tmp, false));
        assert_ne!(crawl, runtime_persona(Path::new(SNAP), tmp, false));
        assert_eq!(
            runtime_persona(Path::new(CRAWL), tmp, true),
            PathBuf::from("/data/crawls/7/.persona")
        );
    }
}
