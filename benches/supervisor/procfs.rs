//! Readers of `/proc` for what the benchmarks measure of a process: CPU time, memory (PSS, USS),
//! context switches, whether it is gone.

/// The number after `key` in `/proc/PID/<file>` (0 if there is none).
pub(crate) fn proc_file_field(pid: i32, file: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

pub(crate) fn proc_field(pid: i32, key: &str) -> u64 {
    proc_file_field(pid, "status", key)
}

pub(crate) fn cpu_ticks(pid: i32) -> u64 {
    let stat = procfs::process::Process::new(pid).unwrap().stat().unwrap();
    stat.utime + stat.stime
}

/// A field of `/proc/PID/smaps_rollup` in KiB (memory as the kernel shares it: `Pss`, and the
/// private pages that make USS).
pub(crate) fn rollup_kib(pid: i32, key: &str) -> u64 {
    proc_file_field(pid, "smaps_rollup", key)
}

/// PSS and USS of a process, in MiB.
pub(crate) fn pss_uss_mib(pid: i32) -> (f64, f64) {
    let uss = rollup_kib(pid, "Private_Clean:") + rollup_kib(pid, "Private_Dirty:");
    (rollup_kib(pid, "Pss:") as f64 / 1024.0, uss as f64 / 1024.0)
}

/// The CPU time a process has used, in ns (`/proc/PID/schedstat`: exact, where stat counts
/// 10 ms ticks).
pub(crate) fn cpu_ns(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Context switches of every thread of `pid` (a thread's own switches are its task's).
pub(crate) fn task_switches(pid: i32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .map(|task| {
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            status
                .lines()
                .filter(|l| {
                    l.starts_with("voluntary_ctxt_switches:")
                        || l.starts_with("nonvoluntary_ctxt_switches:")
                })
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// Whether process `pid` is gone (or a zombie).
pub(crate) fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(") ")
            .next()
            .is_some_and(|rest| rest.starts_with('Z'))
    })
}

/// CPU time of process `pid` and of its reaped descendants (`utime + stime + cutime + cstime`),
/// in ms; `None` once it is reaped (its `/proc` entry can vanish between any two reads).
pub(crate) fn cpu_with_reaped_ms(pid: i32) -> Option<f64> {
    let stat = procfs::process::Process::new(pid).ok()?.stat().ok()?;
    let ticks = stat.utime + stat.stime + (stat.cutime + stat.cstime).max(0) as u64;
    Some(ticks as f64 * 1000.0 / procfs::ticks_per_second() as f64)
}
