//! `abxctl status`: is the daemon up (exit 3 when nothing listens), its pid, uptime, live rows.

use super::{client, unexpected, Result};
use crate::config::Config;
use crate::control::client::ClientError;
use crate::control::protocol::{Request, Response};
use crate::render;

pub(super) fn run(config: &Config, json: bool) -> Result<i32> {
    match client(config).request(&Request::Status) {
        Err(err @ ClientError::NotRunning { .. }) => {
            match json {
                true => println!(
                    "{}",
                    render::json::document(
                        serde_json::json!({"running": false, "message": err.to_string()})
                    )
                ),
                false => println!("{err}"),
            }
            Ok(crate::exit::NOT_RUNNING)
        }
        Err(err) => Err(err.into()),
        Ok(Response::Status(info)) if json => {
            println!("{}", render::json::status(&info));
            Ok(0)
        }
        Ok(Response::Status(info)) => {
            println!(
                "abxd {} is running: pid {}, up {}",
                info.version,
                info.pid,
                render::short_duration(info.uptime_ms)
            );
            println!("database: {}", info.database);
            let mine = config.database.to_string();
            if info.database != mine {
                println!(
                    "NOTE:     {} names database {mine}: this abxd runs with another config \
                     (it started with another file, or the file changed since; SIGHUP reloads \
                     what can change while it runs)",
                    config.source.display()
                );
            }
            println!("socket:   {}", info.socket);
            println!("contain:  {}", info.containment);
            if !info.hooks.is_empty() {
                println!("hooks:    {}", info.hooks);
            }
            if !info.egress.is_empty() {
                println!("egress:   {}", info.egress);
            }
            if !info.admission.is_empty() {
                println!("admit:    {}", info.admission);
            }
            if let Some(lost) = &info.database_lost {
                println!("DATABASE LOST: {lost}");
            }
            if let Some(since) = info.database_busy_since_ms {
                let (at, ago) = (
                    crate::store::printable_time(since),
                    render::short_duration(crate::store::now_ms() - since),
                );
                // (A server's writes fail when it is out of reach; a file's, when it is locked.)
                if info.database.starts_with("postgres") {
                    println!(
                        "DATABASE UNAVAILABLE: writes to PostgreSQL have failed since {at} ({ago} \
                         ago); abxd keeps its processes and writes their records once it answers"
                    );
                } else {
                    println!(
                        "DATABASE BUSY: another process has held its write lock since {at} ({ago} \
                         ago); records are written once it is released"
                    );
                }
            }
            let live: Vec<String> = info.live.iter().map(|(k, n)| format!("{k} {n}")).collect();
            if live.is_empty() {
                // (The orchestrator is always live: none means the database did not answer.)
                println!("live:     unknown while the database does not answer");
            } else {
                println!("live:     {}", live.join(", "));
            }
            if let Some(work) = &info.work {
                println!(
                    "work:     crawls {} queued, {} running, {} paused; snapshots {} queued, {} \
                     running",
                    work.crawls_queued,
                    work.crawls_running,
                    work.crawls_paused,
                    work.snapshots_queued,
                    work.snapshots_running
                );
                println!(
                    "last day: {} crawls and {} snapshots sealed, {} results failed",
                    work.crawls_sealed, work.snapshots_sealed, work.results_failed
                );
            }
            if !info.machines.is_empty() {
                let now = info.started_at_ms + info.uptime_ms;
                let machines: Vec<String> =
                    info.machines.iter().map(|m| describe(m, now)).collect();
                println!("machines: {}", machines.join(", "));
            }
            if info.recovering {
                println!(
                    "recovering: tearing down what a previous run left; no work is claimed yet"
                );
            }
            Ok(0)
        }
        Ok(other) => Err(unexpected(other)),
    }
}

/// One machine of a fleet as `status` lists it: its id, its hostname if that says more, when it
/// was last heard (`now`: the daemon's clock when it answered).
fn describe(machine: &crate::control::protocol::MachineInfo, now: i64) -> String {
    let name = if machine.hostname == machine.id {
        machine.id.clone()
    } else {
        format!("{} ({})", machine.id, machine.hostname)
    };
    let heard = crate::store::printable_time(machine.heartbeat_at_ms);
    match (machine.this_machine, machine.silent) {
        (true, _) => format!("{name} this one"),
        (false, true) => format!("{name} SILENT since {heard}: presumed dead, its work taken over"),
        (false, false) => format!(
            "{name} heard {} ago",
            render::short_duration((now - machine.heartbeat_at_ms).max(0))
        ),
    }
}
