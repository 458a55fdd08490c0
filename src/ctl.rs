//! abxctl's commands: each turns a parsed command line into requests or store reads and output.
//!
//! Invariant: abxctl never writes the database; what it changes, it changes by asking the daemon.

use crate::cli::AbxctlCommand;
use crate::config::Config;
use crate::control::client::{Client, ClientError};
use crate::control::protocol::ErrorCode;
use crate::control::protocol::{Request, Response};
use crate::render::{self, PsEntry};
use crate::store::StoreError;
use crate::store::{now_ms, Kind, ProcessFilter, Store};

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
        AbxctlCommand::Ps { all, kind, json } => ps(config, all, kind, json),
        AbxctlCommand::Spawn { cwd, timeout, argv } => spawn(config, argv, cwd, timeout),
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
            Ok(0)
        }
        Ok(other) => Err(unexpected(other)),
    }
}

fn ps(config: &Config, all: bool, kind: Option<Kind>, json: bool) -> Result<i32> {
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
        print!("{}", render::ps_tree(&entries, now));
    }
    Ok(0)
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
