//! What a worker process is started with: its command line (this executable, run again as
//! itself), the running config it is handed, and — for a crawl's workers — the crawl's own
//! variables (`CrawlSpec::env`), which its hooks inherit above every other setting.
//!
//! Invariant: a worker gets the daemon's running config through its environment, never a file
//! that could have changed since; nothing here reaches a hook but the crawl's own variables
//! (`spawn` keeps the rest from hooks).

use super::Held;
use crate::config::Config;
use crate::domain::{Kind, Queue};
use crate::logs::Logs;
use crate::marker;
use crate::spawn::SpawnRequest;
use crate::store::NewProcess;
use std::collections::BTreeMap;

/// The spawn request of a worker process of `queue`'s work under the row `parent_row`: `abxd
/// --config C worker crawl|snapshot ID`, handed the running config (see
/// `Config::running_text`) and its crawl's own variables.
pub(super) fn worker_request(
    queue: Queue,
    parent_row: i64,
    config: &Config,
    held: &Held,
    crawl_env: BTreeMap<String, String>,
) -> SpawnRequest {
    let work = held.claim.id;
    let (kind, snapshot_id) = match queue {
        Queue::Crawls => (Kind::CrawlWorker, None),
        Queue::Snapshots => (Kind::SnapshotWorker, Some(work)),
    };
    SpawnRequest {
        process: NewProcess {
            parent_id: Some(parent_row),
            kind,
            crawl_id: Some(held.crawl),
            snapshot_id,
            result_id: None,
            argv: worker_argv(config, &[queue.as_str(), &work.to_string()]),
            cwd: config.data_dir.display().to_string(),
            timeout_ms: None,
        },
        env: crawl_env.into_iter().chain(worker_env(config)).collect(),
        inherit_env: true,
        logs: Logs::InDir(config.data_dir.join("logs")),
        limits: Default::default(),
        run_as: None,
        umask: None,
        groups: Vec::new(),
        stdin: None,
    }
}

/// `abxd --config C worker ARGS…`: the command line of one of this daemon's own worker processes.
pub(crate) fn worker_argv(config: &Config, args: &[&str]) -> Vec<String> {
    let exe = crate::own_exe::own_executable()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "abxd".into());
    let source = config.source.display().to_string();
    [exe.as_str(), "--config", &source, "worker"]
        .into_iter()
        .chain(args.iter().copied())
        .map(String::from)
        .collect()
}

/// What a worker is handed besides the marker: the config its daemon runs with, and the database
/// password from the environment if that is where it came from (no hook ever gets either).
pub(crate) fn worker_env(config: &Config) -> Vec<(String, String)> {
    let mut env = vec![(crate::config::CONFIG_TEXT_ENV.into(), config.running_text())];
    if let Ok(password) = std::env::var(crate::config::PASSWORD_ENV) {
        env.push((crate::config::PASSWORD_ENV.into(), password));
    }
    env
}

/// The process row a worker runs as: its `ABXD_PROCESS_ID` marker, set by the pool that
/// spawned it.
pub fn own_row() -> Option<i64> {
    std::env::var(marker::PROCESS_ID_ENV).ok()?.parse().ok()
}
