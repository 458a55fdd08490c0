//! [`PidRef`]: one live process, pinned — its pid and a pidfd confirmed to mean it, with the
//! pidfd's inode where the kernel has pidfs. What systemd calls a `PidRef`.
//!
//! Invariants: a `PidRef` is made only after its pidfd was confirmed to be the process meant
//! (the same start time, or pidfs inode, read after opening, and not ended: [`PidRef::open`],
//! `proctree`'s pinning); from then on it can only ever mean that process, and
//! [`PidRef::send`] is the one way abxd signals a process — never by pid.

use super::pidfd::{has_ended, pidfd_inode, real_uid};
use crate::signal::Signal;
use rustix::fd::{AsRawFd, OwnedFd, RawFd};

/// One pinned process.
#[derive(Debug)]
pub struct PidRef {
    pid: i32,
    pidfd: OwnedFd,
    inode: Option<u64>,
}

impl PidRef {
    /// The pid and a pidfd that `pid`'s process was confirmed to be, by the caller, after the
    /// pidfd was opened (see the module's invariant).
    pub(crate) fn confirmed(pid: i32, pidfd: OwnedFd) -> PidRef {
        let inode = pidfd_inode(&pidfd);
        PidRef { pid, pidfd, inode }
    }

    /// The process `identity` recorded, if it is alive and still that process (see
    /// `identity::open_pidfd`).
    pub fn open(identity: &super::Identity) -> Option<PidRef> {
        super::open_pidfd(identity).map(|pidfd| PidRef::confirmed(identity.pid, pidfd))
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The inode of its pidfd, where the kernel has pidfs.
    pub fn inode(&self) -> Option<u64> {
        self.inode
    }

    /// Sends `signal` to this process (and to no other, whatever became of its pid). Returns
    /// whether the kernel took it (not: the process has ended).
    pub fn send(&self, signal: Signal) -> bool {
        rustix::process::pidfd_send_signal(&self.pidfd, signal.to_rustix()).is_ok()
    }

    /// Whether the process has ended.
    pub fn has_ended(&self) -> bool {
        has_ended(&self.pidfd)
    }

    /// The real user id it runs as, or `None` if it has ended (see `identity::real_uid`).
    pub fn real_uid(&self) -> Option<u32> {
        real_uid(&self.pidfd, self.pid)
    }

    /// The pidfd's number, to register with an event loop: readable once the process ended.
    pub fn raw_fd(&self) -> RawFd {
        self.pidfd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_process_is_signalled_through_its_pidfd_and_seen_ended() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let (identity, pidfd) = super::super::pin(pid).expect("a child just spawned is alive");
        let pinned = PidRef::confirmed(pid, pidfd);
        assert_eq!((pinned.pid(), identity.pid), (pid, pid));
        assert_eq!(pinned.inode(), identity.pidfd_ino);
        assert!(!pinned.has_ended());
        assert_eq!(pinned.real_uid(), Some(rustix::process::getuid().as_raw()));
        assert!(pinned.send(Signal::KILL));
        child.wait().unwrap();
        assert!(pinned.has_ended(), "its pidfd says it ended once reaped");
        assert!(
            !pinned.send(Signal::KILL),
            "nothing is sent to a process that ended"
        );
        assert!(PidRef::open(&identity).is_none());
    }
}
