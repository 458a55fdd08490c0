//! What a hook is started with: argv, cwd, environment, log files (`abxd-hooks(7)`).
//!
//! Invariant: every hook gets absolute `CRAWL_DIR` and `SNAP_DIR` (a crawl hook's `SNAP_DIR` is
//! its crawl dir, as abx-dl runs crawl hooks in the run dir), `EXTRA_CONTEXT`, its plugin's
//! resolved config, a `PERSONAS_DIR` of the crawl's own unless one is configured (see
//! `personas_dir`), and a cwd of `<dir>/<plugin>/`; a foreground hook's row carries its timeout,
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

/// The `PERSONAS_DIR` a hook gets where abxd decides it, as abx-dl does: a snapshot's own
/// `<SNAP_DIR>/.persona` when Chrome runs per snapshot (`CHROME_ISOLATION=snapshot`), else, unless
/// one is configured, the crawl's `<CRAWL_DIR>/.persona` — so each crawl's browser has a profile
/// of its own, never one shared with another crawl running at the same time or left by an
/// earlier one. `None`: the configured one stands.
fn personas_dir(
    configured: Option<&str>,
    isolation: Option<&str>,
    crawl_dir: &Path,
    snapshot_dir: Option<&Path>,
) -> Option<PathBuf> {
    let per_snapshot = isolation.is_some_and(|i| i.trim().eq_ignore_ascii_case("snapshot"));
    match (snapshot_dir, per_snapshot, configured) {
        (Some(dir), true, _) => Some(dir.join(".persona")),
        (_, _, None) => Some(crawl_dir.join(".persona")),
        (_, _, Some(_)) => None,
    }
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
    if let Some(snapshot) = &scope.snapshot {
        argv.push(format!("--snapshot-id={}", snapshot.id));
        argv.push(format!("--depth={}", snapshot.depth));
    }

    let extra_context = serde_json::json!({
        "crawl_id": scope.crawl.id,
        "snapshot_id": scope.snapshot_id(),
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
    if let Some(personas) = personas_dir(configured.as_deref(), isolation, &crawl_dir, snapshot_dir)
    {
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
        logs: Logs::Files {
            stdout: logs.join(format!("{}.stdout.log", hook.file_name)),
            stderr: logs.join(format!("{}.stderr.log", hook.file_name)),
            beneath: scope.data_dir.clone(),
        },
        limits: prepared.limits,
        run_as: scope.run_as.as_ref().map(|user| (user.uid, user.gid)),
    }
}

#[cfg(test)]
mod tests {
    use super::personas_dir;
    use std::path::{Path, PathBuf};

    const CRAWL: &str = "/data/crawls/7";
    const SNAP: &str = "/data/crawls/7/snapshots/9";

    fn decide(configured: Option<&str>, isolation: Option<&str>, snap: bool) -> Option<PathBuf> {
        personas_dir(
            configured,
            isolation,
            Path::new(CRAWL),
            snap.then(|| Path::new(SNAP)),
        )
    }

    #[test]
    fn every_hook_of_a_crawl_shares_the_crawls_own_persona_unless_one_is_configured() {
        let crawls = Some(PathBuf::from("/data/crawls/7/.persona"));
        assert_eq!(decide(None, None, false), crawls);
        assert_eq!(decide(None, Some("crawl"), true), crawls);
        assert_eq!(decide(Some("/srv/personas"), None, false), None);
        assert_eq!(decide(Some("/srv/personas"), Some("crawl"), true), None);
    }

    #[test]
    fn a_browser_per_snapshot_gets_the_snapshots_own_persona_as_abx_dl_gives_it() {
        let own = Some(PathBuf::from("/data/crawls/7/snapshots/9/.persona"));
        assert_eq!(decide(None, Some("snapshot"), true), own);
        assert_eq!(decide(Some("/srv/personas"), Some(" Snapshot "), true), own);
        // (Crawl hooks have no snapshot: the crawl's.)
        assert_eq!(
            decide(None, Some("snapshot"), false),
            Some(PathBuf::from("/data/crawls/7/.persona"))
        );
    }
}
