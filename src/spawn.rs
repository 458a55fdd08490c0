//! Spawning: the one way abxd starts a process.
//!
//! Invariants: every child gets its own process group, stdin from `/dev/null`, stdout and stderr
//! appended to its own log files, `ABXD_PROCESS_ID` set to its row id and `ABXD_INSTANCE` to the
//! database's id (together, the marker its descendants inherit), and none of the service
//! manager's variables; its row exists (`starting`) before the process does and carries its
//! identity (`running`) before this function returns — before anyone can reap it, since only the
//! event loop reaps and it is not running while we are here. Spawning never forks a copy of the
//! caller: std's `Command` without `pre_exec` takes the `posix_spawn` path.

use crate::identity::{self, Identity};
use crate::marker::{INSTANCE_ENV, PROCESS_ID_ENV};
use crate::store::{NewProcess, Store, StoreError};
use std::fs::{File, OpenOptions};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Variables a child must not inherit: they speak for the supervisor to its own service manager.
const SUPERVISOR_ONLY_ENV: &[&str] = &[
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    "LISTEN_FDS",
    "LISTEN_PID",
    "LISTEN_FDNAMES",
    crate::config::CONFIG_TEXT_ENV,
];

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot start {program:?}: {cause}")]
    Exec {
        program: String,
        cause: std::io::Error,
    },
    #[error("cannot open log file {path}: {cause}")]
    Log {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("nothing to run: empty command")]
    EmptyArgv,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where a child's stdout and stderr go.
#[derive(Debug, Clone)]
pub enum Logs {
    /// `<dir>/<row id>.stdout.log` and `<dir>/<row id>.stderr.log`.
    InDir(PathBuf),
    /// Exactly these files.
    Files { stdout: PathBuf, stderr: PathBuf },
}

impl Logs {
    fn paths(&self, row_id: i64) -> (PathBuf, PathBuf) {
        match self {
            Logs::InDir(dir) => (
                dir.join(format!("{row_id}.stdout.log")),
                dir.join(format!("{row_id}.stderr.log")),
            ),
            Logs::Files { stdout, stderr } => (stdout.clone(), stderr.clone()),
        }
    }
}

/// What to start, and where it sits in the tree.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    pub process: NewProcess,
    pub env: Vec<(String, String)>,
    pub logs: Logs,
}

/// A started child: its row and its identity.
#[derive(Debug, Clone)]
pub struct Spawned {
    pub row_id: i64,
    pub identity: Identity,
    /// Its stdout and stderr log files.
    pub logs: (PathBuf, PathBuf),
}

fn open_log(path: &Path) -> Result<File, SpawnError> {
    let log_err = |cause| SpawnError::Log {
        path: path.to_path_buf(),
        cause,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(log_err)?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(log_err)
}

/// Starts `request` as a child of the calling process and records it. On failure the row is made
/// final with the reason, so no row is left `starting`.
pub fn spawn(store: &mut Store, request: &SpawnRequest) -> Result<Spawned, SpawnError> {
    let argv = &request.process.argv;
    let program = argv.first().ok_or(SpawnError::EmptyArgv)?;
    let instance = store.marker_namespace()?;
    let row_id = store.insert_process(&request.process)?;
    match start(row_id, &instance, program, request) {
        Ok((child, stdout, stderr)) => {
            let pid = child.id() as i32;
            // Unreaped, so the pid is ours even if the child already exited.
            let identity = identity::of_unreaped_child(pid).unwrap_or_else(|| Identity {
                boot_id: identity::boot_id().to_string(),
                pid,
                start_ticks: 0,
                pidfd_ino: None,
            });
            store.record_spawned(
                row_id,
                &identity,
                pid,
                Some(&stdout.to_string_lossy()),
                Some(&stderr.to_string_lossy()),
            )?;
            // Dropping `child` neither waits nor kills: the event loop's reaper owns it now.
            drop(child);
            Ok(Spawned {
                row_id,
                identity,
                logs: (stdout, stderr),
            })
        }
        Err(err) => {
            crate::liveness::finish_spawn_failed(store, row_id, &err.to_string())?;
            Err(err)
        }
    }
}

fn start(
    row_id: i64,
    instance: &str,
    program: &str,
    request: &SpawnRequest,
) -> Result<(std::process::Child, PathBuf, PathBuf), SpawnError> {
    let (stdout_path, stderr_path) = request.logs.paths(row_id);
    let stdout = open_log(&stdout_path)?;
    let stderr = open_log(&stderr_path)?;
    let mut command = Command::new(program);
    command
        .args(&request.process.argv[1..])
        .current_dir(&request.process.cwd)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    for name in SUPERVISOR_ONLY_ENV {
        command.env_remove(name);
    }
    command.envs(request.env.iter().map(|(k, v)| (k, v)));
    command.env(PROCESS_ID_ENV, row_id.to_string());
    command.env(INSTANCE_ENV, instance);
    let child = command.spawn().map_err(|cause| SpawnError::Exec {
        program: program.to_string(),
        cause,
    })?;
    Ok((child, stdout_path, stderr_path))
}
