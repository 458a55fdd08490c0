//! abxctl's commands: each turns a parsed command line into requests or store reads and output.
//!
//! Invariant: abxctl changes running work only by asking the daemon; the one thing it writes to
//! the database itself is a new queued crawl (`add`), so work can be queued while the daemon is
//! down.

use crate::cli::{AbxctlCommand, CrawlArgs};
use crate::config::Config;
use crate::control::client::{Client, ClientError};
use crate::control::protocol::ErrorCode;
use crate::control::protocol::{Request, Response};
use crate::render::{self, PsEntry};
use crate::store::StoreError;
use crate::store::{now_ms, Kind, ProcessFilter, Store};
use std::io::{Read, Seek, SeekFrom, Write};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("abxd refused ({code:?}): {message}")]
    Refused { code: ErrorCode, message: String },
    #[error("unexpected answer from abxd: {0}")]
    Unexpected(String),
    #[error("{0}")]
    BadInput(String),
}

type Result<T> = std::result::Result<T, CtlError>;

fn unexpected(response: Response) -> CtlError {
    CtlError::Unexpected(format!("{response:?}"))
}

/// What `abxctl status` exits with when no daemon listens (as `systemctl status` does).
pub const EXIT_NOT_RUNNING: i32 = 3;

pub fn run(config: &Config, command: AbxctlCommand) -> Result<i32> {
    match command {
        AbxctlCommand::Status { json } => status(config, json),
        AbxctlCommand::Ps {
            all,
            kind,
            json,
            wide,
        } => ps(config, all, kind, json, wide),
        AbxctlCommand::Spawn { cwd, timeout, argv } => spawn(config, argv, cwd, timeout),
        AbxctlCommand::Add { urls, crawl, wait } => add(config, &urls, &crawl, wait),
        AbxctlCommand::Crawls => {
            print!(
                "{}",
                render::crawls_table(&Store::open_read_only(&config.database)?)?
            );
            Ok(0)
        }
        AbxctlCommand::Show { id } => show(config, id),
        AbxctlCommand::Logs { id, follow } => logs(config, id, follow),
        AbxctlCommand::Kill {
            id,
            pid,
            signal,
            grace,
            no_wait,
        } => {
            let request = Request::Kill {
                row: id,
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
        AbxctlCommand::Cancel { crawl_id } => match ask(config, &Request::Cancel { crawl_id })? {
            Response::TornDown(report) => {
                println!("crawl {crawl_id} cancelled");
                Ok(print_report(&report))
            }
            other => Err(unexpected(other)),
        },
    }
}

/// Prints what a teardown did to each process; the exit code says whether it was complete.
fn print_report(report: &crate::teardown::Report) -> i32 {
    use crate::teardown::Fate;
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

/// How often a following command (`add --wait`, `logs -f`) looks again.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(200);

fn add(config: &Config, urls: &[String], crawl: &CrawlArgs, wait: bool) -> Result<i32> {
    for url in urls {
        validate_url(url)?;
    }
    // Through the daemon when it runs (it owns the database: members of control.group may add
    // without write access to it); written here when it does not, to run when it starts.
    let request = Request::Add {
        urls: urls.to_vec(),
        depth: crawl.depth,
        plugins: crawl.plugins.clone(),
    };
    let id = match client(config).request(&request) {
        Ok(Response::Added { crawl_id }) => {
            println!("crawl {crawl_id} queued");
            crawl_id
        }
        Ok(Response::Error { code, message }) => {
            return Err(CtlError::Refused { code, message });
        }
        Ok(other) => return Err(unexpected(other)),
        Err(ClientError::NotRunning { .. }) => {
            let crawl_id = add_while_down(config, urls, crawl)?;
            println!("crawl {crawl_id} queued");
            println!("abxd is not running: the crawl runs when it starts");
            crawl_id
        }
        Err(err) => return Err(err.into()),
    };
    if !wait {
        return Ok(0);
    }
    follow_crawl(config, id)
}

/// Enqueues a crawl by writing the database itself (the daemon is down).
fn add_while_down(config: &Config, urls: &[String], crawl: &CrawlArgs) -> Result<i64> {
    if let Some(dir) = config.database.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|err| CtlError::BadInput(format!("cannot create {}: {err}", dir.display())))?;
    }
    let mut store = Store::open(&config.database)?;
    Ok(store.add_crawl(urls, crawl.depth, crawl.plugins.as_deref())?)
}

/// Prints a crawl's progress until it is sealed, then its report.
fn follow_crawl(config: &Config, id: i64) -> Result<i32> {
    let mut progress = render::Progress::default();
    loop {
        let store = Store::open_read_only(&config.database)?;
        for line in progress.update(&store, id)? {
            println!("{line}");
        }
        if store.crawl(id)?.is_some_and(|c| c.status == "sealed") {
            println!();
            print!(
                "{}",
                render::crawl_report(&store, &config.data_dir, id)?.unwrap_or_default()
            );
            return Ok(0);
        }
        drop(store);
        std::thread::sleep(FOLLOW_INTERVAL);
    }
}

/// Refuses what cannot be a URL to crawl, before anything is written.
pub fn validate_url(url: &str) -> Result<()> {
    match Store::invalid_url(url) {
        None => Ok(()),
        Some(why) => Err(CtlError::BadInput(why)),
    }
}

fn show(config: &Config, id: i64) -> Result<i32> {
    let store = Store::open_read_only(&config.database)?;
    match render::crawl_report(&store, &config.data_dir, id)? {
        Some(report) => {
            print!("{report}");
            Ok(0)
        }
        None => Err(CtlError::BadInput(format!(
            "no crawl {id} (see abxctl crawls)"
        ))),
    }
}

fn logs(config: &Config, id: i64, follow: bool) -> Result<i32> {
    let store = Store::open_read_only(&config.database)?;
    let row = store
        .process(id)?
        .ok_or_else(|| CtlError::BadInput(format!("no process row {id} (see abxctl ps --all)")))?;
    let files: Vec<(&str, String)> = [("stdout", &row.stdout_path), ("stderr", &row.stderr_path)]
        .into_iter()
        .filter_map(|(name, path)| path.clone().map(|p| (name, p)))
        .collect();
    if files.is_empty() {
        return Err(CtlError::BadInput(format!(
            "process row {id} has no log files"
        )));
    }
    let mut offsets = vec![0u64; files.len()];
    let mut out = std::io::stdout();
    loop {
        for ((name, path), offset) in files.iter().zip(offsets.iter_mut()) {
            let Ok(mut file) = std::fs::File::open(path) else {
                continue;
            };
            let _ = file.seek(SeekFrom::Start(*offset));
            let mut chunk = Vec::new();
            let _ = file.read_to_end(&mut chunk);
            if !chunk.is_empty() {
                if !follow {
                    let _ = writeln!(out, "==> {name}: {path} <==");
                }
                let _ = out.write_all(&chunk);
                *offset += chunk.len() as u64;
            }
        }
        let _ = out.flush();
        let ended = !store.process(id)?.is_some_and(|r| r.status.is_live());
        if !follow || ended {
            return Ok(0);
        }
        std::thread::sleep(FOLLOW_INTERVAL);
    }
}

fn client(config: &Config) -> Client {
    Client::new(&config.control.socket, config.control.max_frame_bytes)
}

fn ask(config: &Config, request: &Request) -> Result<Response> {
    match client(config).request(request)? {
        Response::Error { code, message } => Err(CtlError::Refused { code, message }),
        response => Ok(response),
    }
}

fn status(config: &Config, json: bool) -> Result<i32> {
    match client(config).request(&Request::Status) {
        Err(err @ ClientError::NotRunning { .. }) => {
            println!("{err}");
            Ok(EXIT_NOT_RUNNING)
        }
        Err(err) => Err(err.into()),
        Ok(Response::Status(info)) if json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&info).expect("status serializes")
            );
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
            println!("socket:   {}", info.socket);
            let live: Vec<String> = info.live.iter().map(|(k, n)| format!("{k} {n}")).collect();
            println!("live:     {}", live.join(", "));
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

fn ps(config: &Config, all: bool, kind: Option<Kind>, json: bool, wide: bool) -> Result<i32> {
    let store = Store::open_read_only(&config.database)?;
    let filter = ProcessFilter {
        live_only: !all,
        kind,
    };
    let now = now_ms();
    let entries: Vec<PsEntry> = store
        .processes(&filter)?
        .into_iter()
        .map(|row| PsEntry::new(row, now))
        .collect();
    if json {
        println!("{}", render::ps_json(&entries, now));
    } else {
        let tree = render::ps_tree(&entries, now);
        match terminal_width().filter(|_| !wide) {
            Some(width) => print!("{}", render::cut_to_width(&tree, width)),
            None => print!("{tree}"),
        }
    }
    Ok(0)
}

/// The width of the terminal standard output is, if it is one.
fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    let size = rustix::termios::tcgetwinsize(&stdout).ok()?;
    (size.ws_col > 0).then_some(size.ws_col as usize)
}

fn spawn(
    config: &Config,
    argv: Vec<String>,
    cwd: Option<String>,
    timeout: Option<std::time::Duration>,
) -> Result<i32> {
    let request = Request::Spawn {
        argv,
        cwd,
        timeout_ms: timeout.map(|t| t.as_millis() as u64),
    };
    match ask(config, &request)? {
        Response::Spawned { id, pid } => {
            println!("{id} {pid}");
            Ok(0)
        }
        other => Err(unexpected(other)),
    }
}
