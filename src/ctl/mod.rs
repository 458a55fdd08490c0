//! abxctl's verbs, one file each, mirroring the daemon's request handlers: each turns a parsed
//! command line into requests or store reads, and output.
//!
//! Invariant: abxctl changes running work only by asking the daemon; it writes the database
//! itself only while the daemon is down (nothing runs then), for what an operator must be able
//! to do at any time: queue a crawl (`add`), cancel one (`cancel`), run results again (`retry`),
//! pause and resume one, prune old process rows. Every outcome leaves through
//! [`crate::exit`].

mod actions;
mod add;
mod export;
mod follow;
mod kill;
mod logs;
mod plugins;
mod ps;
mod schedule;
mod show;
mod spawn;
mod status;

pub use add::validate_url;

use crate::cli::AbxctlCommand;
use crate::config::Config;
use crate::control::client::{Client, ClientError};
use crate::control::protocol::{ErrorCode, Request, Response};
use crate::exit;
use crate::store::{RetryScope, Store, StoreError};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("abxd refused ({code}): {message}")]
    Refused { code: ErrorCode, message: String },
    #[error("unexpected answer from abxd: {0}")]
    Unexpected(String),
    #[error("{0}")]
    BadInput(String),
}

type Result<T> = std::result::Result<T, CtlError>;

impl CtlError {
    /// What abxctl exits with for this error (see [`crate::exit`]).
    pub fn exit_code(&self) -> i32 {
        match self {
            CtlError::Client(ClientError::NotRunning { .. }) => exit::NOT_RUNNING,
            CtlError::BadInput(_) => exit::USAGE,
            CtlError::Refused {
                code: ErrorCode::NotFound | ErrorCode::NotAllowed,
                ..
            } => exit::USAGE,
            CtlError::Client(_)
            | CtlError::Store(_)
            | CtlError::Refused { .. }
            | CtlError::Unexpected(_) => exit::FAILURE,
        }
    }
}

/// How often a following command (`add --wait`, `logs -f`) looks again.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(200);

pub fn run(config: &Config, command: AbxctlCommand) -> Result<i32> {
    match command {
        AbxctlCommand::Status { json } => status::run(config, json),
        AbxctlCommand::Ps {
            all,
            kind,
            json,
            wide,
            crawl,
            machine,
            since,
            watch,
        } => {
            let options = ps::Ps {
                all,
                kind,
                crawl,
                machine,
                since,
                json,
                wide,
                watch,
            };
            ps::run(config, options)
        }
        AbxctlCommand::Spawn { cwd, timeout, argv } => spawn::run(config, argv, cwd, timeout),
        AbxctlCommand::Add {
            urls,
            from,
            crawl,
            wait,
            bg: _,
            index_only,
            json,
        } => {
            let how = add::How {
                wait,
                index_only,
                out: Out { json },
            };
            match add::source(&urls, from.as_deref())? {
                Some(import) => add::import(config, &import, &crawl, how),
                None => add::run(config, &urls, &crawl, how),
            }
        }
        AbxctlCommand::Export {
            archivebox,
            user,
            crawls,
            wait,
            json,
        } => export::run(
            config,
            &archivebox,
            user.as_deref(),
            &crawls,
            wait,
            Out { json },
        ),
        AbxctlCommand::Follow { id, json } => follow::run(config, id, Out { json }),
        AbxctlCommand::Crawls {
            status,
            limit,
            json,
        } => show::crawls(config, status, limit, Out { json }),
        AbxctlCommand::Find { url, json } => show::find(config, &url, Out { json }),
        AbxctlCommand::Hosts { json } => show::hosts(config, Out { json }),
        AbxctlCommand::Plugins {
            env: Some(plugin),
            json,
        } => plugins::env_of(config, &plugin, Out { json }),
        AbxctlCommand::Plugins { env: None, json } => plugins::run(config, json),
        AbxctlCommand::Binaries { json } => plugins::binaries(config, json),
        AbxctlCommand::Show {
            id,
            page,
            limit,
            status,
            after,
            json,
        } => {
            let shown = match after {
                Some(after) => crate::render::ShowPage {
                    state: status,
                    start: crate::domain::PageStart::After(after),
                    limit,
                },
                None => crate::render::ShowPage::numbered(page.unwrap_or(1), limit, status),
            };
            show::run(config, id, &shown, Out { json })
        }
        AbxctlCommand::Logs {
            id,
            result,
            lines,
            stdout,
            stderr,
            follow,
        } => {
            let which = match (id, result) {
                (Some(row), _) => logs::Which::Row(row),
                (None, Some(result)) => logs::Which::Result(result),
                (None, None) => unreachable!("clap requires one"),
            };
            let streams = logs::Streams {
                stdout: !stderr,
                stderr: !stdout,
            };
            logs::run(config, which, streams, lines, follow)
        }
        AbxctlCommand::Kill {
            id,
            pid,
            signal,
            grace,
            no_wait,
            json,
        } => kill::run(config, id, pid, signal, grace, no_wait, Out { json }),
        AbxctlCommand::Cancel { crawl_id, json } => kill::cancel(config, crawl_id, Out { json }),
        AbxctlCommand::Prune {
            older_than,
            dry_run,
            json,
        } => actions::prune(config, older_than, dry_run, Out { json }),
        AbxctlCommand::WebUrl { token } => web_url(config, token),
        AbxctlCommand::Schedule(command) => schedule::run(config, command),
        AbxctlCommand::Pause { crawl_id, json } => {
            actions::pause(config, crawl_id, true, Out { json })
        }
        AbxctlCommand::Resume { crawl_id, json } => {
            actions::pause(config, crawl_id, false, Out { json })
        }
        AbxctlCommand::Retry {
            crawl_id,
            failed: _,
            all,
            hook,
            json,
        } => {
            let which = if all {
                RetryScope::All
            } else {
                RetryScope::Failed
            };
            actions::retry(config, crawl_id, which, hook, Out { json })
        }
    }
}

