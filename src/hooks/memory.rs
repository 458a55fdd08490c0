//! A hook's memory limit, as abx-dl 1.13 bounds it: `<PLUGIN>_MEMORY_LIMIT`, else `MEMORY_LIMIT`
//! (bytes; abx-plugins' default is 2 GiB, and Chrome's own key is 0: exempt), the resident
//! memory of the hook's whole process tree, looked at once a second; over it, the tree is killed
//! at once (a browser's grace cannot contain memory growth) and the hook's result is failed,
//! "memory limit".
//!
//! Invariant: only a hook of this runner is ever signalled, through its supervisor's teardown of
//! its row (pinned handles); the end detail is on its row before the kill, so its result says
//! why. Under cgroup containment the tree is the hook's cgroup (nothing escapes it); otherwise
//! its descendants by parent link, as abx-dl counts them.

use super::HookRunner;
use crate::domain::{EndDetail, EndReason};
use crate::plugins::Prepared;
use crate::signal::Signal;
use crate::store::{OrLater, Store, StoreError};
use crate::supervisor::{RunsHooks, Supervisor};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often a hook's memory is looked at.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The memory limit of `prepared`'s hooks, if they have one (0: none).
pub fn limit_of(prepared: &Prepared, environ: impl Fn(&str) -> Option<String>) -> Option<u64> {
    let own = format!("{}_MEMORY_LIMIT", prepared.hook.plugin.to_uppercase());
    [own.as_str(), "MEMORY_LIMIT"]
        .iter()
        .find_map(|key| prepared.env.get(*key).cloned().or_else(|| environ(key)))
        .and_then(|text| text.trim().parse::<u64>().ok())
        .filter(|&limit| limit > 0)
}

/// The resident bytes of the tree of `pid`: the processes of `cgroup` (and below it) when the
/// hook has one, else `pid` and its descendants.
pub fn tree_rss(pid: i32, cgroup: Option<&Path>) -> u64 {
    crate::proctree::tree_pids(pid, cgroup)
        .into_iter()
        .filter_map(crate::proctree::resident_bytes)
        .sum()
}

/// What to measure of one running hook.
#[derive(Debug, Clone)]
pub(super) struct Bounded {
    pub pid: i32,
    pub cgroup: Option<std::path::PathBuf>,
    pub limit: u64,
}

impl HookRunner {
    /// When the memory of a hook with a limit is to be looked at next.
    pub(super) fn next_memory_check(&self) -> Option<Instant> {
        let bounded = self.running.values().any(|r| r.memory.is_some());
        bounded.then(|| {
            self.memory_checked_at
                .map_or_else(Instant::now, |at| at + CHECK_EVERY)
        })
    }

    /// Looks at the memory of the hooks with a limit (when due); kills each tree over its limit.
    pub(super) fn check_memory<O: RunsHooks>(
        &mut self,
        supervisor: &mut Supervisor<O>,
        store: &Store,
    ) -> Result<(), StoreError> {
        let now = Instant::now();
        let bounded = self.running.values().any(|r| r.memory.is_some());
        let due = self
            .memory_checked_at
            .is_none_or(|at| at + CHECK_EVERY <= now);
        if !(bounded && due) {
            return Ok(());
        }
        self.memory_checked_at = Some(now);
        let over: BTreeMap<i64, (u64, u64)> = (self.running.iter())
            .filter(|(row, _)| !self.stopped_at_end.contains(row))
            .filter_map(|(&row, run)| {
                let bounded = run.memory.as_ref()?;
                let used = tree_rss(bounded.pid, bounded.cgroup.as_deref());
                (used > bounded.limit).then_some((row, (used, bounded.limit)))
            })
            .collect();
        for (row, (used, limit)) in over {
            let hook = &self.running[&row].prepared.hook.file_name;
            log::warn!("{hook}: {used} resident bytes, over its memory limit of {limit}: killed");
            let detail = store
                .processes()
                .set_end_detail(row, &EndDetail::MemoryLimit);
            if detail.or_later()?.is_none() {
                // (The limit guards the host: the tree goes all the same, its end said as a kill.)
                log::warn!("{hook}: its end is not said to be the memory limit (database busy)");
            }
            supervisor.stop(store, row, Signal::KILL, Duration::ZERO, EndReason::Killed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(plugin: &str) -> Prepared {
        Prepared {
            hook: crate::plugins::Hook {
                plugin: plugin.into(),
                event: "Snapshot".into(),
                order: 10,
                stem: format!("on_Snapshot__10_{plugin}"),
                background: false,
                path: format!("/p/{plugin}/on_Snapshot__10_{plugin}.sh").into(),
                file_name: format!("on_Snapshot__10_{plugin}.sh"),
            },
            env: BTreeMap::new(),
            timeout: Duration::from_secs(60),
            limits: Default::default(),
            required: false,
            waits_for: Vec::new(),
            after_background: false,
            requires: Vec::new(),
        }
    }

    #[test]
    fn the_plugins_own_limit_wins_and_zero_is_none() {
        let mut chrome = prepared("chrome");
        let none = |_: &str| None;
        assert_eq!(limit_of(&chrome, none), None);
        chrome
            .env
            .insert("MEMORY_LIMIT".into(), "2147483648".into());
        assert_eq!(limit_of(&chrome, none), Some(2 << 30));
        chrome.env.insert("CHROME_MEMORY_LIMIT".into(), "0".into());
        assert_eq!(
            limit_of(&chrome, none),
            None,
            "Chrome: exempt by its own key"
        );
        let from_abxd = |key: &str| (key == "MEMORY_LIMIT").then(|| "1000".to_string());
        assert_eq!(limit_of(&prepared("wget"), from_abxd), Some(1000));
    }

    #[test]
    fn a_tree_counts_the_hook_and_its_children() {
        let own = tree_rss(std::process::id() as i32, None);
        assert!(own > 0);
    }
}
