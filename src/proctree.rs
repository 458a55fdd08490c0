//! Process trees through procfs: one live process as read now, and the descendants of a process.
//!
//! Invariants: everything here only reads procfs, and everything it returns is a live process
//! with its identity read at the time (zombies are gone); a process is found as a descendant when
//! it is a child (through `/proc/PID/task/*/children`, or a scan of `/proc/*/stat` by ppid where
//! the kernel lacks that file) of a process found before. (What left the tree is found by its
//! marker: see `marker`.) A process is read cheaply by [`read`] for scans; [`pin`] adds the
//! pidfd it is then recorded and signalled by.

use crate::identity::{self, Identity, PidRef};
use crate::procstat::{self, all_pids};
use std::collections::HashSet;

/// A live process as found in procfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub identity: Identity,
    pub ppid: i32,
    pub pgid: i32,
    pub argv: Vec<String>,
    /// The state letter (R, S, D, T, …).
    pub state: char,
    /// The real user id it runs as, where it was read (when it was pinned).
    pub uid: Option<u32>,
}

/// Reads one live process, or `None` if it is gone or a zombie.
pub fn read(pid: i32) -> Option<Found> {
    read_counting_threads(pid).map(|(found, _)| found)
}

/// [`read`], with the number of threads the process has.
fn read_counting_threads(pid: i32) -> Option<(Found, u32)> {
    let stat = procstat::read(pid).filter(|stat| !stat.is_zombie())?;
    let argv = std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|arg| !arg.is_empty())
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect::<Vec<_>>()
        })
        .filter(|argv| !argv.is_empty())
        .unwrap_or_else(|| vec![format!("[{}]", stat.comm)]);
    Some((found(pid, &stat, argv), stat.threads))
}

/// Reads one live process whose command line is known (its row's), without reading it again:
/// only what changes (parent, group, state) comes from procfs.
pub fn read_known(identity: &Identity, argv: Vec<String>) -> Option<Found> {
    let stat = procstat::read(identity.pid).filter(|stat| !stat.is_zombie())?;
    let mut process = found(identity.pid, &stat, argv);
    process.identity = identity.clone();
    Some(process)
}

fn found(pid: i32, stat: &procstat::Stat, argv: Vec<String>) -> Found {
    Found {
        identity: Identity {
            boot_id: identity::boot_id().to_string(),
            pid,
            start_ticks: stat.start_ticks,
            pidfd_ino: None,
        },
        ppid: stat.ppid,
        pgid: stat.pgrp,
        argv,
        state: stat.state,
        uid: None,
    }
}

/// Reads one live process together with a pidfd that means it (see `identity::pin`), its
/// identity carrying the pidfd's inode: what a process is recorded and signalled by.
pub fn pin(pid: i32) -> Option<(Found, PidRef)> {
    pin_counting_threads(pid).map(|(pinned, _)| pinned)
}

/// [`pin`], with the number of threads the process has.
fn pin_counting_threads(pid: i32) -> Option<((Found, PidRef), u32)> {
    let pidfd = identity::pidfd_of(pid)?;
    let (mut found, threads) = read_counting_threads(pid)?;
    if identity::has_ended(&pidfd) {
        return None;
    }
    let pinned = PidRef::confirmed(pid, pidfd);
    found.identity.pidfd_ino = pinned.inode();
    found.uid = pinned.real_uid();
    Some(((found, pinned), threads))
}

/// Pins a process just read (`found`): a pidfd for its pid, confirmed to be that process (the
/// same start time after opening, not ended), its identity given the pidfd's inode. Reads its
/// `stat` again, not the rest.
pub fn pin_found(found: &Found) -> Option<(Found, PidRef)> {
    let pid = found.identity.pid;
    let pidfd = identity::pidfd_of(pid)?;
    let stat = procstat::read(pid).filter(|stat| !stat.is_zombie())?;
    if stat.start_ticks != found.identity.start_ticks || identity::has_ended(&pidfd) {
        return None;
    }
    let pid_ref = PidRef::confirmed(pid, pidfd);
    let mut pinned = found.clone();
    pinned.identity.pidfd_ino = pid_ref.inode();
    pinned.uid = pid_ref.real_uid();
    Some((pinned, pid_ref))
}

/// The parent of `pid` if it is a zombie (ended, waiting to be reaped by that parent).
pub fn zombie_parent(pid: i32) -> Option<i32> {
    procstat::read(pid)
        .filter(|stat| stat.state == 'Z')
        .map(|stat| stat.ppid)
}

/// Whether `pid` is a zombie waiting for the calling process to reap it.
pub fn is_unreaped_child(pid: i32) -> bool {
    zombie_parent(pid) == Some(std::process::id() as i32)
}

