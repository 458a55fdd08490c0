//! A worker's watch over the size and time limits of its work (`--max-size`, `--timeout` for a
//! crawl worker; `--snapshot-max-size` for a snapshot worker).
//!
//! Invariants: a size is the bytes of the regular files below the work's directory, walked
//! without following a symbolic link, at most once per [`SIZE_CHECK_EVERY`] (a hook that writes
//! faster overshoots by what it writes meanwhile); a deadline is the crawl's first start plus
//! its timeout, on the wall clock (so a restarted crawl keeps its deadline); the first limit
//! found reached is the one reported.

use crate::domain::Limit;
use crate::hooks::bytes_below;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often a size limit is checked.
pub const SIZE_CHECK_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug)]
enum Check {
    Deadline,
    Size { dir: PathBuf, max: u64 },
}

#[derive(Debug)]
struct Watch {
    limit: Limit,
    check: Check,
    /// When to look next.
    next: Instant,
}

/// The limits one worker watches.
#[derive(Debug, Default)]
pub(super) struct Watches {
    watches: Vec<Watch>,
}

impl Watches {
    /// Watches `limit`'s deadline, `after` from now (none if it is already past: at once).
    pub fn deadline(&mut self, limit: Limit, after: Duration) {
        let at = Instant::now() + after;
        self.watches.push(Watch {
            limit,
            check: Check::Deadline,
            next: at,
        });
    }

    /// Watches the bytes below `dir` against `max`.
    pub fn size(&mut self, limit: Limit, dir: PathBuf, max: u64) {
        self.watches.push(Watch {
            limit,
            check: Check::Size { dir, max },
            next: Instant::now(),
        });
    }

    /// When the next check is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.watches.iter().map(|w| w.next).min()
    }

    /// Checks the watches that are due; the first limit reached, with what reached it.
    pub fn reached(&mut self) -> Option<(Limit, String)> {
        let now = Instant::now();
        for watch in self.watches.iter_mut().filter(|w| w.next <= now) {
            match &watch.check {
                Check::Deadline => return Some((watch.limit, "its time is up".into())),
                Check::Size { dir, max } => {
                    let size = bytes_below(dir);
                    if size > *max {
                        return Some((watch.limit, format!("{size} bytes of at most {max}")));
                    }
                    watch.next = now + SIZE_CHECK_EVERY;
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_counts_files_below_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/f"), vec![0u8; 1000]).unwrap();
        std::fs::write(dir.path().join("g"), vec![0u8; 24]).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("big"), vec![0u8; 5000]).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("link")).unwrap();
        assert_eq!(bytes_below(dir.path()), 1024);

        let mut watches = Watches::default();
        watches.size(Limit::SnapshotMaxSize, dir.path().to_path_buf(), 2000);
        assert_eq!(watches.reached(), None);
        assert!(watches.next_due().unwrap() > Instant::now());
        let mut watches = Watches::default();
        watches.size(Limit::SnapshotMaxSize, dir.path().to_path_buf(), 1000);
        let (limit, what) = watches.reached().unwrap();
        assert_eq!(limit, Limit::SnapshotMaxSize);
        assert_eq!(what, "1024 bytes of at most 1000");
    }

    #[test]
    fn a_deadline_is_reached_once_it_passed() {
        let mut watches = Watches::default();
        watches.deadline(Limit::Timeout, Duration::from_secs(3600));
        assert_eq!(watches.reached(), None);
        let mut watches = Watches::default();
        watches.deadline(Limit::Timeout, Duration::ZERO);
        assert_eq!(watches.reached().map(|(l, _)| l), Some(Limit::Timeout));
    }
}
