//! `abxctl kill` and `abxctl cancel`: a teardown through the daemon, and what it did to each
//! process.

use super::{ask, ask_or_do_locally, unexpected, Out, Result};
use crate::config::Config;
use crate::control::protocol::{Fate, Request, Response, TeardownReport};
use crate::exit;
use crate::signal::Signal;
use serde_json::json;
use std::time::Duration;

pub(super) fn run(
    config: &Config,
    row: Option<i64>,
    pid: Option<i32>,
    signal: Signal,
    grace: Option<Duration>,
    no_wait: bool,
    out: Out,
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
            out.answer(
                || println!("teardown of row {row} started"),
                || json!({"teardown_started": row}),
            );
            Ok(exit::OK)
        }
        Response::TornDown(report) => {
            out.answer(|| print_report(&report), || json!({"teardown": report}));
            Ok(teardown_status(&report))
        }
        other => Err(unexpected(other)),
    }
}

/// Cancels a crawl through the daemon; with the daemon down, in the database (its leftover
/// processes, if a crashed daemon left any, go at the daemon's next start: recovery tears down
/// whatever a sealed crawl still owns).
pub(super) fn cancel(config: &Config, crawl_id: i64, out: Out) -> Result<i32> {
    let (report, running) = ask_or_do_locally(
        config,
        &Request::Cancel { crawl_id },
        |response| match response {
            Response::TornDown(report) => Ok(Some(report)),
            other => Err(other),
        },
        |store| {
            crate::verbs::work::cancel(store, crawl_id)?;
            Ok(None)
        },
    )?;
    out.answer(
        || match &report {
            Some(report) => {
                println!("crawl {crawl_id} cancelled");
                print_report(report);
            }
            None => println!(
                "crawl {crawl_id} cancelled (abxd is not running: written to the database)"
            ),
        },
        || {
            json!({"crawl_id": crawl_id, "cancelled": true, "daemon_running": running,
                   "teardown": report})
        },
    );
    Ok(report.as_ref().map_or(exit::OK, teardown_status))
}

/// What a finished teardown exits with: 1 if a process survived SIGKILL.
fn teardown_status(report: &TeardownReport) -> i32 {
    if report.complete {
        exit::OK
    } else {
        exit::FAILURE
    }
}

/// Prints what a teardown did to each process.
fn print_report(report: &TeardownReport) {
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
    } else {
        println!("incomplete: some processes survived SIGKILL");
    }
}
