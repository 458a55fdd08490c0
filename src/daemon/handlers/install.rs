//! `install`: provision the binaries of the plugins (all enabled ones when none are named),
//! answering when every installer run has ended.

use super::{refused, State};
use crate::control::protocol::{ErrorCode, Response};
use crate::supervisor::{DaemonChild, Supervisor};
use mio::Token;

pub(super) fn handle(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
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
    match state.begin_install(supervisor, plugins.as_deref()) {
        Err(unknown) => Some(refused(ErrorCode::NotFound, unknown.to_string())),
        Ok(Some(report)) => Some(Response::Installed(report)),
        Ok(None) => {
            state.installer.waiting.push(token);
            None
        }
    }
}
