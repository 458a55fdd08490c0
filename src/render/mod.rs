//! Rendering for people and machines: the process table (`abxctl ps`, `--json`) here; crawls
//! (`abxctl crawls`) in `crawl`, one crawl a page at a time (`show`) with its results
//! (`results`), a crawl's progress (`abxd run`, `add --wait`) in `progress`; schedules in `schedule`; the plain table they lay out in `table`.
//!
//! Invariant: rendering reads, never writes — it checks each live row's identity against procfs
//! and shows a row whose process is gone or whose pid was reused as unverified ("running?"),
//! never hides it and never corrects it (reconciliation is the daemon's job).

use crate::domain::Status;
use crate::identity::{self, Liveness};
use crate::printable;
use crate::store::{Machine, ProcessRow};
use clock::{clock_time, push_decimal, write_short_duration, LocalClock};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use table::Table;

pub use clock::short_duration;

pub mod admin;
mod asked;
pub mod binaries;
mod clock;
mod crawl;
mod find;
mod follow;
mod hosts;
pub mod json;
pub mod paint;
mod plugin_env;
mod progress;
mod results;
mod schedule;
mod show;
mod table;

pub use crawl::{bytes, crawl_status, crawls_table, log_tail, seeds_line, CrawlCounts};
pub use find::found_table;
pub use follow::{say, Follow};
pub use hosts::{hosts_table, site_wait, why_site_waits};
pub use plugin_env::plugin_env_table;
pub use progress::{Change, Progress, Standing};
pub use schedule::{local_moment, schedules_table};
pub use show::{crawl_report, CrawlPage, ShowPage, DEFAULT_PAGE};

/// The version of the `ps --json` shape; bumped on any incompatible change.
pub const PS_JSON_VERSION: u32 = 1;

/// A row as `ps` shows it: the stored row and what procfs says of it now.
#[derive(Debug, Clone, Serialize)]
pub struct PsEntry {
    #[serde(flatten)]
    pub row: ProcessRow,
    /// For rows that claim a live process: what procfs says now. `null` for final rows.
    pub verified: Option<Liveness>,
    /// Milliseconds until the deadline (negative when past it); `null` without a deadline or
    /// for final rows.
    pub time_left_ms: Option<i64>,
    /// For a live row of another machine whose heartbeat is older than the lease: when that
    /// machine was last heard of (its row is then shown as unknown, never as running).
    pub machine_silent_since_ms: Option<i64>,
    /// The name of the machine its process runs on (its hostname, where registered).
    #[serde(skip)]
    pub machine_name: Option<String>,
}

impl PsEntry {
    pub fn new(row: ProcessRow, now_ms: i64) -> PsEntry {
        let mut one = Self::all(vec![row], now_ms);
        one.pop().expect("one row, one entry")
    }

    /// The entries of `rows`, each live row's process checked (all at once: see
    /// `identity::check_all`).
    pub fn all(rows: Vec<ProcessRow>, now_ms: i64) -> Vec<PsEntry> {
        // (Only rows of this machine: another's pids mean nothing in this one's procfs.)
        let live: Vec<&identity::Identity> = rows
            .iter()
            .filter(|row| row.status.is_live() && row.on_this_machine())
            .filter_map(|row| row.identity.as_ref())
            .collect();
        let checked = identity::check_all(&live);
        let mut checked = checked.into_iter();
        rows.into_iter()
            .map(|row| {
                let live = row.status.is_live();
                let verified = match (&row.identity, live, row.on_this_machine()) {
                    (_, false, _) | (_, _, false) => None,
                    (Some(_), true, true) => checked.next(),
                    (None, true, true) => Some(Liveness::Gone),
                };
                let time_left_ms = row.deadline_at.filter(|_| live).map(|d| d - now_ms);
                PsEntry {
                    row,
                    verified,
                    time_left_ms,
                    machine_silent_since_ms: None,
                    machine_name: None,
                }
            })
            .collect()
    }

    /// Names each entry's machine, and marks the live rows of a machine not heard of since
    /// `silent_before_ms` (its heartbeat older than the lease) as silent.
    pub fn name_machines(entries: &mut [PsEntry], machines: &[Machine], silent_before_ms: i64) {
        let by_id: BTreeMap<&str, &Machine> = machines.iter().map(|m| (m.id.as_str(), m)).collect();
        // (Named by hostname, unless two machines share one: then by id.)
        let mut hostnames: BTreeMap<&str, usize> = BTreeMap::new();
        for machine in machines {
            *hostnames.entry(machine.hostname.as_str()).or_default() += 1;
        }
        let name_of = |id: &str| match by_id.get(id) {
            Some(m) if hostnames[m.hostname.as_str()] == 1 => m.hostname.clone(),
            _ => id.to_string(),
        };
        for entry in entries {
            let id = entry
                .row
                .machine_id
                .as_deref()
                .unwrap_or(identity::machine_id());
            let machine = by_id.get(id);
            entry.machine_name = Some(name_of(id));
            let silent = machine
                .map(|m| m.heartbeat_at)
                .filter(|&heard| heard < silent_before_ms && !entry.row.on_this_machine());
            if entry.row.status.is_live() {
                entry.machine_silent_since_ms = silent;
            }
        }
    }

