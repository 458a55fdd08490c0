//! `install`: provision the binaries of the plugins (all enabled ones when none are named),
//! answering when every installer run has ended.

use super::{refused, State};
use crate::control::protocol::{ErrorCode, Response};
use crate::plugins::{install, Catalog};
use crate::supervisor::Supervisor;
use mio::Token;

pub(super) fn handle(
    state: &mut State,
    supervisor: &mut Supervisor,
    token: Token,
    plugins: Option<Vec<String>>,
) -> Option<Response> {
    if state.stopping {
        return Some(refused(ErrorCode::NotAllowed, "abxd is stopping"));
    }
    if state.installer.busy() {
        return Some(refused(
            ErrorCode::NotAllowed,
            "an install is under way already",
        ));
    }
    let catalog = Catalog::load(&state.config.plugins_dirs);
    let selected = match catalog.select(&state.config, plugins.as_deref()) {
        Ok(selected) => selected,
        Err(unknown) => return Some(refused(ErrorCode::NotFound, unknown.to_string())),
    };
    let environ = crate::plugins::env::process_environ;
    let (steps, problems) = install::plan(&catalog, &selected, &state.config, &environ);
    state.installer.begin(steps, problems);
    match state.install_next(supervisor) {
        Some(report) => Some(Response::Installed(report)),
        None => {
            state.installer.waiting.push(token);
            None
        }
    }
}
