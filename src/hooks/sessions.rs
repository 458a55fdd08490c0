//! What a run of a scope starts again of what succeeded in an earlier run: the sessions its
//! hooks need.
//!
//! A background hook that ran until its scope (or a hook that waited for it) stopped it was a
//! session: it served the run it was part of — Chrome for a crawl, a tab for a snapshot — which
//! does not outlive that run; and a hook of the same plugin that came after it set that session
//! up (abx-plugins' `chrome_navigate` loads the page in the tab `chrome_tab` opened, and a
//! `chrome_tab` started again removes what the old tab left, `navigation.json` among it). So a
//! run that has hooks to run — a snapshot recovered after a crash, results `abxctl retry`
//! reopened — or, for a crawl, snapshots still to run, starts again every session of the scope
//! that succeeded before, and every hook that succeeded of a plugin whose background hook runs,
//! ordered after that hook. A background hook that ended by itself did its work (abx-plugins'
//! wget, favicon): its success stands. (abx-dl gives hook names no meaning beyond `.bg.`:
//! `.daemon.` and `.finite.` are hints, so what a hook did is told by how it ended.)
//!
//! Invariants: decisions pure ([`to_start_again`]), written by [`start_again`]; a scope with nothing to run starts
//! nothing again; only successes are reopened (a failure stays until it is retried, a skip or
//! an empty result was the hook's own verdict); a success of a plugin with no background hook
//! that runs is never run again.

use crate::domain::ResultStatus;
use crate::plugins::Prepared;
use crate::store::{HookResult, Store, StoreError};
use std::collections::HashSet;

/// A hook of the scope, in run order, as its result stands before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Past<'a> {
    pub plugin: &'a str,
    pub background: bool,
    pub status: ResultStatus,
    /// A success that was a session (stopped, not ended by itself).
    pub session: bool,
}

/// What a run starts again, by position in its hooks (run order).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Again {
    /// The successes it starts again.
    pub reopened: Vec<usize>,
    /// The hooks after a session of their plugin that runs (again) in this run: what they did
    /// in an earlier session is not this run's (`unrecorded` takes none of their runs over).
    pub in_new_session: Vec<usize>,
}

/// What this run starts again of `hooks`; `dependants_wait`: work beyond the scope needs its
/// sessions (a crawl's unsealed snapshots).
pub fn to_start_again(hooks: &[Past<'_>], dependants_wait: bool) -> Again {
    let has_work = dependants_wait || hooks.iter().any(|h| !h.status.is_final());
    if !has_work {
        return Again::default();
    }
    let mut sessions: HashSet<&str> = HashSet::new();
    let mut again = Again::default();
    for (at, hook) in hooks.iter().enumerate() {
        if sessions.contains(hook.plugin) {
            again.in_new_session.push(at);
        }
        let succeeded = hook.status == ResultStatus::Succeeded;
        let reopened =
            succeeded && ((hook.background && hook.session) || sessions.contains(hook.plugin));
        if reopened {
            again.reopened.push(at);
        }
        if hook.background && (reopened || !hook.status.is_final()) {
            sessions.insert(hook.plugin);
        }
    }
    again
}

/// Queues again the successes of `hooks` (with their `results`, in run order) that this run
/// starts again; returns the file names of the hooks that run after a session of their plugin
/// that runs again (see [`Again::in_new_session`]).
pub(super) fn start_again(
    store: &Store,
    hooks: &[Prepared],
    results: &[HookResult],
    dependants_wait: bool,
) -> Result<HashSet<String>, StoreError> {
    let past: Vec<Past<'_>> = (hooks.iter().zip(results))
        .map(|(prepared, result)| Past {
            plugin: &prepared.hook.plugin,
            background: prepared.hook.background,
            status: result.status,
            session: result.session,
        })
        .collect();
    let again = to_start_again(&past, dependants_wait);
    let in_new_session = (again.in_new_session.iter())
        .map(|&at| hooks[at].hook.file_name.clone())
        .collect();
    if again.reopened.is_empty() {
        return Ok(in_new_session);
    }
    let names: Vec<&str> = (again.reopened.iter())
        .map(|&at| hooks[at].hook.file_name.as_str())
        .collect();
    log::info!(
        "started again for this run (the sessions it needs): {}",
        names.join(", ")
    );
    let ids: Vec<i64> = again.reopened.iter().map(|&at| results[at].id).collect();
    store.results().reopen_successes(&ids)?;
    Ok(in_new_session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResultStatus::*;

    /// A hook as it stands; a background success was a session (stopped at its scope's end).
    fn past(plugin: &str, background: bool, status: ResultStatus) -> Past<'_> {
        Past {
            plugin,
            background,
            status,
            session: background && status == Succeeded,
        }
    }

    /// A background hook that succeeded ending by itself (wget, favicon).
    fn ended_by_itself(plugin: &str) -> Past<'_> {
        Past {
            session: false,
            ..past(plugin, true, Succeeded)
        }
    }

    #[test]
    fn a_snapshot_recovered_after_a_crash_navigates_its_new_tab_again() {
        // chrome_tab was running (interrupted), navigate had succeeded, dom had not run.
        let hooks = [
            past("chrome", true, Skipped),
            past("chrome", true, Queued),
            past("chrome", false, Succeeded),
            past("title", false, Succeeded),
            ended_by_itself("wget"),
            past("dom", false, Queued),
        ];
        let again = to_start_again(&hooks, false);
        assert_eq!(again.reopened, vec![2]);
        // (A run of navigate that ended unrecorded was in the old tab: it runs again.)
        assert_eq!(again.in_new_session, vec![2]);
    }

    #[test]
    fn a_retried_result_gets_its_sessions_back_and_nothing_else() {
        let hooks = [
            past("chrome", true, Succeeded),
            past("chrome", false, Succeeded),
            past("consolelog", true, Succeeded),
            past("title", false, Succeeded),
            ended_by_itself("favicon"),
            past("pdf", false, Queued),
        ];
        assert_eq!(to_start_again(&hooks, false).reopened, vec![0, 1, 2]);
    }

    #[test]
    fn a_scope_with_nothing_to_run_starts_nothing_again() {
        let hooks = [
            past("chrome", true, Succeeded),
            past("chrome", false, Succeeded),
            past("pdf", false, Failed),
        ];
        assert_eq!(to_start_again(&hooks, false), Again::default());
        // A crawl whose snapshots still run needs its browser again.
        assert_eq!(to_start_again(&hooks, true).reopened, vec![0, 1]);
    }

    #[test]
    fn only_successes_are_reopened_and_only_after_a_session_of_their_plugin() {
        let hooks = [
            past("chrome", false, Succeeded),
            past("chrome", true, Failed),
            past("chrome", false, Succeeded),
            ended_by_itself("wget"),
            past("wget", false, Succeeded),
            past("wget", false, Queued),
        ];
        // The hook before the session, every one after a session that does not run, and the
        // work of a background hook that ended by itself, stay.
        assert!(to_start_again(&hooks, false).reopened.is_empty());
    }
}