    fn unverified(&self) -> bool {
        matches!(self.verified, Some(v) if v != Liveness::Alive)
            && self.row.status != Status::Starting
    }
}

#[derive(Serialize)]
struct PsJson<'a> {
    version: u32,
    now_ms: i64,
    processes: &'a [PsEntry],
}

/// The documented machine shape: `{"version":1,"now_ms":…,"processes":[…]}`, rows in id order.
pub fn ps_json(entries: &[PsEntry], now_ms: i64) -> String {
    serde_json::to_string_pretty(&PsJson {
        version: PS_JSON_VERSION,
        now_ms,
        processes: entries,
    })
    .expect("rows serialize")
}

/// A signal's short name (`TERM`), or its number.
pub(super) fn signal_name(signal: i32) -> String {
    let name = crate::signal::name_of_raw(signal);
    name.trim_start_matches("SIG").to_string()
}

/// How `ps_tree` shows what it shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct PsLook {
    /// The daemon answers on its socket: a live row whose process is gone is one it is about to
    /// settle (`ending`), not one nobody watches (`running?`).
    pub daemon_up: bool,
    /// Colour (see `paint`): `running?` in yellow.
    pub colour: bool,
}

/// A row's state in words, as `ps` shows it (`exited 0`, `running, leaking`, `running?`).
pub fn status_text(entry: &PsEntry, look: PsLook, now_ms: i64) -> String {
    let row = &entry.row;
    if let Some(heard) = entry.machine_silent_since_ms {
        return paint::paint(
            &format!(
                "unknown (machine silent since {})",
                clock_time(heard, now_ms)
            ),
            paint::Colour::Yellow,
            look.colour,
        );
    }
    if entry.unverified() {
        return match look.daemon_up {
            true => "ending".to_string(),
            false => paint::paint(
                &format!("{}?", row.status),
                paint::Colour::Yellow,
                look.colour,
            ),
        };
    }
    let text = match (row.status, row.exit_code, row.exit_signal) {
        (Status::Exited, Some(code), _) => format!("exited {code}"),
        (Status::Exited, None, Some(signal)) => format!("killed {}", signal_name(signal)),
        (Status::Exited, None, None) => match row.end_reason {
            Some(reason) => format!("exited ({reason})"),
            None => "exited".to_string(),
        },
        (status, _, _) => status.to_string(),
    };
    match (row.unkillable, row.leaking) {
        (true, _) => format!("{text}, UNKILLABLE"),
        (false, true) => format!("{text}, leaking"),
        (false, false) => text,
    }
}

/// The signals abxd sent the process (`TERM,KILL`), or `-`.
pub fn write_signals(out: &mut String, row: &ProcessRow) {
    let sent = [(row.sigterm_at, "TERM"), (row.sigkill_at, "KILL")]
        .into_iter()
        .filter_map(|(at, name)| at.map(|_| name));
    for (i, name) in sent.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(name);
    }
    if out.is_empty() {
        out.push('-');
    }
}

/// Cuts every line of `text` longer than `width` characters to that width, ending it with `…`
/// (for a terminal: Chromium's command lines run to thousands of characters).
pub fn cut_to_width(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line.chars().count() > width {
            out.extend(line.chars().take(width.saturating_sub(1)));
            out.push('…');
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// One line of the tree: an entry, how deep it is, and the branch drawn before its kind
/// (`│  ├─ `).
pub struct TreeLine<'a> {
    pub entry: &'a PsEntry,
    pub depth: usize,
    pub branch: String,
}

/// The entries as a tree, parents above their children (each parent's children in the order
/// given), like `systemctl status`; an entry whose parent is not among them is a root.
pub fn tree_lines(entries: &[PsEntry]) -> Vec<TreeLine<'_>> {
    // (Sorted and searched, not hashed: the rows come in id order, so the sort is one pass.)
    let mut ids: Vec<i64> = entries.iter().map(|e| e.row.id).collect();
    ids.sort_unstable();
    let mut children: BTreeMap<Option<i64>, Vec<&PsEntry>> = BTreeMap::new();
    for entry in entries {
        let parent = entry.row.parent_id.filter(|p| ids.binary_search(p).is_ok());
        children.entry(parent).or_default().push(entry);
    }
    let mut stack: Vec<(&PsEntry, String, bool, usize)> = children
        .get(&None)
        .map(|roots| {
            roots
                .iter()
                .rev()
                .map(|e| (*e, String::new(), true, 0))
                .collect()
        })
        .unwrap_or_default();
    let mut lines = Vec::with_capacity(entries.len());
    while let Some((entry, prefix, last, depth)) = stack.pop() {
        let branch = match depth {
            0 => String::new(),
            _ => format!("{prefix}{}", if last { "└─ " } else { "├─ " }),
        };
        if let Some(kids) = children.get(&Some(entry.row.id)) {
            let child_prefix = match depth {
                0 => String::new(),
                _ if last => format!("{prefix}   "),
                _ => format!("{prefix}│  "),
            };
            for (i, kid) in kids.iter().enumerate().rev() {
                stack.push((kid, child_prefix.clone(), i == kids.len() - 1, depth + 1));
            }
        }
        lines.push(TreeLine {
            entry,
            depth,
            branch,
        });
    }
    lines
}

