//! `abxctl hosts`: each host key with snapshots running or queued, or cooling down — when it may
//! start another, and why it waits.

use super::short_duration;
use super::table::Table;
use crate::printable;
use crate::store::HostState;

/// Why `host`'s queued snapshots wait, for `abxctl show`: "2 snapshots wait for their site
/// example.com: it cools down 3s more (HTTP 429, Retry-After 3s)".
pub fn site_wait(host: &HostState) -> String {
    format!(
        "{} snapshots wait for their site {}: {}",
        host.queued,
        printable::line(&host.key),
        why_site_waits(host)
    )
}

/// Why a site starts nothing now, as every view says it: "it cools down 3s more (HTTP 429,
/// Retry-After 3s)", "its next start is in 400ms".
pub fn why_site_waits(host: &HostState) -> String {
    match (
        host.cooldown_ms,
        &host.cooldown_reason,
        host.next_start_in_ms,
    ) {
        (Some(ms), Some(why), _) => format!("it cools down {} more ({why})", short_duration(ms)),
        (Some(ms), None, _) => format!("it cools down {} more", short_duration(ms)),
        (None, _, Some(ms)) => format!("its next start is in {}", short_duration(ms)),
        (None, _, None) => "it has no room".to_string(),
    }
}

/// The table of `hosts` (as `Hosts::list` orders them).
pub fn hosts_table(hosts: &[HostState]) -> String {
    if hosts.is_empty() {
        return "no host has snapshots queued or running\n".into();
    }
    let mut table = Table::new(["HOST", "RUNNING", "QUEUED", "NEXT START", "COOL-DOWN"]);
    for host in hosts {
        let next = match host.next_start_in_ms.max(host.cooldown_ms) {
            Some(ms) => format!("in {}", short_duration(ms)),
            None => "now".into(),
        };
        let cooling = match (host.cooldown_ms, &host.cooldown_reason) {
            (Some(ms), Some(why)) => format!("{} left: {why}", short_duration(ms)),
            (Some(ms), None) => format!("{} left", short_duration(ms)),
            (None, _) => "-".into(),
        };
        table.add_row([
            printable::line(&host.key).into_owned(),
            host.running.to_string(),
            host.queued.to_string(),
            next,
            cooling,
        ]);
    }
    table.to_string()
}
