//! What a hook waits for before it starts, besides the hook before it (abx-dl 1.13): the hooks of
//! the plugins it reads from (`wait_for_plugins`), and — for one that reads everything the
//! snapshot wrote (`wait_for_background_cleanup`) — the end of every background hook, which are
//! stopped for it. And at a scope's end, in which waves its background hooks stop: dependents
//! before the plugins they require (`required_plugins`), so that a recorder flushes before the
//! browser it records is closed.
//!
//! Invariant: pure decisions on the rows that run; a hook waits only for hooks that started
//! before it, never for one that has not started (a plugin that did not run is not waited for);
//! while a background hook runs, a wave to stop is never empty.

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

/// A background hook still running at its scope's end, as the stop order sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopping<'a> {
    pub row: i64,
    pub plugin: &'a str,
    /// The plugins its plugin requires, directly or through others.
    pub requires: &'a [String],
}

/// The rows of `running` to stop now: those whose plugin no other one's requires — the
/// dependents, before what they require. (Requirements that go round in a circle stop all.)
pub fn stop_now(running: &[Stopping<'_>]) -> Vec<i64> {
    let required = |plugin: &str| {
        (running.iter())
            .any(|other| other.plugin != plugin && other.requires.iter().any(|r| r == plugin))
    };
    let mut wave: Vec<i64> = (running.iter())
        .filter(|run| !required(run.plugin))
        .map(|run| run.row)
        .collect();
    if wave.is_empty() {
        wave = running.iter().map(|run| run.row).collect();
    }
    wave.sort_unstable();
    wave
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_hooks_stop_dependents_first_then_what_they_require() {
        let chrome: Vec<String> = vec!["chrome".into()];
        let through_tab: Vec<String> = vec!["chrome_tab".into(), "chrome".into()];
        let running = [
            Stopping {
                row: 1,
                plugin: "chrome",
                requires: &[],
            },
            Stopping {
                row: 2,
                plugin: "screencast",
                requires: &through_tab,
            },
            Stopping {
                row: 3,
                plugin: "headers",
                requires: &chrome,
            },
            Stopping {
                row: 4,
                plugin: "wget",
                requires: &[],
            },
        ];
        assert_eq!(stop_now(&running), [2, 3, 4]);
        assert_eq!(stop_now(&running[..1]), [1]);
        // (chrome_tab runs nothing here: the requirement through it still orders the two.)
        assert_eq!(stop_now(&[running[0].clone(), running[1].clone()]), [2]);
        let circle_a: Vec<String> = vec!["b".into()];
        let circle_b: Vec<String> = vec!["a".into()];
        let circle = [
            Stopping {
                row: 7,
                plugin: "a",
                requires: &circle_a,
            },
            Stopping {
                row: 8,
                plugin: "b",
                requires: &circle_b,
            },
        ];
        assert_eq!(stop_now(&circle), [7, 8]);
        assert!(stop_now(&[]).is_empty());
    }

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
