//! Watching cgroups empty: one inotify descriptor on the `cgroup.events` files of the cgroups a
//! caller waits on, so its event loop wakes when `populated` changes instead of polling.
//!
//! Invariant: a cgroup is watched at most once; the caller re-reads `populated` after each
//! wake-up (an event says something changed, not what), so a missed or coalesced event can only
//! delay a check to the next one, never lose an emptied cgroup.

use super::Cgroup;
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::path::PathBuf;

pub struct EventsWatch {
    fd: OwnedFd,
    /// Watched `cgroup.events` files and their watch descriptors.
    watched: HashMap<PathBuf, i32>,
}

impl EventsWatch {
    pub fn new() -> std::io::Result<EventsWatch> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
        Ok(EventsWatch {
            fd,
            watched: HashMap::new(),
        })
    }

    /// The descriptor to register with the event loop (readable when a watched file changed).
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Watches `cgroup`'s `cgroup.events`; false if it cannot be (the cgroup is gone).
    pub fn watch(&mut self, cgroup: &Cgroup) -> bool {
        let file = cgroup.events_file();
        if self.watched.contains_key(&file) {
            return true;
        }
        match inotify::add_watch(&self.fd, &file, WatchFlags::MODIFY) {
            Ok(wd) => {
                self.watched.insert(file, wd);
                true
            }
            Err(_) => false,
        }
    }

    /// Stops watching `cgroup` (a removed cgroup's watch goes by itself).
    pub fn unwatch(&mut self, cgroup: &Cgroup) {
        if let Some(wd) = self.watched.remove(&cgroup.events_file()) {
            let _ = inotify::remove_watch(&self.fd, wd);
        }
    }

    /// Reads every pending event (they only say "look again").
    pub fn drain(&mut self) {
        let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        while reader.next().is_ok() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watched_file_that_changes_makes_the_descriptor_readable() {
        let dir = tempfile::tempdir().unwrap();
        let cgroup = Cgroup::at(dir.path());
        std::fs::write(cgroup.events_file(), "populated 1\n").unwrap();
        let mut watch = EventsWatch::new().unwrap();
        assert!(watch.watch(&cgroup));
        assert!(watch.watch(&cgroup), "watching twice is one watch");
        assert_eq!(watch.watched.len(), 1);
        std::fs::write(cgroup.events_file(), "populated 0\n").unwrap();
        // SAFETY: the watch's own descriptor, which `watch` keeps open until the end of the test.
        let fd = unsafe { rustix::fd::BorrowedFd::borrow_raw(watch.raw_fd()) };
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        let ready = rustix::event::poll(&mut fds, None).unwrap();
        assert_eq!(ready, 1);
        watch.drain();
        watch.unwatch(&cgroup);
        assert!(watch.watched.is_empty());
        assert!(!watch.watch(&Cgroup::at(dir.path().join("gone"))));
    }
}
