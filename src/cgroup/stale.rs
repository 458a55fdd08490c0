//! The cgroups a previous incarnation of the daemon left in its scope, emptied and removed
//! without waiting: each is killed (`cgroup.kill`) and removed the moment its `populated` turns
//! false, which an inotify watch on its `cgroup.events` tells the event loop.
//!
//! Invariant: nothing here blocks or sleeps — the loop that owns an [`Emptying`] registers its
//! descriptor and calls [`Emptying::on_ready`] when it is readable; a cgroup is removed only once
//! it was seen empty (a cgroup whose process survives SIGKILL stays, logged, until it ends).

use super::{Cgroup, EventsWatch};
use std::os::fd::RawFd;

/// Stale cgroups being emptied.
#[derive(Default)]
pub struct Emptying {
    /// What is still populated, and the watch on it (none once all are gone).
    watch: Option<EventsWatch>,
    left: Vec<Cgroup>,
}

impl Emptying {
    /// Kills what each of `stale` holds and removes those already empty; watches the rest.
    pub fn start(stale: Vec<Cgroup>) -> Emptying {
        let mut emptying = Emptying::default();
        for cgroup in stale {
            let held = cgroup.procs().len();
            if held > 0 {
                log::warn!(
                    "cgroup {} of a previous incarnation still holds {held} process(es): killing them",
                    cgroup.dir.display()
                );
            }
            if let Err(err) = cgroup.kill() {
                log::error!("cannot kill cgroup {}: {err}", cgroup.dir.display());
            }
            emptying.left.push(cgroup);
        }
        if !emptying.left.is_empty() {
            match EventsWatch::new() {
                Ok(mut watch) => {
                    for cgroup in &emptying.left {
                        if !watch.watch(cgroup) {
                            log::warn!(
                                "cannot watch cgroup {}: removed only if empty now",
                                cgroup.dir.display()
                            );
                        }
                    }
                    emptying.watch = Some(watch);
                }
                Err(err) => log::error!("cannot watch stale cgroups empty: {err}"),
            }
        }
        // (Watched first, then looked at: one that emptied meanwhile is removed now.)
        emptying.remove_emptied();
        emptying
    }

    /// The descriptor that is readable when one of the cgroups may have emptied (none: nothing
    /// left to wait for).
    pub fn raw_fd(&self) -> Option<RawFd> {
        self.watch.as_ref().map(EventsWatch::raw_fd)
    }

    /// The descriptor was readable: removes what emptied. Returns whether all are gone.
    pub fn on_ready(&mut self) -> bool {
        if let Some(watch) = &mut self.watch {
            watch.drain();
        }
        self.remove_emptied();
        self.is_done()
    }

    /// Whether every stale cgroup is gone.
    pub fn is_done(&self) -> bool {
        self.left.is_empty()
    }

    fn remove_emptied(&mut self) {
        let watch = &mut self.watch;
        self.left.retain(|cgroup| {
            if cgroup.populated() == Some(true) {
                return true;
            }
            if let Some(watch) = watch.as_mut() {
                watch.unwatch(cgroup);
            }
            if !cgroup.remove() {
                log::error!("cannot remove cgroup {}", cgroup.dir.display());
            }
            false
        });
        if self.left.is_empty() {
            self.watch = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory that looks like a cgroup to the code above (no cgroupfs needed).
    fn fake_cgroup(dir: &std::path::Path, populated: bool) -> Cgroup {
        std::fs::create_dir_all(dir).unwrap();
        let cgroup = Cgroup::at(dir);
        std::fs::write(
            cgroup.events_file(),
            format!("populated {}\n", u8::from(populated)),
        )
        .unwrap();
        cgroup
    }

    #[test]
    fn an_empty_cgroup_goes_at_once_a_populated_one_when_its_events_say_so() {
        let dir = tempfile::tempdir().unwrap();
        let empty = fake_cgroup(&dir.path().join("row-1"), false);
        let busy = fake_cgroup(&dir.path().join("row-2"), true);
        let mut emptying = Emptying::start(vec![empty, busy.clone()]);
        assert!(!emptying.is_done(), "the populated one is waited for");
        assert_eq!(emptying.left, vec![busy.clone()]);
        let fd = emptying.raw_fd().expect("a descriptor to wait on");
        std::fs::write(busy.events_file(), "populated 0\n").unwrap();
        // SAFETY: `fd` is the watch's open descriptor, which `emptying` keeps open meanwhile.
        let borrowed = unsafe { rustix::fd::BorrowedFd::borrow_raw(fd) };
        let mut fds = [rustix::event::PollFd::new(
            &borrowed,
            rustix::event::PollFlags::IN,
        )];
        assert_eq!(rustix::event::poll(&mut fds, None).unwrap(), 1);
        assert!(emptying.on_ready(), "{:?}", emptying.left);
        assert!(emptying.raw_fd().is_none());
    }

    /// On a real cgroup2 mount (this process's own cgroup): a populated cgroup is killed, and
    /// removed when its `cgroup.events` says it emptied, told through the watch.
    #[test]
    fn a_populated_cgroup_on_cgroupfs_is_killed_and_removed_once_its_events_say_it_emptied() {
        let made = super::super::own_cgroup().and_then(|own| {
            own.child(&format!("abxd-test-stale-{}", std::process::id()))
                .map_err(|e| e.to_string())
        });
        let cgroup = match made {
            Ok(cgroup) => cgroup,
            Err(why) if std::env::var_os("CI").is_none() => {
                eprintln!("SKIPPED: no cgroup2 mount this test may write here: {why}");
                return;
            }
            Err(why) => panic!("CI has a writable cgroup2 mount: {why}"),
        };
        let mut sleeper = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        cgroup.enter(sleeper.id() as i32).unwrap();
        assert_eq!(cgroup.populated(), Some(true));
        let mut emptying = Emptying::start(vec![cgroup.clone()]);
        // Killed by `cgroup.kill`; until it is reaped it is a zombie, which leaves the cgroup.
        sleeper.wait().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !emptying.is_done() {
            let fd = emptying.raw_fd().expect("a descriptor while one is left");
            // SAFETY: the watch's descriptor, which `emptying` keeps open until it is done.
            let borrowed = unsafe { rustix::fd::BorrowedFd::borrow_raw(fd) };
            let mut fds = [rustix::event::PollFd::new(
                &borrowed,
                rustix::event::PollFlags::IN,
            )];
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let timeout = rustix::event::Timespec::try_from(left).unwrap();
            assert_eq!(
                rustix::event::poll(&mut fds, Some(&timeout)).unwrap(),
                1,
                "no event within 10 s"
            );
            emptying.on_ready();
        }
        assert!(!cgroup.dir.exists(), "{} still there", cgroup.dir.display());
    }
}
