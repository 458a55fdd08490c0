//! What abxd and abxctl exit with: one table, documented in the EXIT STATUS section of every
//! man page (`man/`, generated from [`EXIT_STATUS_DOC`]).
//!
//! Invariant: a script can tell apart, by the status alone, success, a usage error, a daemon
//! that is not running, hooks that failed, a crawl that was cancelled, and an interruption —
//! every command maps its outcome through this module, never through a literal.

use crate::domain::{CrawlOutcome, ResultStatus};
use crate::store::{Crawl, HookResult};

/// Everything asked was done (for a crawl: sealed, and no hook failed).
pub const OK: i32 = 0;
/// abxd itself could not do it: the database, the file system, the daemon's answer.
pub const FAILURE: i32 = 1;
/// The command line or the config file is wrong (what is wrong is printed).
pub const USAGE: i32 = 2;
/// The command needs the daemon and nothing listens on its socket (as `systemctl status`).
pub const NOT_RUNNING: i32 = 3;
/// The crawl was sealed, and at least one of its hooks failed.
pub const HOOKS_FAILED: i32 = 4;
/// The crawl was cancelled before it finished.
pub const CANCELLED: i32 = 5;
/// Interrupted by SIGINT (Ctrl-C): 128 + 2, as a shell reports it.
pub const INTERRUPTED: i32 = 130;
/// `abxd run` stopped by SIGTERM (128 + 15): its crawl is left for the daemon to resume.
pub const TERMINATED: i32 = 143;

/// The EXIT STATUS section of the man pages, one entry per status.
pub const EXIT_STATUS_DOC: &[(i32, &str)] = &[
    (OK, "Success; for a crawl (add --wait, run): it was sealed and no hook failed."),
    (FAILURE, "abxd could not do what was asked: the database, the file system, or the daemon refused; the message says which."),
    (USAGE, "A wrong command line (an unknown option, a bad URL, an unknown plugin) or config file."),
    (NOT_RUNNING, "The command needs the daemon and it is not running (abxctl status: it is not running)."),
    (HOOKS_FAILED, "The crawl was sealed, and at least one of its hooks failed (abxctl show names them)."),
    (CANCELLED, "The crawl was cancelled (abxctl cancel, or abxd run interrupted)."),
    (INTERRUPTED, "Interrupted by SIGINT (Ctrl-C); abxd run cancels its crawl, add --wait stops following it (the crawl goes on)."),
    (TERMINATED, "abxd run stopped by SIGTERM: its crawl is left unfinished, and the daemon resumes it when it starts."),
];

/// What following a sealed crawl to its end exits with: cancelled, else any failed hook, else ok.
pub fn of_crawl(crawl: &Crawl, results: &[HookResult]) -> i32 {
    if crawl.outcome == Some(CrawlOutcome::Cancelled) {
        CANCELLED
    } else if results.iter().any(|r| r.status == ResultStatus::Failed) {
        HOOKS_FAILED
    } else {
        OK
    }
}
