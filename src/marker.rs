//! Markers: how a process abxd started, and everything that process starts, is recognised again
//! after it left the tree (double-forked, changed its session or group, re-parented away).
//!
//! Invariant: the two variable names and the namespace live here and nowhere else. Every process
//! abxd spawns carries `ABXD_PROCESS_ID=<row>` and
//! `ABXD_INSTANCE=<instance id>@<machine id>@<boot id>`; a process matches a row only when both
//! are present and the namespace is this database's on this machine in this boot, so markers of
//! another abxd, another machine, or an earlier boot never match.

use crate::identity;
use crate::procstat::all_pids;
use crate::proctree::{read, Found};
use std::collections::BTreeMap;

/// The environment variable that marks a process, and everything it starts, as belonging to row N.
pub const PROCESS_ID_ENV: &str = "ABXD_PROCESS_ID";

/// The environment variable that names the database (instance) and boot a marked process
/// belongs to.
pub const INSTANCE_ENV: &str = "ABXD_INSTANCE";

/// The marker namespace of a database on this machine in this boot:
/// `<instance id>@<machine id>@<boot id>`. A process of another database, of another machine
/// sharing the database (even one declared on this host: `ABXD_MACHINE_ID`), or of an earlier
/// boot never matches it.
pub fn namespace(instance_id: &str) -> String {
    format!(
        "{instance_id}@{}@{}",
        identity::machine_id(),
        identity::boot_id()
    )
}

/// A marker scan: the live processes carrying a marker, by row, and the processes of this
/// process's own user whose environment cannot be read (made non-dumpable): they may carry a
/// marker, so they are unknown — never taken as absent.
#[derive(Debug, Default)]
pub struct Scan {
    pub by_row: BTreeMap<i64, Vec<Found>>,
    pub unreadable: Vec<Found>,
}

/// Live processes carrying the marker of any of `rows` for `instance`, by row.
pub fn marked(instance: &str, rows: &[i64]) -> BTreeMap<i64, Vec<Found>> {
    if rows.is_empty() {
        return BTreeMap::new();
    }
    scan_where(instance, all_pids(), |row| rows.contains(&row)).by_row
}

/// Every live process carrying a marker of `instance`, by row.
pub fn marked_any(instance: &str) -> BTreeMap<i64, Vec<Found>> {
    scan_any(instance).by_row
}

/// Every live process carrying a marker of `instance`, by row, and those that may (see [`Scan`]).
pub fn scan_any(instance: &str) -> Scan {
    scan_where(instance, all_pids(), |_| true)
}

/// The processes among `pids` carrying the marker of one of `rows` for `instance`, by row: the
/// environments of those processes only, not the host's.
pub fn marked_among(instance: &str, pids: &[i32], rows: &[i64]) -> BTreeMap<i64, Vec<Found>> {
    if rows.is_empty() || pids.is_empty() {
        return BTreeMap::new();
    }
    scan_where(instance, pids.iter().copied(), |row| rows.contains(&row)).by_row
}

fn scan_where(
    instance: &str,
    pids: impl IntoIterator<Item = i32>,
    wanted: impl Fn(i64) -> bool,
) -> Scan {
    let mut by_row: BTreeMap<i64, Vec<Found>> = BTreeMap::new();
    let mut unreadable = Vec::new();
    let my_uid = rustix::process::geteuid().as_raw();
    let instance_var = format!("{INSTANCE_ENV}={instance}");
    let me = std::process::id() as i32;
    for pid in pids {
        if pid == me {
            continue;
        }
        let environ = match std::fs::read(format!("/proc/{pid}/environ")) {
            Ok(environ) => environ,
            Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
                // (Not the owner of /proc/PID: a non-dumpable process's files are root's.)
                // (`status` is readable whatever the process's dumpability.)
                let own = crate::procstat::real_uid(pid) == Some(my_uid);
                if let Some(process) = read(pid).filter(|_| own) {
                    unreadable.push(process);
                }
                continue;
            }
            Err(_) => continue,
        };
        let mut ours = false;
        let mut row = None;
        for var in environ.split(|&b| b == 0) {
            if var == instance_var.as_bytes() {
                ours = true;
            } else if let Some(value) = var.strip_prefix(PROCESS_ID_ENV.as_bytes()) {
                row = value
                    .strip_prefix(b"=")
                    .and_then(|v| std::str::from_utf8(v).ok()?.parse::<i64>().ok());
            }
        }
        if let (true, Some(row)) = (ours, row) {
            if wanted(row) {
                if let Some(process) = read(pid) {
                    by_row.entry(row).or_default().push(process);
                }
            }
        }
    }
    Scan { by_row, unreadable }
}
