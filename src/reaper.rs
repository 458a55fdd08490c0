//! The reaper: collects the exit status of every child that has ended.
//!
//! Invariant: only the supervisor calls [`reap_ready`] (and [`reap_one`], for a child it does not
//! know while it sweeps for escapees) — on every turn, not only after a
//! SIGCHLD (signals coalesce, and a pidfd may report an end first) — and it drains every waitable
//! child in one go (`waitpid(-1, WNOHANG)` until nothing is left), so no exit is missed. Nothing
//! else in abxd waits on a child.

use crate::domain::ExitOutcome;
use nix::errno::Errno;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// One child that ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reaped {
    pub pid: i32,
    pub outcome: ExitOutcome,
}

/// Reaps the child `pid` if it has ended; never blocks.
pub fn reap_one(pid: i32) -> Option<Reaped> {
    loop {
        return match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => Some(Reaped {
                pid: pid.as_raw(),
                outcome: ExitOutcome::Code(code),
            }),
            Ok(WaitStatus::Signaled(pid, signal, _core)) => Some(Reaped {
                pid: pid.as_raw(),
                outcome: ExitOutcome::Signal(signal as i32),
            }),
            Err(Errno::EINTR) => continue,
            _ => None,
        };
    }
}

/// Reaps every child that has ended and returns them; never blocks.
pub fn reap_ready() -> Vec<Reaped> {
    let mut reaped = Vec::new();
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => reaped.push(Reaped {
                pid: pid.as_raw(),
                outcome: ExitOutcome::Code(code),
            }),
            Ok(WaitStatus::Signaled(pid, signal, _core)) => reaped.push(Reaped {
                pid: pid.as_raw(),
                outcome: ExitOutcome::Signal(signal as i32),
            }),
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => break,
            Ok(_) => continue,
            Err(Errno::EINTR) => continue,
            Err(err) => {
                log::error!("waitpid failed: {err}");
                break;
            }
        }
    }
    reaped
}
