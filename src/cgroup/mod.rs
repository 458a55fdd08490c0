//! cgroup v2 containment: where abxd may make cgroups, and one cgroup read and written.
//!
//! Invariants: everything here is file I/O on a cgroup2 mount found through
//! `/proc/self/mountinfo` (hybrid layouts included) and this process's own cgroup from
//! `/proc/self/cgroup`; abxd only ever creates, writes and removes cgroups below its own *scope*,
//! `<own cgroup>/abxd-<instance>`, named by the database, so a restart finds the cgroups of its
//! previous incarnation and two daemons never share one. A supervising process (daemon, worker)
//! lives in the `supervisor` leaf of its row's cgroup and each row it spawns gets
//! `row-<id>` below that row's cgroup: nested like the tree, with no process in a cgroup that has
//! children (cgroup v2's rule, so controllers can be enabled all the way down).

mod containment;
mod mount;
mod stale;
mod watch;

pub use containment::{establish, Containment};
pub use mount::{cgroup2_mount, dir_of, own_path, own_v1_memory_dir, v1_mount, v1_path};
pub use stale::Emptying;
use std::io::Write;
use std::path::{Path, PathBuf};
pub use watch::EventsWatch;

/// The leaf a supervising process lives in, beside the cgroups of the rows it spawns.
pub const SUPERVISOR_LEAF: &str = "supervisor";

/// The environment variable that hands a worker its row's cgroup.
pub const CGROUP_ENV: &str = "ABXD_CGROUP";

/// The controllers abxd enables where it can (for per-plugin limits and accounting).
const WANTED_CONTROLLERS: &[&str] = &["cpu", "memory", "pids"];

/// What the config asks for: `containment = "auto" | "cgroup" | "procfs"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// cgroup v2 where abxd can write a subtree, else procfs.
    #[default]
    Auto,
    /// cgroup v2 or refuse to start.
    Cgroup,
    /// procfs scans and markers only.
    Procfs,
}

/// One cgroup directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    pub dir: PathBuf,
}

/// The per-plugin limits a hook's cgroup gets, where their controllers are enabled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub memory_max: Option<u64>,
    /// The hook contract's memory limit (`MEMORY_LIMIT`): `memory.max` too where it is less,
    /// but where the memory controller is not enabled nothing is missed (the runner watches it).
    pub memory_limit: Option<u64>,
    pub tasks_max: Option<u64>,
    pub cpu_weight: Option<u64>,
}

/// What a hook's cgroup says of it when it ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// CPU time of every process that ran in it (`cpu.stat` `usage_usec`).
    pub cpu_usec: Option<u64>,
    /// Its peak memory (`memory.peak`), where the memory controller is enabled.
    pub memory_peak: Option<u64>,
    /// The kernel killed a process in it for going over `memory.max`.
    pub oom_killed: bool,
}

impl Cgroup {
    pub fn at(dir: impl Into<PathBuf>) -> Cgroup {
        Cgroup { dir: dir.into() }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The cgroup `name` below this one, made if missing.
    pub fn child(&self, name: &str) -> std::io::Result<Cgroup> {
        let child = Cgroup::at(self.dir.join(name));
        match std::fs::create_dir(&child.dir) {
            Ok(()) => Ok(child),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(child),
            Err(err) => Err(err),
        }
    }

    /// The cgroup of row `row` below this one, with the leaf its process lives in if it
    /// supervises others: (the row's cgroup, the cgroup its process enters).
    pub fn for_row(&self, row: i64, supervising: bool) -> std::io::Result<(Cgroup, Cgroup)> {
        let cgroup = self.child(&format!("row-{row}"))?;
        let entered = if supervising {
            cgroup.enable_controllers();
            cgroup.child(SUPERVISOR_LEAF)?
        } else {
            cgroup.clone()
        };
        Ok((cgroup, entered))
    }

    /// Opens `cgroup.procs` for a child to enter by writing "0" to it between fork and exec.
    pub fn procs_for_entry(&self) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .write(true)
            .open(self.file("cgroup.procs"))
    }

    /// Moves process `pid` into this cgroup.
    pub fn enter(&self, pid: i32) -> std::io::Result<()> {
        std::fs::write(self.file("cgroup.procs"), pid.to_string())
    }

