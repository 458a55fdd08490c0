//! `spawn` (debug only, `control.allow_debug_spawn`): run a command as a child of the daemon.

use super::{failed, refused, State};
use crate::control::protocol::{ErrorCode, Response};
use crate::domain::Kind;
use crate::logs::Logs;
use crate::spawn::SpawnRequest;
use crate::store::NewProcess;
use crate::supervisor::{ChildPolicy, DaemonChild, Supervisor};

pub(super) fn handle(
    state: &mut State,
    supervisor: &mut Supervisor<DaemonChild>,
    argv: Vec<String>,
    cwd: Option<String>,
    timeout_ms: Option<u64>,
) -> Response {
    if !state.config.control.allow_debug_spawn {
        let why = format!(
            "spawn is a debugging aid and is disabled; set control.allow_debug_spawn = true in \
             {} to enable it",
            state.config.source.display()
        );
        return refused(ErrorCode::NotAllowed, why);
    }
    if state.stopping {
        return failed("abxd is stopping and starts nothing new");
    }
    let request = SpawnRequest {
        process: NewProcess {
            parent_id: Some(state.orchestrator_id),
            kind: Kind::Hook,
            crawl_id: None,
            snapshot_id: None,
            result_id: None,
            argv,
            cwd: cwd.unwrap_or_else(|| state.config.data_dir.display().to_string()),
            timeout_ms: timeout_ms.map(|ms| ms.min(i64::MAX as u64) as i64),
        },
        env: Vec::new(),
        inherit_env: true,
        logs: Logs::InDir(state.config.data_dir.join("logs")),
        limits: Default::default(),
        run_as: None,
        umask: None,
        groups: Vec::new(),
        stdin: None,
    };
    match supervisor.spawn(
        &state.store,
        &request,
        (DaemonChild::Operator, ChildPolicy::FOREGROUND_HOOK),
        &mut crate::spawn::nothing_more,
    ) {
        Ok(spawned) => Response::Spawned {
            id: spawned.row_id,
            pid: spawned.identity.pid,
        },
        Err(err) => failed(err),
    }
}