/// `abxctl web-url`: the web view's link (or its token alone), from the config and the token
/// file the daemon wrote.
fn web_url(config: &Config, token_only: bool) -> Result<i32> {
    use crate::config::Listen;
    let listen = config.web.as_ref().ok_or_else(|| {
        CtlError::BadInput(format!(
            "the web view is off: set [web] listen in {} (e.g. listen = \"127.0.0.1:8631\") and \
             restart abxd",
            config.source.display()
        ))
    })?;
    let addr = match listen {
        Listen::Tcp(addr) => addr,
        Listen::Unix(path) => {
            if token_only {
                return Err(CtlError::BadInput(format!(
                    "the web view listens on the Unix socket {}: it has no token",
                    path.display()
                )));
            }
            println!("unix:{}", path.display());
            return Ok(exit::OK);
        }
    };
    let path = crate::web::token::path(&config.data_dir);
    let token = crate::web::token::read(&path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => CtlError::BadInput(format!(
            "{} is not there yet: abxd writes it when it starts with [web] listen set",
            path.display()
        )),
        _ => CtlError::BadInput(format!("cannot read {}: {err}", path.display())),
    })?;
    if token_only {
        println!("{token}");
    } else {
        println!("http://{addr}/?token={token}");
    }
    Ok(exit::OK)
}

/// Where a command's answer goes: lines for a person, or one JSON document (`render::json`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Out {
    pub json: bool,
}

impl Out {
    /// Prints what `human` prints for a person, or the document of `fields` for a machine.
    pub fn answer(self, human: impl FnOnce(), fields: impl FnOnce() -> serde_json::Value) {
        if self.json {
            println!("{}", crate::render::json::document(fields()));
        } else {
            human();
        }
    }
}

fn unexpected(response: Response) -> CtlError {
    let what = match response {
        Response::Error { code, message } => format!("error {code}: {message}"),
        other => serde_json::to_string(&other).unwrap_or_else(|_| "an unreadable answer".into()),
    };
    CtlError::Unexpected(what)
}

fn client(config: &Config) -> Client {
    Client::new(&config.control.socket, config.control.max_frame_bytes)
}

/// Asks the daemon for an action on the work and takes its answer through `answer`; with the
/// daemon down, does the same on the database through `locally` — the verb the daemon's handler
/// calls (`verbs`), so both judge and write alike. Returns the result and whether the daemon ran.
fn ask_or_do_locally<T>(
    config: &Config,
    request: &Request,
    answer: impl FnOnce(Response) -> std::result::Result<T, Response>,
    locally: impl FnOnce(&Store) -> Result<T>,
) -> Result<(T, bool)> {
    match ask(config, request) {
        Ok(response) => Ok((answer(response).map_err(unexpected)?, true)),
        Err(CtlError::Client(ClientError::NotRunning { .. })) => {
            let store = Store::open_existing_at(&config.database)?;
            store.set_synchronous_commit(config.synchronous_commit);
            Ok((locally(&store)?, false))
        }
        Err(err) => Err(err),
    }
}

/// A verb's refusal, met by `abxctl` itself with abxd down: bad input, said as it is (abxd did
/// not refuse it).
fn refused_here(refusal: crate::verbs::Refusal) -> CtlError {
    CtlError::BadInput(refusal.message)
}

impl From<crate::verbs::VerbError> for CtlError {
    fn from(err: crate::verbs::VerbError) -> CtlError {
        match err {
            crate::verbs::VerbError::Refused(refusal) => refused_here(refusal),
            crate::verbs::VerbError::Store(err) => CtlError::Store(err),
        }
    }
}

/// Asks the daemon; an error answer becomes [`CtlError::Refused`].
fn ask(config: &Config, request: &Request) -> Result<Response> {
    match client(config).request(request)? {
        Response::Error { code, message } => Err(CtlError::Refused { code, message }),
        response => Ok(response),
    }
}
