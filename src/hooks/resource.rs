//! When a crawl hook's end is the crawl's: abx-dl 1.13's rule for the hooks that set a crawl up.
//!
//! Invariant: only a background crawl hook that failed on its own (not stopped at its scope's
//! end, not by an operator) ends the crawl: before it was ready (its first stdout), because
//! what it set up never came to be; after it, when another plugin requires its plugin, because
//! the resource it holds (the shared browser) is gone. A snapshot hook's end is never the
//! crawl's, nor the snapshot's: it is that hook's result.

use crate::domain::ResultStatus;
use crate::plugins::Hook;

/// How a hook ended, as far as the crawl is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookEnd {
    /// A crawl hook (else a snapshot hook).
    pub crawl_hook: bool,
    pub background: bool,
    /// It had written its first stdout byte.
    pub ready: bool,
    /// Another selected plugin requires its plugin.
    pub required: bool,
    /// Its result is failed.
    pub failed: bool,
    /// Stopped at its scope's end, or by an operator.
    pub stopped: bool,
}

/// Why the crawl cannot go on after `end` of hook `name`, if it cannot.
pub fn fatal_to_crawl(end: HookEnd, name: &str) -> Option<String> {
    if !(end.crawl_hook && end.background && end.failed) || end.stopped {
        return None;
    }
    if !end.ready {
        Some(format!("crawl hook {name} failed before it was ready"))
    } else if end.required {
        Some(format!(
            "required crawl resource {name} failed: no new snapshot starts"
        ))
    } else {
        None
    }
}

/// Why the crawl still cannot go on when it runs again (a restarted crawl worker), if it cannot:
/// a background crawl hook's result is final `failed` from an earlier run — whether it failed
/// before or after it was ready is no longer known, and it is not run again.
pub fn failed_before(crawl_hook: bool, hook: &Hook, status: ResultStatus) -> Option<String> {
    (crawl_hook && hook.background && status == ResultStatus::Failed)
        .then(|| format!("crawl hook {} failed in an earlier run", hook.file_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME: HookEnd = HookEnd {
        crawl_hook: true,
        background: true,
        ready: true,
        required: true,
        failed: true,
        stopped: false,
    };

    #[test]
    fn a_required_crawl_resource_that_dies_or_a_crawl_hook_that_never_got_ready_ends_the_crawl() {
        assert!(fatal_to_crawl(CHROME, "chrome")
            .unwrap()
            .contains("required crawl resource chrome"));
        let unready = HookEnd {
            ready: false,
            required: false,
            ..CHROME
        };
        assert!(fatal_to_crawl(unready, "x")
            .unwrap()
            .contains("before it was ready"));
    }

    #[test]
    fn what_was_stopped_succeeded_is_optional_or_a_snapshots_is_not_the_crawls_end() {
        for end in [
            HookEnd {
                stopped: true,
                ..CHROME
            },
            HookEnd {
                failed: false,
                ..CHROME
            },
            HookEnd {
                required: false,
                ..CHROME
            },
            HookEnd {
                crawl_hook: false,
                ready: false,
                ..CHROME
            },
            HookEnd {
                background: false,
                ..CHROME
            },
        ] {
            assert_eq!(fatal_to_crawl(end, "h"), None, "{end:?}");
        }
    }
}