/// The direct children of `pid`.
pub fn children_of(pid: i32) -> Vec<i32> {
    children_of_threads(pid, None)
}

/// The direct children of `pid`, which has `threads` threads if known: a process of one thread
/// (most) has one children file, read without listing its tasks.
fn children_of_threads(pid: i32, threads: Option<u32>) -> Vec<i32> {
    if threads == Some(1) {
        match std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
            Ok(list) => return parse_children(&list).collect(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return Vec::new(),
        }
    }
    let tasks = match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(tasks) => tasks,
        Err(_) => return Vec::new(),
    };
    let mut children = Vec::new();
    for task in tasks.filter_map(|t| t.ok()) {
        match std::fs::read_to_string(task.path().join("children")) {
            Ok(list) => children.extend(parse_children(&list)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return children_by_scan(pid);
            }
            Err(_) => {}
        }
    }
    children
}

fn parse_children(list: &str) -> impl Iterator<Item = i32> + '_ {
    list.split_whitespace()
        .filter_map(|c| c.parse::<i32>().ok())
}

/// The fallback for kernels without `/proc/PID/task/*/children`: every process whose ppid is `pid`.
pub fn children_by_scan(pid: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&p| read(p).is_some_and(|f| f.ppid == pid))
        .collect()
}

/// The pids of the tree of `pid`: the processes of `cgroup` (and of the cgroups below it) when
/// the tree has one, else `pid` and its live descendants.
pub fn tree_pids(pid: i32, cgroup: Option<&std::path::Path>) -> Vec<i32> {
    match cgroup {
        Some(dir) => cgroup_pids(dir),
        None => std::iter::once(pid)
            .chain(descendants_of(&[pid]).into_iter().map(|f| f.identity.pid))
            .collect(),
    }
}

/// The resident bytes of process `pid` now (`None`: it is gone).
pub fn resident_bytes(pid: i32) -> Option<u64> {
    let statm = procfs::process::Process::new(pid).ok()?.statm().ok()?;
    Some(statm.resident * procfs::page_size())
}

fn cgroup_pids(dir: &std::path::Path) -> Vec<i32> {
    let mut pids: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            pids.extend(cgroup_pids(&entry.path()));
        }
    }
    pids
}

/// Every live descendant of the processes in `roots` (not the roots themselves).
pub fn descendants_of(roots: &[i32]) -> Vec<Found> {
    walk_descendants(roots, read_counting_threads)
}

/// [`descendants_of`], each pinned as it is found (see [`pin`]): the pidfd is opened before the
/// process is read, so nothing is read twice.
pub fn descendants_pinned(roots: &[i32]) -> Vec<(Found, PidRef)> {
    walk_descendants(roots, pin_counting_threads)
}

/// The descendants of `roots`, each as `read` gives it (with its number of threads), breadth by
/// breadth through the children files.
fn walk_descendants<T>(roots: &[i32], read: impl Fn(i32) -> Option<(T, u32)>) -> Vec<T> {
    let mut seen: HashSet<i32> = roots.iter().copied().collect();
    let mut pending: Vec<(i32, Option<u32>)> = roots.iter().map(|&pid| (pid, None)).collect();
    let mut found = Vec::new();
    while let Some((pid, threads)) = pending.pop() {
        for child in children_of_threads(pid, threads) {
            if seen.insert(child) {
                if let Some((process, threads)) = read(child) {
                    found.push(process);
                    pending.push((child, Some(threads)));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn descendants_are_found_through_children_files_and_by_scan() {
        let mut shell = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = shell.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while descendants_of(&[pid]).len() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "children never appeared"
            );
            std::thread::yield_now();
        }
        let mut by_file = children_of(pid);
        let mut by_scan = children_by_scan(pid);
        by_file.sort();
        by_scan.sort();
        assert_eq!(by_file, by_scan);
        // (The sleeps have one thread each: their children files are read without listing.)
        let mut read: Vec<i32> = descendants_of(&[pid])
            .iter()
            .map(|f| f.identity.pid)
            .collect();
        let pinned = descendants_pinned(&[pid]);
        let mut pinned_pids: Vec<i32> = pinned.iter().map(|(f, _)| f.identity.pid).collect();
        read.sort();
        pinned_pids.sort();
        assert_eq!(read, pinned_pids);
        let my_uid = rustix::process::getuid().as_raw();
        assert!(pinned.iter().all(|(f, _)| f.uid == Some(my_uid)));
        for child in descendants_of(&[pid]) {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.identity.pid),
                nix::sys::signal::Signal::SIGKILL,
            )
            .unwrap();
        }
        shell.wait().unwrap();
    }
}
