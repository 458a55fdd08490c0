//! Free space where abxd writes: the data dir's filesystem (crawls' files, logs) and the SQLite
//! file's, against `[limits] min_free_space`. Below it, no new crawl or snapshot starts
//! (`admission` waits, saying why), running ones go on, and once space is back work starts
//! again by itself; the daemon says so once in its log each way ([`Watch`]).
//!
//! Invariants: a filesystem that cannot be measured counts as having room (as `admission` does
//! with memory it cannot read: a supervisor that stops for want of a number helps no one); the
//! tightest of the places measured is the one reported.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often the daemon looks at free space while it has work, or while space is short.
pub const POLL: Duration = Duration::from_secs(5);

/// The free space of one filesystem abxd writes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    /// Bytes an unprivileged writer may still use (`statvfs`'s `f_bavail`).
    pub free: u64,
    /// Where it was measured.
    pub path: PathBuf,
}

/// The least free space among `paths` (each one's filesystem), if any could be measured.
pub fn tightest<'p>(paths: impl IntoIterator<Item = &'p Path>) -> Option<Disk> {
    paths
        .into_iter()
        .filter_map(|path| {
            let stat = nix::sys::statvfs::statvfs(path).ok()?;
            Some(Disk {
                free: stat.blocks_available().saturating_mul(stat.fragment_size()),
                path: path.to_path_buf(),
            })
        })
        .min_by_key(|disk| disk.free)
}

/// Why nothing new may start for want of space on `disk` (`min_free_space` 0: never).
pub fn short(disk: &Disk, min_free_space: u64) -> Option<String> {
    (disk.free < min_free_space).then(|| {
        format!(
            "disk_full: {} free on {}, under min_free_space {}",
            mib(disk.free),
            disk.path.display(),
            mib(min_free_space)
        )
    })
}

/// What `disk` has free, in one line (with the bound, if one is set).
pub fn describe(disk: &Disk, min_free_space: u64) -> String {
    let free = format!("{} free on {}", mib(disk.free), disk.path.display());
    match min_free_space {
        0 => free,
        min => format!("{free} (min_free_space {})", mib(min)),
    }
}

/// `bytes` in whole MiB, as admission's words say sizes.
pub fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

/// The daemon's look at free space: what it found last, and when to look again.
#[derive(Debug, Default)]
pub struct Watch {
    /// Why space is short, since the look that found it so.
    short: Option<String>,
    next: Option<Instant>,
}

impl Watch {
    /// Looks at `disk` now (`min_free_space` the bound): logs once when space becomes short and
    /// once when it is back. Returns why it is short, if it is.
    pub fn look(&mut self, disk: Option<Disk>, min_free_space: u64, now: Instant) -> Option<&str> {
        self.next = Some(now + POLL);
        let short = disk.as_ref().and_then(|disk| short(disk, min_free_space));
        match (&self.short, &short) {
            (None, Some(why)) => {
                log::error!("{why}: no new crawl or snapshot starts until space is freed")
            }
            (Some(_), None) => log::info!("disk space is back: new crawls and snapshots start"),
            _ => {}
        }
        self.short = short;
        self.short.as_deref()
    }

    /// Why space was short at the last look, if it was.
    pub fn short(&self) -> Option<&str> {
        self.short.as_deref()
    }

    /// When to look again, as of `now`: while there is work (`busy`) or space is short; the
    /// first look at once.
    pub fn next_due(&self, busy: bool, now: Instant) -> Option<Instant> {
        (busy || self.short.is_some()).then(|| self.next.unwrap_or(now))
    }

    /// Whether a look is due at `now`.
    pub fn is_due(&self, busy: bool, now: Instant) -> bool {
        self.next_due(busy, now).is_some_and(|at| at <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(free: u64) -> Option<Disk> {
        Some(Disk {
            free,
            path: PathBuf::from("/var/lib/abxd"),
        })
    }

    #[test]
    fn space_is_short_below_the_bound_and_says_where() {
        let why = short(&disk(5 << 20).unwrap(), 1 << 30).unwrap();
        assert_eq!(
            why,
            "disk_full: 5 MiB free on /var/lib/abxd, under min_free_space 1024 MiB"
        );
        assert_eq!(short(&disk(1 << 30).unwrap(), 1 << 30), None);
        assert_eq!(short(&disk(0).unwrap(), 0), None);
    }

    #[test]
    fn the_watch_looks_while_there_is_work_or_space_is_short_and_remembers_why() {
        let now = Instant::now();
        let mut watch = Watch::default();
        assert_eq!(watch.next_due(false, now), None);
        assert!(watch.is_due(true, now));
        assert!(watch.look(disk(5 << 20), 1 << 30, now).is_some());
        assert_eq!(watch.next_due(false, now), Some(now + POLL));
        assert!(!watch.is_due(false, now));
        assert!(watch.look(disk(2 << 30), 1 << 30, now + POLL).is_none());
        assert_eq!(watch.next_due(false, now), None);
        assert_eq!(watch.short(), None);
    }

    #[test]
    fn the_tightest_filesystem_is_the_one_reported() {
        let found = tightest([Path::new("/"), Path::new("/proc")]);
        assert!(found.is_some());
        assert_eq!(tightest([Path::new("/no/such/dir")]), None);
    }
}
