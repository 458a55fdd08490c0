//! `abxctl schedule`: add, list, remove, pause and resume schedules — through the daemon when it
//! runs (it recomputes when it must next wake), in the database when it does not.

use super::{add, ask_or_do_locally, refused_here, Out, Result};
use crate::cli::{CrawlArgs, Every, ScheduleCommand};
use crate::config::Config;
use crate::control::protocol::{Request, Response, ScheduleAction};
use crate::exit;
use crate::render;
use crate::store::Store;
use crate::verbs;
use serde_json::json;

pub(super) fn run(config: &Config, command: ScheduleCommand) -> Result<i32> {
    match command {
        ScheduleCommand::Add {
            urls,
            from,
            every,
            cron,
            crawl,
            json,
        } => {
            let (urls, import) = match from {
                Some(file) => (vec![file_url(&file)?], true),
                None => (urls, false),
            };
            add_schedule(config, &urls, import, every, cron, &crawl, Out { json })
        }
        ScheduleCommand::List { json } => list(config, Out { json }),
        ScheduleCommand::Remove { id, json } => {
            set(config, id, ScheduleAction::Remove, Out { json })
        }
        ScheduleCommand::Pause { id, json } => set(config, id, ScheduleAction::Pause, Out { json }),
        ScheduleCommand::Resume { id, json } => {
            set(config, id, ScheduleAction::Resume, Out { json })
        }
    }
}

/// The `file://` URL of `file`, which must exist (it is read anew at each occurrence, by the
/// hooks' user).
fn file_url(file: &std::path::Path) -> Result<String> {
    let absolute = file.canonicalize().map_err(|err| {
        super::CtlError::BadInput(format!("cannot import {}: {err}", file.display()))
    })?;
    if !absolute.is_file() {
        return Err(super::CtlError::BadInput(format!(
            "cannot import {}: not a file",
            file.display()
        )));
    }
    Ok(format!("file://{}", absolute.display()))
}

fn add_schedule(
    config: &Config,
    urls: &[String],
    import: bool,
    every: Option<Every>,
    cron: Option<String>,
    crawl: &CrawlArgs,
    out: Out,
) -> Result<i32> {
    for url in urls {
        add::validate_url(url)?;
    }
    let (every_ms, cron) = match every {
        Some(Every::Period(period)) => (Some(period.as_millis() as u64), cron),
        Some(Every::Cron(expression)) => (None, Some(expression)),
        None => (None, cron),
    };
    let spec = crawl.spec(urls.to_vec());
    // (Its cron is read in the zone it is added in: the operator's, wherever it fires.)
    let zone = jiff::tz::TimeZone::system().iana_name().map(str::to_owned);
    let request = Request::ScheduleAdd {
        spec: spec.clone(),
        every_ms,
        cron: cron.clone(),
        import,
        zone: zone.clone(),
    };
    let ((id, next_at), running) = ask_or_do_locally(
        config,
        &request,
        |response| match response {
            Response::ScheduleAdded { id, next_at_ms } => Ok((id, next_at_ms)),
            other => Err(other),
        },
        |store| {
            let when = (every_ms, cron.as_deref());
            let schedule = verbs::schedule::admit(config, spec, when, zone.as_deref(), import)
                .map_err(refused_here)?;
            Ok(verbs::schedule::add(store, &schedule)?)
        },
    )?;
    out.answer(
        || {
            println!(
                "schedule {id} added: first crawl at {}",
                render::local_moment(next_at)
            );
            if !running {
                println!("abxd is not running: it fires when abxd runs");
            }
        },
        || json!({"schedule_id": id, "next_at_ms": next_at, "daemon_running": running}),
    );
    Ok(exit::OK)
}

fn list(config: &Config, out: Out) -> Result<i32> {
    let store = Store::open_read_only_at(&config.database)?;
    let schedules = store.schedules().all()?;
    if out.json {
        println!(
            "{}",
            render::json::document(json!({ "schedules": schedules }))
        );
    } else {
        print!("{}", render::schedules_table(&schedules));
    }
    Ok(exit::OK)
}

fn set(config: &Config, id: i64, action: ScheduleAction, out: Out) -> Result<i32> {
    let request = Request::ScheduleSet { id, action };
    let ((), running) = ask_or_do_locally(
        config,
        &request,
        |response| match response {
            Response::ScheduleSet { .. } => Ok(()),
            other => Err(other),
        },
        |store: &Store| Ok(verbs::schedule::set(store, id, action)?),
    )?;
    let done = match action {
        ScheduleAction::Remove => "removed (its crawls stay)",
        ScheduleAction::Pause => "paused",
        ScheduleAction::Resume => "resumed",
    };
    out.answer(
        || {
            if !running {
                println!("abxd is not running: written to the database");
            }
            println!("schedule {id} {done}");
        },
        || json!({"schedule_id": id, "action": action, "daemon_running": running}),
    );
    Ok(exit::OK)
}