    /// Every process in this cgroup and the ones below it.
    pub fn procs(&self) -> Vec<i32> {
        let mut pids = Vec::new();
        let mut pending = vec![self.dir.clone()];
        while let Some(dir) = pending.pop() {
            if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
                pids.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
            }
            pending.extend(subdirs(&dir));
        }
        pids
    }

    /// Whether a process lives in it or below it (`populated` of `cgroup.events`); `None` when
    /// the cgroup is gone.
    pub fn populated(&self) -> Option<bool> {
        let events = std::fs::read_to_string(self.file("cgroup.events")).ok()?;
        key_value(&events, "populated").map(|n| n != 0)
    }

    /// The file whose changes say that `populated` changed (watched with inotify).
    pub fn events_file(&self) -> PathBuf {
        self.file("cgroup.events")
    }

    /// SIGKILL to every process in it and below it, also those that fork meanwhile and those
    /// in other PID namespaces (`cgroup.kill`).
    pub fn kill(&self) -> std::io::Result<()> {
        std::fs::write(self.file("cgroup.kill"), "1")
    }

    /// Enables the wanted controllers this cgroup's parent hands down, for its children; what
    /// cannot be enabled is left off. Returns those enabled.
    pub fn enable_controllers(&self) -> Vec<String> {
        let available =
            std::fs::read_to_string(self.file("cgroup.controllers")).unwrap_or_default();
        let mut enabled = Vec::new();
        for controller in available.split_whitespace() {
            if !WANTED_CONTROLLERS.contains(&controller) {
                continue;
            }
            let written = std::fs::OpenOptions::new()
                .write(true)
                .open(self.file("cgroup.subtree_control"))
                .and_then(|mut f| f.write_all(format!("+{controller}").as_bytes()));
            if written.is_ok() {
                enabled.push(controller.to_string());
            }
        }
        enabled
    }

    /// Applies `limits`; returns the ones that could not be (their controller is not enabled),
    /// as the config names them.
    pub fn apply(&self, limits: &Limits) -> Vec<&'static str> {
        let mut missed = Vec::new();
        let memory = match (limits.memory_max, limits.memory_limit) {
            (Some(max), Some(limit)) => Some(max.min(limit)),
            (max, limit) => max.or(limit),
        };
        let settings = [
            ("memory_max", "memory.max", memory),
            ("tasks_max", "pids.max", limits.tasks_max),
            ("cpu_weight", "cpu.weight", limits.cpu_weight),
        ];
        for (key, file, value) in settings {
            let Some(value) = value else { continue };
            if std::fs::write(self.file(file), value.to_string()).is_ok() {
                continue;
            }
            // (The contract's limit alone is the runner's to watch: not missed.)
            if key != "memory_max" || limits.memory_max.is_some() {
                missed.push(key);
            }
        }
        if memory.is_some() && self.file("memory.max").exists() {
            // Over it, the whole tree goes, as abx-dl kills a hook's tree over its limit (not
            // the one process the kernel would pick).
            let _ = std::fs::write(self.file("memory.oom.group"), "1");
        }
        missed
    }

    /// What the cgroup recorded of its processes.
    pub fn usage(&self) -> Usage {
        let read = |name: &str| std::fs::read_to_string(self.file(name)).ok();
        Usage {
            cpu_usec: read("cpu.stat").and_then(|t| key_value(&t, "usage_usec")),
            memory_peak: read("memory.peak").and_then(|t| t.trim().parse().ok()),
            oom_killed: read("memory.events")
                .and_then(|t| key_value(&t, "oom_kill"))
                .is_some_and(|n| n > 0),
        }
    }

    /// Removes this cgroup and every cgroup below it, deepest first; a cgroup with a process
    /// in it stays (with its parents). Returns whether it is gone.
    pub fn remove(&self) -> bool {
        for sub in subdirs(&self.dir) {
            Cgroup::at(sub).remove();
        }
        match std::fs::remove_dir(&self.dir) {
            Ok(()) => true,
            Err(err) => err.kind() == std::io::ErrorKind::NotFound,
        }
    }
}

pub(crate) fn subdirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// The cgroups of `cgroups` that are not below another of them.
pub fn outermost<'a>(cgroups: impl Iterator<Item = &'a Cgroup>) -> Vec<&'a Cgroup> {
    let mut by_path: Vec<&Cgroup> = cgroups.collect();
    by_path.sort_by(|a, b| a.dir.cmp(&b.dir));
    let mut kept: Vec<&Cgroup> = Vec::new();
    for cgroup in by_path {
        // (Sorted by path, a cgroup's ancestors among them come just before its subtree.)
        if !kept
            .last()
            .is_some_and(|outer| cgroup.dir.starts_with(&outer.dir))
        {
            kept.push(cgroup);
        }
    }
    kept
}

