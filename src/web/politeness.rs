//! What `/metrics` says of politeness: host keys by state, snapshots by state of the busiest 20
//! host keys, and the back-offs sites caused by reason.
//!
//! Invariant: the label sets are bounded — a state, a reason ("HTTP 429", "HTTP 503"), and host
//! labels for no more than [`TOP_HOSTS`] host keys, whatever the number crawled.

use super::exposition::{family, label};
use crate::store::HostState;
use std::fmt::Write as _;

/// The host keys that get a label of their own: the busiest.
pub const TOP_HOSTS: usize = 20;

/// What a scrape read of politeness.
#[derive(Debug, Clone, Default)]
pub struct HostGauges {
    /// Busiest first (`Hosts::list`).
    pub hosts: Vec<HostState>,
    pub backoffs: Vec<(String, u64)>,
}

/// Whether a host key runs snapshots, waits (its delay, or full), or cools down.
fn state(host: &HostState) -> &'static str {
    match (host.cooldown_ms, host.running) {
        (Some(_), _) => "cooling",
        (None, 0) => "waiting",
        (None, _) => "running",
    }
}

pub fn render(out: &mut String, gauges: &HostGauges) {
    family(
        out,
        "abxd_hosts",
        "gauge",
        "Host keys with snapshots running or queued, or cooling down, by state (running; \
         waiting: queued, none running; cooling: after a 429 or 503).",
    );
    for wanted in ["running", "waiting", "cooling"] {
        let n = (gauges.hosts.iter()).filter(|h| state(h) == wanted).count();
        let _ = writeln!(out, "abxd_hosts{{state=\"{wanted}\"}} {n}");
    }
    family(
        out,
        "abxd_host_snapshots",
        "gauge",
        "Snapshots running and queued of the 20 busiest host keys.",
    );
    for host in gauges.hosts.iter().take(TOP_HOSTS) {
        let key = label(&host.key);
        for (status, n) in [("running", host.running), ("queued", host.queued)] {
            let _ = writeln!(
                out,
                "abxd_host_snapshots{{host=\"{key}\",state=\"{status}\"}} {n}"
            );
        }
    }
    family(
        out,
        "abxd_backoffs_total",
        "counter",
        "Snapshots put back because their site said 429 or 503, by reason.",
    );
    for (reason, n) in &gauges.backoffs {
        let _ = writeln!(
            out,
            "abxd_backoffs_total{{reason=\"{}\"}} {n}",
            label(reason)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(n: usize, running: u64, cooling: bool) -> HostState {
        HostState {
            key: format!("site{n}.example"),
            running,
            queued: 3,
            next_start_in_ms: None,
            cooldown_ms: cooling.then_some(2000),
            cooldown_reason: cooling.then(|| "HTTP 429".into()),
            backoffs: 0,
        }
    }

    #[test]
    fn hosts_are_counted_by_state_and_only_the_busiest_twenty_are_labelled() {
        let mut hosts: Vec<HostState> = (0..30).map(|n| host(n, 1, false)).collect();
        hosts.push(host(30, 0, true));
        hosts.push(host(31, 0, false));
        let gauges = HostGauges {
            hosts,
            backoffs: vec![("HTTP 429".into(), 4)],
        };
        let mut text = String::new();
        render(&mut text, &gauges);
        assert!(
            text.contains("abxd_hosts{state=\"running\"} 30\n"),
            "{text}"
        );
        assert!(text.contains("abxd_hosts{state=\"cooling\"} 1\n"), "{text}");
        assert!(text.contains("abxd_hosts{state=\"waiting\"} 1\n"), "{text}");
        let labelled: std::collections::BTreeSet<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("abxd_host_snapshots{host=\""))
            .filter_map(|l| l.split('"').next())
            .collect();
        assert_eq!(labelled.len(), TOP_HOSTS);
        assert!(text.contains("abxd_backoffs_total{reason=\"HTTP 429\"} 4\n"));
        assert!(text.contains("# TYPE abxd_backoffs_total counter\n"));
    }
}
