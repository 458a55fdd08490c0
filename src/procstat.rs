//! `/proc/PID/stat`, read and parsed in one place (and the owner and capability lines of
//! `/proc/PID/status`, and the list of pids in `/proc`).
//!
//! Invariant: this is the only parser of those files in abxd. The command (field 2) may hold
//! spaces and parentheses, so fields are counted from the *last* closing parenthesis; a pid that
//! has no stat file (or one that cannot be parsed) is reported as no process at all.

/// The fields of `/proc/PID/stat` that abxd uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The command name (field 2), without its parentheses.
    pub comm: String,
    /// The state letter (field 3: R, S, D, T, Z, X, …).
    pub state: char,
    /// The parent pid (field 4).
    pub ppid: i32,
    /// The process group (field 5).
    pub pgrp: i32,
    /// The CPU time it used, user and system, in clock ticks (fields 14 and 15).
    pub cpu_ticks: u64,
    /// The number of threads (field 20).
    pub threads: u32,
    /// The start time in clock ticks since boot (field 22).
    pub start_ticks: u64,
}

impl Stat {
    /// Whether the process has ended (a zombie waiting for its reaper, or dead).
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// The real user id a process runs as (the first field of `Uid:` in `/proc/PID/status`; real,
/// not effective, so a setuid helper such as Chromium's sandbox still counts as its user's).
pub fn real_uid(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_real_uid(&status)
}

/// This process's capability set `set` ("Eff", "Amb", …: the `Cap<set>:` line of
/// `/proc/self/status`), as a mask (empty where it cannot be read).
pub fn own_capabilities(set: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = format!("Cap{set}:");
    (status.lines())
        .find_map(|line| line.strip_prefix(field.as_str()))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap_or(0)
}

fn parse_real_uid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_ascii_whitespace().next()?.parse().ok()
}

/// Parses the text of a stat file.
pub fn parse(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let mut fields = text[close + 1..].split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    // Fields 6 … 13 lie between the group (5) and the user time (14).
    let utime: u64 = fields.nth(14 - 6)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // Fields 16 … 19 lie between the system time (15) and the number of threads (20).
    let threads = fields.nth(20 - 16)?.parse().ok()?;
    let start_ticks = fields.nth(22 - 21)?.parse().ok()?;
    Some(Stat {
        comm,
        state,
        ppid,
        pgrp,
        cpu_ticks: utime + stime,
        threads,
        start_ticks,
    })
}

/// Reads the stat of `pid`, or `None` when no process has that pid.
pub fn read(pid: i32) -> Option<Stat> {
    if pid <= 0 {
        return None;
    }
    parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The pids of every process now (the numeric entries of `/proc`).
pub fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_counted_from_the_last_parenthesis() {
        let text = "42 (a) b (c)) S 7 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 \
                    1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let stat = parse(text).unwrap();
        assert_eq!(stat.comm, "a) b (c)");
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.ppid, 7);
        assert_eq!(stat.pgrp, 42);
        assert_eq!(stat.cpu_ticks, 3);
        assert_eq!(stat.threads, 1);
        assert_eq!(stat.start_ticks, 123456);
    }

    #[test]
    fn truncated_or_garbled_text_is_no_process() {
        assert_eq!(parse(""), None);
        assert_eq!(parse("42 (sh) S 1"), None);
        assert_eq!(parse("42 sh S 1 2 3"), None);
        assert_eq!(read(-1), None);
        assert_eq!(read(0), None);
    }

    #[test]
    fn reads_what_procfs_reads() {
        let me = std::process::id() as i32;
        let expected = procfs::process::Process::myself().unwrap().stat().unwrap();
        let stat = read(me).unwrap();
        assert_eq!(stat.start_ticks, expected.starttime);
        assert_eq!(stat.ppid, expected.ppid);
        assert_eq!(stat.pgrp, expected.pgrp);
        assert_eq!(stat.comm, expected.comm);
        assert_eq!(i64::from(stat.threads), expected.num_threads);
        assert!(stat.cpu_ticks >= expected.utime + expected.stime);
    }

    #[test]
    fn the_real_uid_is_the_first_of_the_uid_line() {
        let status = "Name:\tchrome-sandbox\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(parse_real_uid(status), Some(1000));
        assert_eq!(parse_real_uid("Name:\tx\n"), None);
        assert_eq!(
            real_uid(std::process::id() as i32),
            Some(rustix::process::getuid().as_raw())
        );
    }
}