/// The number after `key ` on its own line of a flat-keyed cgroup file.
fn key_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// The row whose cgroup process `pid` lives in (`…/row-<id>`), if it lives in one.
pub fn row_of_process(pid: i32) -> Option<i64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    row_of_path(&own_path(&text)?)
}

/// The row of cgroup path `path`: the number of its last `row-<id>` component.
pub fn row_of_path(path: &str) -> Option<i64> {
    path.rsplit('/')
        .find_map(|part| part.strip_prefix("row-")?.parse().ok())
}

/// The cgroup this process lives in, where cgroup2 is mounted.
pub fn own_cgroup() -> Result<Cgroup, String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|err| format!("cannot read /proc/self/mountinfo: {err}"))?;
    let (mount, root) =
        cgroup2_mount(&mountinfo).ok_or("no cgroup2 filesystem is mounted".to_string())?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|text| own_path(&text))
        .ok_or("this process has no cgroup v2 path in /proc/self/cgroup".to_string())?;
    let dir = dir_of(&mount, &root, &own).ok_or(format!(
        "this process's cgroup {own} is outside the cgroup2 mount at {}",
        mount.display()
    ))?;
    Ok(Cgroup::at(dir))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_outermost_cgroups_are_read() {
        let at = |dir: &str| Cgroup::at(std::path::Path::new(dir));
        let cgroups = [
            at("/cg/abxd/row-2/row-5"),
            at("/cg/abxd/row-2"),
            at("/cg/abxd/row-20"),
            at("/cg/abxd/row-2/row-5/row-9"),
            at("/cg/abxd/row-3/row-7"),
        ];
        let kept: Vec<&std::path::Path> = outermost(cgroups.iter())
            .into_iter()
            .map(|c| c.dir.as_path())
            .collect();
        assert_eq!(
            kept,
            ["/cg/abxd/row-2", "/cg/abxd/row-20", "/cg/abxd/row-3/row-7"].map(std::path::Path::new)
        );
    }

    use super::*;

    #[test]
    fn a_cgroup_path_names_its_row() {
        assert_eq!(row_of_path("/abxd-1/row-2/row-3/row-14"), Some(14));
        assert_eq!(row_of_path("/abxd-1/row-2/supervisor"), Some(2));
        assert_eq!(row_of_path("/system.slice/abxd.service"), None);
    }

    #[test]
    fn usage_is_read_from_the_cgroups_files_and_an_oom_kill_is_seen() {
        // The files as the kernel writes them (this host has no memory controller in v2).
        let dir = tempfile::tempdir().unwrap();
        let cgroup = Cgroup::at(dir.path());
        std::fs::write(
            dir.path().join("cpu.stat"),
            "usage_usec 250000\nuser_usec 1\n",
        )
        .unwrap();
        assert_eq!(
            cgroup.usage(),
            Usage {
                cpu_usec: Some(250_000),
                ..Usage::default()
            }
        );
        std::fs::write(dir.path().join("memory.peak"), "104857600\n").unwrap();
        let events = "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n";
        std::fs::write(dir.path().join("memory.events"), events).unwrap();
        let usage = cgroup.usage();
        assert_eq!(usage.memory_peak, Some(100 << 20));
        assert!(usage.oom_killed);
        let limits = Limits {
            memory_max: Some(1 << 20),
            memory_limit: Some(1 << 30),
            tasks_max: Some(8),
            cpu_weight: None,
        };
        assert!(
            cgroup.apply(&limits).is_empty(),
            "written where the files are writable"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("memory.max")).unwrap(),
            "1048576"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("memory.oom.group")).unwrap(),
            "1"
        );
        // The contract's memory limit alone: the lesser where it can be written, never missed.
        let contract = Limits {
            memory_limit: Some(1 << 30),
            ..Limits::default()
        };
        assert!(cgroup.apply(&contract).is_empty());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("memory.max")).unwrap(),
            "1073741824"
        );
        let nowhere = Cgroup::at(dir.path().join("no-such-cgroup"));
        assert!(nowhere.apply(&contract).is_empty());
        assert_eq!(nowhere.apply(&limits), vec!["memory_max", "tasks_max"]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("pids.max")).unwrap(),
            "8"
        );
    }

    #[test]
    fn flat_keyed_files_are_read_by_key() {
        let stat = "usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n";
        assert_eq!(key_value(stat, "usage_usec"), Some(1234));
        assert_eq!(key_value(stat, "usage"), None);
        assert_eq!(key_value("populated 0\nfrozen 0\n", "populated"), Some(0));
    }
}
