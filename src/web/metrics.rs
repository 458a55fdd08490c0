//! `/metrics`: what abxd did and does, in Prometheus' text format (version 0.0.4).
//!
//! Counters of what ended (hooks by plugin and status, their durations, teardowns, SIGKILLs,
//! escapees, leaks, unkillable processes) are kept by a [`Tally`] that reads, at each scrape,
//! only the rows that ended or started since the scrape before — so a counter never goes back
//! when retention prunes old rows, and a scrape costs what changed. Everything else is a gauge
//! read at the scrape.
//!
//! Invariants: every name has the `abxd_` prefix and its unit in base units (`_seconds`,
//! `_bytes`), every counter ends in `_total`, histograms have cumulative `le` buckets ending in
//! `+Inf` with `_sum` and `_count`; label values are escaped (`\\`, `"`, newline); a row is
//! counted once, also one that ends late — a commit that lands after a scrape with an older
//! `ended_at` ([`Seen`]).

use super::exposition::{family, label};
use super::histogram::Histogram;
use super::seen::Seen;
use crate::domain::Kind;
use crate::store::{EndedRow, Moment, StartedHook};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The bucket bounds (seconds) of a hook's duration.
const HOOK_SECONDS: &[f64] = &[
    0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0,
];

/// The bucket bounds (seconds) of a teardown: SIGTERM sent to the tree gone.
const TEARDOWN_SECONDS: &[f64] = &[0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// What ended and started, counted once each, since the first scrape read the whole table.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// The rows whose ends were counted.
    ends: Seen,
    /// The hook rows whose starts were counted.
    starts: Seen,
    hooks_started: BTreeMap<String, u64>,
    hooks_ended: BTreeMap<(String, String), u64>,
    hook_seconds: BTreeMap<String, Histogram>,
    teardown_seconds: BTreeMap<Kind, Histogram>,
    sigkills: BTreeMap<Kind, u64>,
    escaped: u64,
    leaked: u64,
    unkillable: u64,
}

/// A hook's plugin as a label (`unknown` for a hook row with no result).
fn plugin_label(plugin: &Option<String>) -> String {
    plugin.clone().unwrap_or_else(|| "unknown".into())
}

impl Tally {
    /// What it has seen of `moment`.
    pub fn seen(&mut self, moment: Moment) -> &mut Seen {
        match moment {
            Moment::Ended => &mut self.ends,
            Moment::HookStarted => &mut self.starts,
        }
    }

    /// Counts the rows of `ended` not counted before.
    pub fn add_ended(&mut self, ended: &[EndedRow]) {
        for row in ended {
            if !self.ends.first_time(row.ended_at, row.id) {
                continue;
            }
            if row.kind == Kind::Hook {
                let plugin = plugin_label(&row.plugin);
                let status = match (row.result_status, &row.end_reason) {
                    (Some(status), _) => status.to_string(),
                    (None, Some(reason)) => reason.clone(),
                    (None, None) => "unknown".into(),
                };
                *self
                    .hooks_ended
                    .entry((plugin.clone(), status))
                    .or_default() += 1;
                if let Some(started) = row.started_at {
                    self.hook_seconds
                        .entry(plugin)
                        .or_insert_with(|| Histogram::new(HOOK_SECONDS))
                        .observe(seconds(row.ended_at - started));
                }
            }
            if let Some(term) = row.sigterm_at {
                self.teardown_seconds
                    .entry(row.kind)
                    .or_insert_with(|| Histogram::new(TEARDOWN_SECONDS))
                    .observe(seconds(row.ended_at - term));
            }
            if row.sigkill_at.is_some() {
                *self.sigkills.entry(row.kind).or_default() += 1;
            }
            self.escaped += u64::from(row.escaped);
            self.leaked += u64::from(row.leaking);
            self.unkillable += u64::from(row.unkillable);
        }
    }

    /// Counts the hooks of `started` not counted before.
    pub fn add_started(&mut self, started: &[StartedHook]) {
        for hook in started {
            if !self.starts.first_time(hook.started_at, hook.id) {
                continue;
            }
            *self
                .hooks_started
                .entry(plugin_label(&hook.plugin))
                .or_default() += 1;
        }
    }
}

fn seconds(ms: i64) -> f64 {
    ms.max(0) as f64 / 1000.0
}

