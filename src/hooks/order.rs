//! What a hook waits for before it starts, besides the hook before it (abx-dl 1.13): the hooks of
//! the plugins it reads from (`wait_for_plugins`), and — for one that reads everything the
//! snapshot wrote (`wait_for_background_cleanup`) — the end of every background hook, which are
//! stopped for it.
//!
//! Invariant: a pure decision on the rows that run; a hook waits only for hooks that started
//! before it, never for one that has not started (a plugin that did not run is not waited for).

/// A hook that runs now, as the decision sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runs<'a> {
    pub row: i64,
    pub plugin: &'a str,
    pub background: bool,
}

/// What the next hook must wait for: the rows to end first, and which of them to stop.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blocked {
    pub until_ended: Vec<i64>,
    pub to_stop: Vec<i64>,
}

/// What a hook of a plugin that waits for `waits_for`, and for the background hooks when
/// `after_background`, must wait for among `running`.
pub fn blockers(waits_for: &[String], after_background: bool, running: &[Runs<'_>]) -> Blocked {
    let mut blocked = Blocked::default();
    for run in running {
        let read_from = waits_for.iter().any(|p| p == run.plugin);
        let stopped = after_background && run.background;
        if read_from || stopped {
            blocked.until_ended.push(run.row);
        }
        if stopped {
            blocked.to_stop.push(run.row);
        }
    }
    blocked.until_ended.sort_unstable();
    blocked.to_stop.sort_unstable();
    blocked
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNNING: &[Runs<'static>] = &[
        Runs {
            row: 1,
            plugin: "wget",
            background: true,
        },
        Runs {
            row: 2,
            plugin: "favicon",
            background: true,
        },
        Runs {
            row: 3,
            plugin: "chrome",
            background: false,
        },
    ];

    #[test]
    fn a_hook_waits_for_the_running_hooks_of_the_plugins_it_reads_from() {
        let readability = blockers(&["wget".into(), "ytdlp".into()], false, RUNNING);
        assert_eq!(readability.until_ended, [1]);
        assert!(readability.to_stop.is_empty());
        assert_eq!(blockers(&[], false, RUNNING), Blocked::default());
    }

    #[test]
    fn a_hook_after_background_cleanup_stops_and_waits_for_every_background_hook() {
        let hashes = blockers(&["wget".into()], true, RUNNING);
        assert_eq!(hashes.until_ended, [1, 2]);
        assert_eq!(hashes.to_stop, [1, 2]);
    }
}
