//! `abxctl spawn` (hidden, a debugging aid): run a command as a child of the daemon.

use super::{ask, unexpected, Result};
use crate::config::Config;
use crate::control::protocol::{Request, Response};
use std::time::Duration;

pub(super) fn run(
    config: &Config,
    argv: Vec<String>,
    cwd: Option<String>,
    timeout: Option<Duration>,
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