/// What a scrape read besides the tally: gauges.
#[derive(Debug, Clone, Default)]
pub struct Gauges {
    /// `(version, machine id, hostname)` of this daemon.
    pub info: (String, String, String),
    /// Rows by kind and state.
    pub processes: Vec<(Kind, String, u64)>,
    /// Live rows flagged, by flag (`escaped`, `leaking`, `unkillable`).
    pub flagged: BTreeMap<&'static str, u64>,
    /// Queued crawls and snapshots, and how long the oldest due one has waited (ms).
    pub queued: [(&'static str, u64, i64); 2],
    pub browsers_alive: u64,
    /// Resident bytes of the live processes of each kind on this machine.
    pub memory: BTreeMap<Kind, u64>,
    /// Each machine's hostname and how long ago its heartbeat was (ms).
    pub heartbeats: Vec<(String, String, i64)>,
    /// The writes that found the database busy, and those refused without trying: the
    /// daemon's since it started, and those of this machine's workers that exited.
    pub daemon_writes: (u64, u64),
    pub worker_writes: (u64, u64),
    /// What the crawls in the table refused, by reason: URLs (the URL rule, the crawls' rules)
    /// and connects (their egress policies).
    pub refused: BTreeMap<String, u64>,
    /// The least free space where abxd writes (`disk`), and whether it is under
    /// `min_free_space` (no new crawl or snapshot starts then).
    pub disk: Option<(u64, bool)>,
    /// Politeness: host keys by state, back-offs by reason.
    pub politeness: super::politeness::HostGauges,
}

/// The whole exposition.
pub fn render(tally: &Tally, gauges: &Gauges) -> String {
    let mut out = String::new();
    let (version, machine, hostname) = &gauges.info;
    family(
        &mut out,
        "abxd_info",
        "gauge",
        "This daemon: its version and machine (always 1).",
    );
    let _ = writeln!(
        out,
        "abxd_info{{version=\"{}\",machine=\"{}\",hostname=\"{}\"}} 1",
        label(version),
        label(machine),
        label(hostname)
    );
    family(
        &mut out,
        "abxd_processes",
        "gauge",
        "Rows of the process table, by kind and state.",
    );
    for (kind, state, count) in &gauges.processes {
        let _ = writeln!(
            out,
            "abxd_processes{{kind=\"{kind}\",state=\"{state}\"}} {count}"
        );
    }
    family(
        &mut out,
        "abxd_flagged_processes",
        "gauge",
        "Live processes that escaped their hook's tree, outlived their parent (leaking) or survived SIGKILL (unkillable).",
    );
    for flag in ["escaped", "leaking", "unkillable"] {
        let count = gauges.flagged.get(flag).copied().unwrap_or(0);
        let _ = writeln!(out, "abxd_flagged_processes{{flag=\"{flag}\"}} {count}");
    }
    family(
        &mut out,
        "abxd_hooks_started_total",
        "counter",
        "Hook processes started, by plugin.",
    );
    for (plugin, count) in &tally.hooks_started {
        let _ = writeln!(
            out,
            "abxd_hooks_started_total{{plugin=\"{}\"}} {count}",
            label(plugin)
        );
    }
    family(
        &mut out,
        "abxd_hooks_ended_total",
        "counter",
        "Hook processes ended, by plugin and status (the result's, or why the process ended).",
    );
    for ((plugin, status), count) in &tally.hooks_ended {
        let _ = writeln!(
            out,
            "abxd_hooks_ended_total{{plugin=\"{}\",status=\"{}\"}} {count}",
            label(plugin),
            label(status)
        );
    }
    family(
        &mut out,
        "abxd_hook_duration_seconds",
        "histogram",
        "How long hooks ran, by plugin.",
    );
    for (plugin, histogram) in &tally.hook_seconds {
        let labels = format!("plugin=\"{}\"", label(plugin));
        histogram.write(&mut out, "abxd_hook_duration_seconds", &labels);
    }
    family(
        &mut out,
        "abxd_teardown_seconds",
        "histogram",
        "From SIGTERM sent to the process (and its tree) gone, by kind.",
    );
    for (kind, histogram) in &tally.teardown_seconds {
        histogram.write(
            &mut out,
            "abxd_teardown_seconds",
            &format!("kind=\"{kind}\""),
        );
    }
    family(
        &mut out,
        "abxd_sigkills_sent_total",
        "counter",
        "Processes abxd sent SIGKILL, by kind.",
    );
    for (kind, count) in &tally.sigkills {
        let _ = writeln!(out, "abxd_sigkills_sent_total{{kind=\"{kind}\"}} {count}");
    }
    for (name, help, count) in [
        (
            "abxd_escaped_processes_total",
            "Processes found outside their hook's tree.",
            tally.escaped,
        ),
        (
            "abxd_leaked_processes_total",
            "Processes that exited while processes they started lived on.",
            tally.leaked,
        ),
        (
            "abxd_unkillable_processes_total",
            "Processes still alive long after SIGKILL.",
            tally.unkillable,
        ),
    ] {
        family(&mut out, name, "counter", help);
        let _ = writeln!(out, "{name} {count}");
    }
    let writes = [
        ("daemon", gauges.daemon_writes),
        ("workers", gauges.worker_writes),
    ];
    for (name, help, refused) in [
        (
            "abxd_database_busy_writes_total",
            "Writes that found the database locked by another process (or the server out of \
             reach), by process: the daemon's, and those of this machine's workers that exited.",
            false,
        ),
        (
            "abxd_database_refused_writes_total",
            "Writes refused without trying while the database stayed busy, by process.",
            true,
        ),
    ] {
        family(&mut out, name, "counter", help);
        for (process, (busy, refused_count)) in writes {
            let count = if refused { refused_count } else { busy };
            let _ = writeln!(out, "{name}{{process=\"{process}\"}} {count}");
        }
    }
    family(
        &mut out,
        "abxd_crawl_refusals",
        "gauge",
        "What the crawls in the table refused, by reason: discovered URLs (the URL rule, the \
         crawls' rules) and connects of their hooks (connect_*: their egress policies).",
    );
    for (reason, count) in &gauges.refused {
        let _ = writeln!(
            out,
            "abxd_crawl_refusals{{reason=\"{}\"}} {count}",
            label(reason)
        );
    }
    family(
        &mut out,
        "abxd_queued",
        "gauge",
        "Crawls and snapshots waiting to be claimed.",
    );
    for (queue, queued, _) in &gauges.queued {
        let _ = writeln!(out, "abxd_queued{{queue=\"{queue}\"}} {queued}");
    }
    family(
        &mut out,
        "abxd_queue_oldest_due_seconds",
        "gauge",
        "How long the oldest due crawl or snapshot has waited to be claimed (0: none due).",
    );
    for (queue, _, oldest) in &gauges.queued {
        let _ = writeln!(
            out,
            "abxd_queue_oldest_due_seconds{{queue=\"{queue}\"}} {}",
            seconds(*oldest)
        );
    }
    super::politeness::render(&mut out, &gauges.politeness);
    family(
        &mut out,
        "abxd_browsers_alive",
        "gauge",
        "Browsers alive on this machine.",
    );
    let _ = writeln!(out, "abxd_browsers_alive {}", gauges.browsers_alive);
    if let Some((free, full)) = gauges.disk {
        family(
            &mut out,
            "abxd_disk_free_bytes",
            "gauge",
            "The least free space where abxd writes (its data dir's and database's filesystems).",
        );
        let _ = writeln!(out, "abxd_disk_free_bytes {free}");
        family(
            &mut out,
            "abxd_disk_full",
            "gauge",
            "1 while that space is under min_free_space: no new crawl or snapshot starts.",
        );
        let _ = writeln!(out, "abxd_disk_full {}", u8::from(full));
    }
    family(
        &mut out,
        "abxd_resident_memory_bytes",
        "gauge",
        "Resident memory of the live processes of each kind on this machine.",
    );
    for (kind, bytes) in &gauges.memory {
        let _ = writeln!(out, "abxd_resident_memory_bytes{{kind=\"{kind}\"}} {bytes}");
    }
    family(
        &mut out,
        "abxd_machine_heartbeat_age_seconds",
        "gauge",
        "How long ago each machine sharing the database said it was alive.",
    );
    for (id, hostname, age) in &gauges.heartbeats {
        let _ = writeln!(
            out,
            "abxd_machine_heartbeat_age_seconds{{machine=\"{}\",hostname=\"{}\"}} {}",
            label(id),
            label(hostname),
            seconds(*age)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ResultStatus;

    fn ended(id: i64, plugin: &str, at: i64) -> EndedRow {
        EndedRow {
            id,
            kind: Kind::Hook,
            plugin: Some(plugin.into()),
            result_status: Some(ResultStatus::Succeeded),
            end_reason: Some("exited".into()),
            exit_code: Some(0),
            started_at: Some(at - 1500),
            ended_at: at,
            sigterm_at: None,
            sigkill_at: None,
            escaped: false,
            leaking: false,
            unkillable: false,
        }
    }

    #[test]
    fn a_row_read_twice_is_counted_once_and_a_late_one_still_counts() {
        let mut tally = Tally::default();
        tally.add_ended(&[ended(1, "wget", 1_000_000), ended(2, "wget", 1_001_000)]);
        // A read again of a row counted, and a row committed late with an older end.
        tally.add_ended(&[ended(2, "wget", 1_001_000), ended(3, "title", 999_000)]);
        assert_eq!(tally.hooks_ended[&("wget".into(), "succeeded".into())], 2);
        assert_eq!(tally.hooks_ended[&("title".into(), "succeeded".into())], 1);
        assert_eq!(tally.hook_seconds["wget"].count, 2);
        assert_eq!(tally.hook_seconds["wget"].sum, 3.0);
        assert_eq!(tally.seen(Moment::Ended).overlap().1, 1_001_000);
    }

    #[test]
    fn teardowns_sigkills_and_flags_are_counted_by_kind() {
        let mut tally = Tally::default();
        let mut killed = ended(5, "chrome", 10_000);
        killed.result_status = None;
        killed.end_reason = Some("timeout".into());
        killed.sigterm_at = Some(9_800);
        killed.sigkill_at = Some(9_900);
        let mut child = ended(6, "chrome", 10_050);
        child.kind = Kind::Child;
        child.plugin = None;
        child.sigterm_at = Some(9_800);
        child.escaped = true;
        tally.add_ended(&[killed, child]);
        assert_eq!(tally.hooks_ended[&("chrome".into(), "timeout".into())], 1);
        assert_eq!(tally.sigkills[&Kind::Hook], 1);
        assert_eq!(tally.teardown_seconds[&Kind::Hook].sum, 0.2);
        assert_eq!(tally.teardown_seconds[&Kind::Child].count, 1);
        assert_eq!(tally.escaped, 1);
        let text = render(&tally, &Gauges::default());
        assert!(
            text.contains("abxd_teardown_seconds_bucket{kind=\"hook\",le=\"0.25\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("abxd_teardown_seconds_bucket{kind=\"hook\",le=\"0.1\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("abxd_teardown_seconds_bucket{kind=\"hook\",le=\"+Inf\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("abxd_sigkills_sent_total{kind=\"hook\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("abxd_escaped_processes_total 1\n"), "{text}");
    }

    #[test]
    fn started_hooks_are_counted_once_by_plugin() {
        let mut tally = Tally::default();
        let hook = |id, plugin: &str| StartedHook {
            id,
            plugin: Some(plugin.into()),
            started_at: 5_000 + id,
        };
        tally.add_started(&[hook(1, "wget"), hook(2, "wget")]);
        tally.add_started(&[hook(2, "wget"), hook(3, "dom")]);
        assert_eq!(tally.hooks_started["wget"], 2);
        assert_eq!(tally.hooks_started["dom"], 1);
    }

    #[test]
    fn label_values_are_escaped() {
        let gauges = Gauges {
            info: ("1.0".into(), "m".into(), "a\"b\\c\nd".into()),
            ..Gauges::default()
        };
        let text = render(&Tally::default(), &gauges);
        assert!(text.contains(r#"hostname="a\"b\\c\nd"} 1"#), "{text}");
    }

    #[test]
    fn a_disk_short_of_space_is_a_gauge_with_the_space_free() {
        let gauges = Gauges {
            disk: Some((5 << 20, true)),
            ..Gauges::default()
        };
        let text = render(&Tally::default(), &gauges);
        assert!(text.contains("\nabxd_disk_full 1\n"), "{text}");
        assert!(text.contains("\nabxd_disk_free_bytes 5242880\n"), "{text}");
        assert!(text.contains("# TYPE abxd_disk_full gauge\n"), "{text}");
        let unmeasured = render(&Tally::default(), &Gauges::default());
        assert!(!unmeasured.contains("abxd_disk_full"), "{unmeasured}");
    }

    #[test]
    fn what_the_crawls_refused_is_a_gauge_by_reason() {
        let gauges = Gauges {
            refused: [
                ("connect_loopback".to_string(), 3),
                ("scheme".to_string(), 2),
            ]
            .into(),
            ..Gauges::default()
        };
        let text = render(&Tally::default(), &gauges);
        assert!(
            text.contains("# TYPE abxd_crawl_refusals gauge\n"),
            "{text}"
        );
        assert!(
            text.contains("abxd_crawl_refusals{reason=\"connect_loopback\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("abxd_crawl_refusals{reason=\"scheme\"} 2\n"),
            "{text}"
        );
    }
}
