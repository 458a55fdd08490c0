//! Where cgroups are: the cgroup2 mount and, on a hybrid or v1 host, the v1 hierarchy of a
//! controller, from `/proc/self/mountinfo`; this process's cgroup in each, from
//! `/proc/self/cgroup`; and the directory a cgroup path names below a mount.
//!
//! Invariant: pure parsing of those texts, but for the one reader of the live files
//! (`own_v1_memory_dir`); nothing here writes.

use std::path::{Path, PathBuf};

/// Where the cgroup2 hierarchy is mounted, from the text of `/proc/self/mountinfo`: (mount
/// point, the cgroup path of the mount's root).
pub fn cgroup2_mount(mountinfo: &str) -> Option<(PathBuf, String)> {
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        if after.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let fields: Vec<&str> = before.split_whitespace().collect();
        Some((PathBuf::from(fields.get(4)?), fields.get(3)?.to_string()))
    })
}

/// Where the cgroup v1 hierarchy of `controller` is mounted (hybrid and v1 layouts), from the
/// text of `/proc/self/mountinfo`: (mount point, the cgroup path of the mount's root).
pub fn v1_mount(mountinfo: &str, controller: &str) -> Option<(PathBuf, String)> {
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let mut after = after.split_whitespace();
        let (kind, options) = (after.next()?, after.nth(1)?);
        if kind != "cgroup" || !options.split(',').any(|o| o == controller) {
            return None;
        }
        let fields: Vec<&str> = before.split_whitespace().collect();
        Some((PathBuf::from(fields.get(4)?), fields.get(3)?.to_string()))
    })
}

/// This process's cgroup v1 path in the hierarchy of `controller`, from the text of
/// `/proc/self/cgroup` (the `N:a,b:/path` line naming it).
pub fn v1_path(proc_cgroup: &str, controller: &str) -> Option<String> {
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })
}

/// The directory of this process's cgroup v1 `memory` cgroup, where that controller is bound
/// to a v1 hierarchy (a hybrid or v1 host: a container's memory limit lives there).
pub fn own_v1_memory_dir() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (mount, root) = v1_mount(&mountinfo, "memory")?;
    let own = v1_path(
        &std::fs::read_to_string("/proc/self/cgroup").ok()?,
        "memory",
    )?;
    dir_of(&mount, &root, &own)
}

/// This process's cgroup v2 path, from the text of `/proc/self/cgroup` (the `0::` line).
pub fn own_path(proc_cgroup: &str) -> Option<String> {
    proc_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::").map(str::to_string))
}

/// The directory of cgroup `path` on a cgroup2 mount at `mount` whose root is `root`.
pub fn dir_of(mount: &Path, root: &str, path: &str) -> Option<PathBuf> {
    let relative = if root == "/" {
        path
    } else {
        path.strip_prefix(root)?
    };
    Some(mount.join(relative.trim_start_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_is_found_in_a_hybrid_layout() {
        let mountinfo = "\
25 31 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n\
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
42 31 0:39 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        assert_eq!(
            cgroup2_mount(mountinfo),
            Some((PathBuf::from("/sys/fs/cgroup/unified"), "/".to_string()))
        );
        assert_eq!(cgroup2_mount("25 31 0:22 / /x rw - tmpfs tmpfs rw\n"), None);
    }

    #[test]
    fn a_v1_memory_hierarchy_and_this_process_in_it_are_found() {
        let mountinfo = "\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            v1_mount(mountinfo, "memory"),
            Some((PathBuf::from("/sys/fs/cgroup/memory"), "/".to_string()))
        );
        assert_eq!(v1_mount(mountinfo, "pids"), None);
        let cgroup = "5:devices:/\n4:memory:/process_api/18f4\n3:cpu,cpuacct:/\n0::/\n";
        assert_eq!(
            v1_path(cgroup, "memory").as_deref(),
            Some("/process_api/18f4")
        );
        assert_eq!(v1_path(cgroup, "cpuacct").as_deref(), Some("/"));
        assert_eq!(v1_path("0::/\n", "memory"), None);
    }

    #[test]
    fn the_own_path_is_the_unified_line() {
        let text = "4:memory:/a/b\n1:name=systemd:/\n0::/system.slice/abxd.service\n";
        assert_eq!(
            own_path(text).as_deref(),
            Some("/system.slice/abxd.service")
        );
        let dir = dir_of(
            Path::new("/sys/fs/cgroup"),
            "/",
            "/system.slice/abxd.service",
        );
        assert_eq!(
            dir,
            Some(PathBuf::from("/sys/fs/cgroup/system.slice/abxd.service"))
        );
        assert_eq!(
            dir_of(Path::new("/m"), "/a", "/a/b"),
            Some(PathBuf::from("/m/b"))
        );
        assert_eq!(dir_of(Path::new("/m"), "/a", "/c"), None);
    }
}
