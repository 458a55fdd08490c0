//! Schedules for people (`abxctl schedule list`, `add`).
//!
//! Invariant: rendering reads, never writes; URLs and notes are printed escaped (`printable`).

use super::table::Table;
use crate::printable;
use crate::store::Schedule;

/// A moment as the local clock shows it: `2026-11-27 03:00`.
pub fn local_moment(at_ms: i64) -> String {
    if at_ms == i64::MAX {
        return "never".into();
    }
    jiff::Timestamp::from_millisecond(at_ms)
        .map(|at| {
            at.to_zoned(super::clock::local_zone())
                .strftime("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|_| "-".into())
}

/// How often it fires, in words: `every 1day`, `cron 0 3 * * * Europe/Paris` (the zone it is
/// read in, when known).
fn cadence(schedule: &Schedule) -> String {
    match (&schedule.every_ms, &schedule.cron) {
        (Some(ms), _) => format!(
            "every {}",
            humantime::format_duration(std::time::Duration::from_millis(*ms as u64))
        ),
        (None, Some(cron)) => match &schedule.zone {
            Some(zone) => format!("cron {cron} {zone}"),
            None => format!("cron {cron}"),
        },
        (None, None) => "-".into(),
    }
}

/// `abxctl schedule list`.
pub fn schedules_table(schedules: &[Schedule]) -> String {
    if schedules.is_empty() {
        return "no schedules\n".into();
    }
    let mut table = Table::new([
        "ID", "WHEN", "NEXT", "FIRED", "SKIPPED", "LAST", "DEPTH", "URLS",
    ]);
    for schedule in schedules {
        let next = match schedule.paused_at {
            Some(_) => "paused".to_string(),
            None => local_moment(schedule.next_at),
        };
        let last = match (&schedule.last_crawl, &schedule.last_note) {
            (Some((id, status)), _) => format!("crawl {id} ({status})"),
            (None, Some(note)) => printable::line(note).into_owned(),
            (None, None) => "-".into(),
        };
        table.add_row([
            schedule.id.to_string(),
            cadence(schedule),
            next,
            schedule.fired.to_string(),
            schedule.skipped.to_string(),
            last,
            schedule.max_depth.to_string(),
            printable::line(&schedule.urls.join(" ")).into_owned(),
        ]);
    }
    table.to_string()
}
