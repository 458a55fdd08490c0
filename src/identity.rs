//! Process identity: which process a stored pid really means.
//!
//! Invariant: a pid is never used alone. Every pid abxd stores is paired with the boot id and the
//! process start time (clock ticks since boot, field 22 of `/proc/PID/stat`, read by `procstat`), and [`check`] is the
//! one answer to "is this row's process alive and still the same process". A zombie counts as gone:
//! it can run no code and will never exit again.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// A process as it can be recognised again later, also after abxd restarted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub boot_id: String,
    pub pid: i32,
    pub start_ticks: u64,
}

/// What procfs says now about a recorded [`Identity`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Liveness {
    /// The recorded process is alive.
    Alive,
    /// No process has that pid, or it is a zombie.
    Gone,
    /// The pid belongs to another process now (its start time differs).
    Reused,
    /// The identity was recorded during an earlier boot: the process is long gone.
    OtherBoot,
}

impl Liveness {
    pub fn is_alive(self) -> bool {
        self == Liveness::Alive
    }
}

/// For tests only: makes this process believe it runs in another boot, to exercise recovery
/// after a reboot without rebooting.
pub const BOOT_ID_OVERRIDE_ENV: &str = "ABXD_TEST_BOOT_ID";

/// The current boot id (`/proc/sys/kernel/random/boot_id`), read once.
pub fn boot_id() -> &'static str {
    static BOOT_ID: OnceLock<String> = OnceLock::new();
    BOOT_ID.get_or_init(|| {
        if let Ok(id) = std::env::var(BOOT_ID_OVERRIDE_ENV) {
            return id;
        }
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|err| {
                log::error!(
                    "cannot read the boot id: {err}; identities will not survive a restart"
                );
                String::from("unknown")
            })
    })
}

/// A process's state letter and start time, or `None` when no process has this pid.
fn stat_of(pid: i32) -> Option<(char, u64)> {
    crate::procstat::read(pid).map(|stat| (stat.state, stat.start_ticks))
}

/// The identity of the live process `pid` has now, or `None` if there is none (zombies included).
pub fn of_pid(pid: i32) -> Option<Identity> {
    match stat_of(pid)? {
        ('Z' | 'X', _) => None,
        (_, start_ticks) => Some(Identity {
            boot_id: boot_id().to_string(),
            pid,
            start_ticks,
        }),
    }
}

/// The identity of `pid` whatever its state, zombies included: for a child that may already have
/// exited but is not reaped yet (only its reaper can make its pid free again).
pub fn of_unreaped_child(pid: i32) -> Option<Identity> {
    stat_of(pid).map(|(_, start_ticks)| Identity {
        boot_id: boot_id().to_string(),
        pid,
        start_ticks,
    })
}

/// Whether the process `identity` recorded is alive and is still that same process.
pub fn check(identity: &Identity) -> Liveness {
    if identity.boot_id != boot_id() {
        return Liveness::OtherBoot;
    }
    match stat_of(identity.pid) {
        None | Some(('Z' | 'X', _)) => Liveness::Gone,
        Some((_, ticks)) if ticks == identity.start_ticks => Liveness::Alive,
        Some(_) => Liveness::Reused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn own_process_is_alive_and_the_same() {
        let me = of_pid(std::process::id() as i32).unwrap();
        assert_eq!(check(&me), Liveness::Alive);
    }

    #[test]
    fn same_pid_with_other_start_time_is_not_matched() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let real = of_pid(child.id() as i32).unwrap();
        let older = Identity {
            start_ticks: real.start_ticks - 1,
            ..real.clone()
        };
        assert_eq!(check(&real), Liveness::Alive);
        assert_eq!(check(&older), Liveness::Reused);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(check(&real), Liveness::Gone);
    }

    #[test]
    fn zombie_counts_as_gone() {
        let mut child = Command::new("true").stdout(Stdio::null()).spawn().unwrap();
        let pid = child.id() as i32;
        let identity = of_unreaped_child(pid).unwrap();
        // Wait (without reaping) until the child has become a zombie.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while stat_of(pid).map(|(state, _)| state) != Some('Z') {
            assert!(std::time::Instant::now() < deadline, "child never exited");
            std::thread::yield_now();
        }
        assert_eq!(check(&identity), Liveness::Gone);
        assert_eq!(of_pid(pid), None);
        child.wait().unwrap();
    }

    #[test]
    fn the_start_time_is_read_as_procfs_reads_it_whatever_the_command_name() {
        // A command name with a space and a parenthesis (the name of the program's file).
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("a) b");
        std::os::unix::fs::symlink("/bin/sleep", &odd).unwrap();
        let mut child = Command::new(&odd).arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap()
            .contains("a) b")
        {
            assert!(std::time::Instant::now() < deadline, "exec never happened");
            std::thread::yield_now();
        }
        let expected = procfs::process::Process::new(pid).unwrap().stat().unwrap();
        assert_eq!(stat_of(pid), Some((expected.state, expected.starttime)));
        assert_eq!(stat_of(-1), None);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn identity_from_another_boot_is_never_alive() {
        let mut me = of_pid(std::process::id() as i32).unwrap();
        me.boot_id = "00000000-0000-0000-0000-000000000000".into();
        assert_eq!(check(&me), Liveness::OtherBoot);
    }
}