/// The table as a tree, parents above their children, like `systemctl status`.
pub fn ps_tree(entries: &[PsEntry], now_ms: i64, look: PsLook) -> String {
    let mut table = Table::new([
        "ID", "PID", "MACHINE", "KIND", "STATUS", "STARTED", "AGE", "LEFT", "SIGNALS", "COMMAND",
    ]);
    // (One machine's rows: the column would say the same on every line.)
    let first_machine = entries.first().and_then(|e| e.machine_name.as_deref());
    if entries
        .iter()
        .all(|e| e.machine_name.as_deref() == first_machine)
    {
        table.hide(2);
    }
    let clock = LocalClock::at(now_ms);
    // (The cells of one row, written in place and copied into the table: no allocation per
    // cell, a tenth of `abxctl ps` on 1 000 rows.)
    let mut cells: [String; 10] = Default::default();
    for line in tree_lines(entries) {
        let entry = line.entry;
        let row = &entry.row;
        cells.iter_mut().for_each(String::clear);
        let [id, pid, machine, kind, status, started, age, left, signals, command] = &mut cells;
        if row.id < 0 {
            id.push('-');
        }
        push_decimal(id, row.id.unsigned_abs(), 1);
        match row.pid {
            Some(p) => push_decimal(pid, p.unsigned_abs().into(), 1),
            None => pid.push('-'),
        }
        match &entry.machine_name {
            Some(name) => machine.push_str(&printable::line(name)),
            None => machine.push('-'),
        }
        kind.push_str(&line.branch);
        kind.push_str(row.kind.as_str());
        status.push_str(&status_text(entry, look, now_ms));
        match row.started_at {
            Some(at) => clock.write_time_of(started, at),
            None => started.push('-'),
        }
        match row.started_at {
            Some(start) => write_short_duration(age, row.ended_at.unwrap_or(now_ms) - start),
            None => age.push('-'),
        }
        write_time_left(left, entry, now_ms);
        write_signals(signals, row);
        for (i, arg) in row.argv.iter().enumerate() {
            if i > 0 {
                command.push(' ');
            }
            command.push_str(arg);
        }
        if let Cow::Owned(escaped) = printable::line(command) {
            *command = escaped;
        }
        table.add_row(cells.each_ref());
    }
    if entries.is_empty() {
        return "no processes\n".into();
    }
    let mut out = String::new();
    table.render_into(&mut out, "");
    if !look.daemon_up && entries.iter().any(PsEntry::unverified) {
        out.push_str(
            "\n? recorded as live, but procfs shows the process gone or its pid reused:\n  \
             abxd is not running or has not reconciled these rows yet.\n",
        );
    }
    out
}

/// What is left before the row's deadline (`12s`), or before its SIGKILL once it is stopping
/// (`KILL 3s`), or `-`.
pub fn write_time_left(out: &mut String, entry: &PsEntry, now_ms: i64) {
    let row = &entry.row;
    match (row.status, row.kill_at, entry.time_left_ms) {
        (Status::Stopping, Some(kill_at), _) => {
            out.push_str("KILL ");
            write_short_duration(out, kill_at - now_ms);
        }
        (_, _, Some(ms)) => write_short_duration(out, ms),
        (_, _, None) => out.push('-'),
    }
}

#[cfg(test)]
mod tests {
    use super::cut_to_width;

    #[test]
    fn long_lines_are_cut_to_the_width_by_characters() {
        let text = "ID  COMMAND\n2   └─ /usr/lib/chromium/chromium --type=renderer\n";
        assert_eq!(
            cut_to_width(text, 20),
            "ID  COMMAND\n2   └─ /usr/lib/chr…\n"
        );
        assert_eq!(cut_to_width(text, 200), text);
    }
}
