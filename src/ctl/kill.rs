//! `abxctl kill` and `abxctl cancel`: a teardown through the daemon, and what it did to each
//! process.

use super::{ask, unexpected, Result};
use crate::config::Config;
use crate::control::protocol::{Fate, Request, Response, TeardownReport};
use crate::signal::Signal;
use std::time::Duration;

pub(super) fn run(
    config: &Config,
    row: Option<i64>,
    pid: Option<i32>,
    signal: Signal,
    grace: Option<Duration>,
    no_wait: bool,
) -> Result<i32> {
    let request = Request::Kill {
        row,
        pid,
        signal: Some(signal),
        grace_ms: grace.map(|g| g.as_millis() as u64),
        wait: !no_wait,
    };
    match ask(config, &request)? {
        Response::TeardownStarted { row } => {
            println!("teardown of row {row} started");
            Ok(0)
        }
        Response::TornDown(report) => Ok(print_report(&report)),
        other => Err(unexpected(other)),
    }
}

pub(super) fn cancel(config: &Config, crawl_id: i64) -> Result<i32> {
    match ask(config, &Request::Cancel { crawl_id })? {
        Response::TornDown(report) => {
            println!("crawl {crawl_id} cancelled");
            Ok(print_report(&report))
        }
        other => Err(unexpected(other)),
    }
}

/// Prints what a teardown did to each process; the exit code says whether it was complete.
fn print_report(report: &TeardownReport) -> i32 {
    for process in &report.processes {
        let row = process
            .row_id
            .map(|r| format!("row {r}"))
            .unwrap_or_else(|| "no row".into());
        let fate = match &process.fate {
            Fate::AlreadyGone => "already gone".to_string(),
            Fate::ExitedOnSignal { after_ms } => format!("exited on signal after {after_ms} ms"),
            Fate::KilledAtDeadline { after_ms } => {
                format!("killed at its deadline ({after_ms} ms after the first signal)")
            }
            Fate::Survived { state } => format!("SURVIVED SIGKILL (state {state})"),
        };
        let command: String = process.command.chars().take(60).collect();
        let command = crate::printable::line(&command);
        println!("{row:<8} pid {:<7} {fate:<55} {command}", process.pid);
    }
    if report.complete {
        println!("{} processes, none left", report.processes.len());
        0
    } else {
        println!("incomplete: some processes survived SIGKILL");
        1
    }
}
