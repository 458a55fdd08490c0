//! `abxd install [--plugins a,b]`: provision the binaries the plugins declare — through the
//! daemon when it runs, else by this process running the daemon just for the install (no crawl
//! is claimed meanwhile). Either way each installer run is a process of the table.

use crate::config::Config;
use crate::control::client::{Client, ClientError};
use crate::control::protocol::{InstallReport, Request, Response};
use crate::daemon::{Daemon, DaemonError};
use crate::render::say;

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{0}")]
    Refused(String),
}

/// Runs the install; returns the exit code (0 when every binary was provisioned).
pub fn run(config: Config, plugins: Option<&[String]>) -> Result<i32, InstallError> {
    let client = Client::new(&config.control.socket, config.control.max_frame_bytes);
    let request = Request::Install {
        plugins: plugins.map(<[String]>::to_vec),
    };
    match client.request(&request) {
        Ok(Response::Installed(report)) => {
            print_report(&report);
            Ok(if report.ok() { 0 } else { 1 })
        }
        Ok(Response::Error { message, .. }) => Err(InstallError::Refused(message)),
        Ok(_) => Err(InstallError::Refused("unexpected answer from abxd".into())),
        Err(ClientError::NotRunning { .. }) => {
            let mut daemon = Daemon::start(config)?;
            daemon
                .install_then_stop(plugins, Box::new(print_report))
                .map_err(InstallError::Refused)?;
            Ok(daemon.run()?)
        }
        Err(err) => Err(err.into()),
    }
}

/// One line per binary, then the problems (printed as `abxd run` prints: a closed standard
/// output never stops the daemon that runs the install).
pub fn print_report(report: &InstallReport) {
    for binary in &report.binaries {
        let state = if binary.ok { "ok" } else { "FAILED" };
        let row = binary
            .row
            .map(|r| format!("row {r}"))
            .unwrap_or_else(|| "no row".into());
        say(format_args!(
            "{state:<7} {:<16} {:<20} {row:<9} {}",
            binary.plugin, binary.binary, binary.detail
        ));
    }
    for problem in &report.problems {
        say(format_args!("FAILED  {problem}"));
    }
    if report.binaries.is_empty() && report.problems.is_empty() {
        say("nothing to install: the selected plugins declare no binaries");
    }
}
