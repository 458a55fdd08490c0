//! pidfd plumbing: opening a pidfd for a pid, whether its process ended, its pidfs inode, and the
//! credentials the kernel tells of it.
//!
//! Invariant: nothing here decides which process a pid means — a pidfd opened by pid is only
//! trusted once `identity` (or a [`PidRef`](super::PidRef)) confirmed it after opening.

use rustix::fd::{AsFd, OwnedFd};
use rustix::process::{pidfd_open, Pid, PidfdFlags};
use std::sync::OnceLock;

/// The pidfs magic number (`PIDFS_MAGIC`): a pidfd on a filesystem of that type has an inode
/// of its own per process.
const PIDFS_MAGIC: i64 = 0x5049_4446;

/// The inode of `pidfd` if the kernel has pidfs (else every pidfd shares one anonymous inode,
/// which tells nothing).
pub fn pidfd_inode(pidfd: &OwnedFd) -> Option<u64> {
    // (Whether pidfds live on pidfs is the kernel's: asked of the first pidfd only.)
    static ON_PIDFS: OnceLock<bool> = OnceLock::new();
    let on_pidfs = *ON_PIDFS.get_or_init(|| {
        let Ok(fs) = rustix::fs::fstatfs(pidfd.as_fd()) else {
            return false;
        };
        // (`f_type`'s width differs between architectures.)
        #[allow(clippy::unnecessary_cast)]
        let f_type = fs.f_type as i64;
        f_type == PIDFS_MAGIC
    });
    if !on_pidfs {
        return None;
    }
    rustix::fs::fstat(pidfd.as_fd())
        .ok()
        .map(|stat| stat.st_ino)
}

/// The first published layout of the kernel's `struct pidfd_info` (`PIDFD_INFO_SIZE_VER0`, 64
/// bytes; later kernels accept it and fill what it has room for).
#[repr(C)]
#[derive(Default)]
struct PidfdInfo {
    mask: u64,
    cgroupid: u64,
    pid: u32,
    tgid: u32,
    ppid: u32,
    ruid: u32,
    rgid: u32,
    euid: u32,
    egid: u32,
    suid: u32,
    sgid: u32,
    fsuid: u32,
    fsgid: u32,
    exit_code: i32,
}

/// `PIDFD_INFO_CREDS`: the mask bit saying the credentials are filled in.
const PIDFD_INFO_CREDS: u64 = 1 << 1;

/// `PIDFD_GET_INFO`: `_IOWR(PIDFS_IOCTL_MAGIC, 11, struct pidfd_info)`.
const PIDFD_GET_INFO: rustix::ioctl::Opcode =
    rustix::ioctl::opcode::read_write::<PidfdInfo>(0xFF, 11);

/// The real user id the process of `pidfd` (pid `pid`) runs as — real, not effective, so a
/// setuid helper such as Chromium's sandbox still counts as its user's — or `None` if it has
/// ended. Asked of the pidfd where the kernel answers `PIDFD_GET_INFO` (Linux ≥ 6.13: nothing
/// to format or parse), else read from `/proc/PID/status` and confirmed by the pidfd not having
/// ended after the read (so the pid still meant its process).
pub fn real_uid(pidfd: &OwnedFd, pid: i32) -> Option<u32> {
    let mut info = PidfdInfo {
        mask: PIDFD_INFO_CREDS,
        ..PidfdInfo::default()
    };
    // SAFETY: PIDFD_GET_INFO reads and writes a `struct pidfd_info` of the size its opcode
    // carries, which `PidfdInfo` lays out (the first published version, which every kernel
    // with the ioctl accepts).
    let asked = unsafe {
        rustix::ioctl::ioctl(
            pidfd,
            rustix::ioctl::Updater::<PIDFD_GET_INFO, PidfdInfo>::new(&mut info),
        )
    };
    match asked {
        Ok(()) if info.mask & PIDFD_INFO_CREDS != 0 => Some(info.ruid),
        // (Older kernels know no such ioctl on a pidfd.)
        Err(rustix::io::Errno::NOTTY | rustix::io::Errno::INVAL) => {
            let uid = crate::procstat::real_uid(pid)?;
            (!has_ended(pidfd)).then_some(uid)
        }
        _ => None,
    }
}

/// Opens a pidfd for the process that has `pid` now (non-blocking, so that it can be polled).
pub fn pidfd_of(pid: i32) -> Option<OwnedFd> {
    pidfd_open(Pid::from_raw(pid)?, PidfdFlags::NONBLOCK).ok()
}

/// Whether the process of `pidfd` has ended (a pidfd polls readable once its process exited).
pub fn has_ended(pidfd: &OwnedFd) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&now)), Ok(n) if n > 0)
}
