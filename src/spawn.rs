//! Spawning: the one way abxd starts a process.
//!
//! Invariants: every child gets its own process group, stdin from `/dev/null` (or from a file
//! abxd opened, never through a link), stdout and stderr appended to its own log files (made
//! safely by `logs`), `ABXD_PROCESS_ID` set to its row id and `ABXD_INSTANCE` to the database's id (together, the marker its descendants inherit), and none of the service
//! manager's variables; its row exists (`starting`) before the process does and carries its
//! identity (`running`) before this function returns — before anyone can reap it, since only the
//! event loop reaps and it is not running while we are here. Under cgroup containment the child
//! enters its row's cgroup (`cgroup::Cgroup::for_row`) between fork and exec, with one write to a
//! `cgroup.procs` opened before the fork — before it runs any code of its own, so nothing it
//! forks can start outside. Without containment spawning never forks a copy of the caller: std's
//! `Command` without `pre_exec` (or a user to switch to) takes the `posix_spawn` path. A child
//! with a `run_as` runs as that user and group, with no supplementary group. Only workers keep
//! the ambient capabilities a service granted abxd: anything else starts without them.

use crate::cgroup::{self, Cgroup, CGROUP_ENV};
use crate::identity::{self, Identity};
use crate::logs::{open_logs, Logs};
use crate::marker::{INSTANCE_ENV, PROCESS_ID_ENV};
use crate::store::{NewProcess, Store, StoreError};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Variables a child must not inherit: they speak for the supervisor to its own service manager,
/// or hold its secrets (a worker is handed what it needs: `pool`).
pub(crate) const SUPERVISOR_ONLY_ENV: &[&str] = &[
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    "LISTEN_FDS",
    "LISTEN_PID",
    "LISTEN_FDNAMES",
    crate::config::CONFIG_TEXT_ENV,
    crate::config::PASSWORD_ENV,
];

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot start {program:?}: {cause}")]
    Exec {
        program: String,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Log(#[from] crate::logs::LogError),
    #[error("nothing to run: empty command")]
    EmptyArgv,
    #[error("cannot open {} for its input: {cause}", path.display())]
    Input {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot make the cgroup of row {row} below {parent}: {cause}")]
    Cgroup {
        row: i64,
        parent: PathBuf,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Egress(crate::egress::kernel::EgressError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a program that does not inherit abxd's environment keeps of it: where programs are, and
/// the locale and time zone it speaks in.
pub const NEUTRAL_ENV: &[&str] = &["PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ"];

/// What to start, and where it sits in the tree.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    pub process: NewProcess,
    pub env: Vec<(String, String)>,
    /// Whether it inherits abxd's environment (less [`SUPERVISOR_ONLY_ENV`]), as workers and
    /// hooks do; a program of another service (ArchiveBox) gets only [`NEUTRAL_ENV`] of it, so
    /// that what configures abxd's hooks (`ABXPKG_LIB_DIR`, `ABX_PLUGINS_DIR`, …) is not taken
    /// for its own config.
    pub inherit_env: bool,
    pub logs: Logs,
    /// The limits of its cgroup, under cgroup containment.
    pub limits: cgroup::Limits,
    /// The user and group it runs as (a hook of a root abxd: `hook_user`), if not abxd's own.
    pub run_as: Option<(u32, u32)>,
    /// Its umask as `run_as`, if not a hook's 0007 (a shared library's installs: 0002).
    pub umask: Option<u32>,
    /// The groups it holds beside `run_as`'s own (a crawl user's: its shared library's).
    pub groups: Vec<u32>,
    /// The file its stdin reads, opened by abxd (before the child drops to `run_as`) without
    /// following a link; else `/dev/null`.
    pub stdin: Option<PathBuf>,
}

/// A started child: its row and its identity.
#[derive(Debug, Clone)]
pub struct Spawned {
    pub row_id: i64,
    pub identity: Identity,
    /// Its stdout and stderr log files.
    pub logs: (PathBuf, PathBuf),
    /// Its row's cgroup, under cgroup containment.
    pub cgroup: Option<Cgroup>,
    /// Whether its identity is written on its row (else the caller writes it later).
    pub recorded: bool,
    /// The uid it runs as.
    pub uid: u32,
    /// Its row's UUID.
    pub uuid: String,
}

/// What the caller writes in the transaction that creates the child's row, given its id: e.g.
/// the work the child will own, the result it runs.
pub type WithRow<'a> = &'a mut dyn FnMut(&Store, i64) -> Result<(), StoreError>;

/// A [`WithRow`] that writes nothing more.
pub fn nothing_more(_: &Store, _: i64) -> Result<(), StoreError> {
    Ok(())
}

/// Starts `request` as a child of the calling process and records it; under cgroup containment
/// (`cgroups`: the cgroup of the caller's row) in a cgroup of its own below that one. On failure
/// the row is made final with the reason, so no row is left `starting`.
///
/// The row, what `with_row` writes and the row's cgroup are one transaction, committed before
/// the child starts: a database that refuses it (busy) starts nothing, and a crash after the
/// start leaves a row naming the child. The child's identity is written after the start; if
/// that write is refused, [`Spawned::recorded`] says so and the caller writes it later
/// ([`record_start`]).
pub fn spawn(
    store: &Store,
    request: &SpawnRequest,
    cgroups: Option<Below<'_>>,
    with_row: WithRow<'_>,
) -> Result<Spawned, SpawnError> {
    let argv = &request.process.argv;
    let program = argv.first().ok_or(SpawnError::EmptyArgv)?;
    let instance = store.marker_namespace()?;
    let mut cgroup_failure = None;
    // (Made here: a transaction the busy database rolls back is tried again with it.)
    let uuid = crate::uuid7::new();
    let (row_id, placement) = store.all_or_nothing(|store| {
        let row_id = store.processes().insert_as(&request.process, &uuid)?;
        with_row(store, row_id)?;
        let placement = match cgroups.map(|parent| place(store, row_id, parent, request)) {
            None => None,
            Some(Ok(placement)) => Some(placement),
            Some(Err(SpawnError::Store(err))) => return Err(err),
            Some(Err(other)) => {
                cgroup_failure = Some(other);
                None
            }
        };
        Ok((row_id, placement))
    })?;
    let started = match cgroup_failure {
        Some(err) => Err(err),
        None => start(row_id, &instance, program, request, &placement),
    };
    match started {
        Ok((child, stdout, stderr)) => {
            let pid = child.id() as i32;
            // Unreaped, so the pid is ours even if the child already exited.
            let identity = identity::of_unreaped_child(pid).unwrap_or_else(|| Identity {
                boot_id: identity::boot_id().to_string(),
                pid,
                start_ticks: 0,
                pidfd_ino: None,
            });
            let logs = (stdout, stderr);
            let uid = request
                .run_as
                .map_or_else(|| rustix::process::getuid().as_raw(), |(uid, _)| uid);
            let recorded = match record_start(store, row_id, &identity, &logs, uid) {
                Ok(()) => true,
                Err(err) => {
                    log::warn!("row {row_id}: pid {pid} started; written later: {err}");
                    false
                }
            };
            // Dropping `child` neither waits nor kills: the event loop's reaper owns it now.
            drop(child);
            Ok(Spawned {
                row_id,
                identity,
                logs,
                cgroup: placement.map(|p| p.cgroup),
                recorded,
                uid,
                uuid,
            })
        }
        Err(err) => {
            crate::liveness::finish_spawn_failed(store, row_id, &err.to_string())?;
            Err(err)
        }
    }
}

/// Writes that the process of row `row_id` runs: its identity (its pid is its process group),
/// its log files and the uid it runs as (which no one may signal it under another).
pub fn record_start(
    store: &Store,
    row_id: i64,
    identity: &Identity,
    (stdout, stderr): &(PathBuf, PathBuf),
    uid: u32,
) -> Result<(), StoreError> {
    let logs = (
        Some(stdout.to_string_lossy()),
        Some(stderr.to_string_lossy()),
    );
    store.processes().record_spawned(
        row_id,
        identity,
        identity.pid,
        (logs.0.as_deref(), logs.1.as_deref()),
        uid,
    )
}

/// Where children go under cgroup containment: below `cgroup`, a worker in a leaf that
/// `exempt_workers` exempts (before it enters) from the egress policy of a crawl's cgroup.
#[derive(Debug, Clone, Copy)]
pub struct Below<'a> {
    pub cgroup: &'a Cgroup,
    pub exempt_workers: Option<&'a crate::egress::kernel::Exemption>,
}

impl<'a> Below<'a> {
    /// Below `cgroup`, if children are contained.
    pub fn of(
        cgroup: Option<&'a Cgroup>,
        exempt_workers: Option<&'a crate::egress::kernel::Exemption>,
    ) -> Option<Below<'a>> {
        cgroup.map(|cgroup| Below {
            cgroup,
            exempt_workers,
        })
    }
}

/// A child's place under cgroup containment: its row's cgroup, and the open `cgroup.procs` of
/// the one it enters (the row's, or its `supervisor` leaf for a worker).
struct Placement {
    cgroup: Cgroup,
    entry: File,
}

/// Makes row `row_id`'s cgroup below `parent`, with the request's limits, and records it.
fn place(
    store: &Store,
    row_id: i64,
    below: Below<'_>,
    request: &SpawnRequest,
) -> Result<Placement, SpawnError> {
    let parent = below.cgroup;
    let failed = |cause| SpawnError::Cgroup {
        row: row_id,
        parent: parent.dir.clone(),
        cause,
    };
    let supervising = request.process.kind.is_worker();
    let (cgroup, entered) = parent.for_row(row_id, supervising).map_err(failed)?;
    if let (true, Some(exemption)) = (supervising, below.exempt_workers) {
        exemption.apply(&entered.dir).map_err(SpawnError::Egress)?;
    }
    let entry = entered.procs_for_entry().map_err(failed)?;
    for key in cgroup.apply(&request.limits) {
        log::warn!(
            "row {row_id}: {key} not applied: its cgroup controller is not enabled below {}",
            parent.dir.display()
        );
    }
    store
        .processes()
        .set_cgroup(row_id, &cgroup.dir.to_string_lossy())?;
    Ok(Placement { cgroup, entry })
}

fn start(
    row_id: i64,
    instance: &str,
    program: &str,
    request: &SpawnRequest,
    placement: &Option<Placement>,
) -> Result<(std::process::Child, PathBuf, PathBuf), SpawnError> {
    let (stdout_path, stderr_path) = request.logs.paths(row_id);
    let (stdout, stderr) = open_logs(request.logs.beneath(), &stdout_path, &stderr_path)?;
    let stdin = match &request.stdin {
        Some(path) => {
            Stdio::from(
                crate::logs::read_log(path).map_err(|cause| SpawnError::Input {
                    path: path.clone(),
                    cause,
                })?,
            )
        }
        None => Stdio::null(),
    };
    let mut command = crate::own_exe::command_for(program);
    command
        .args(&request.process.argv[1..])
        .current_dir(&request.process.cwd)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    if request.inherit_env {
        for name in SUPERVISOR_ONLY_ENV {
            command.env_remove(name);
        }
    } else {
        command.env_clear();
        for name in NEUTRAL_ENV {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
    }
    command.envs(request.env.iter().map(|(k, v)| (k, v)));
    command.env(PROCESS_ID_ENV, row_id.to_string());
    command.env(INSTANCE_ENV, instance);
    if let Some(ids) = request.run_as {
        // (Before the cgroup entry below, which writes on a descriptor opened as abxd.)
        let umask = request.umask.unwrap_or(0o007);
        let cwd = Path::new(&request.process.cwd);
        crate::hook_user::exec_as(&mut command, ids, &request.groups, umask, cwd).map_err(
            |cause| SpawnError::Exec {
                program: program.to_string(),
                cause,
            },
        )?;
    }
    if let Some(placement) = placement {
        command.env(CGROUP_ENV, &placement.cgroup.dir);
        let entry = placement.entry.as_raw_fd();
        // SAFETY: between fork and exec only one write(2) runs (`libc_write`), on `entry`:
        // `placement.entry`'s descriptor, opened before the fork and kept open by the parent
        // until `spawn` returns, so open in the child too — async-signal-safe, no allocation,
        // no lock.
        unsafe {
            command.pre_exec(move || {
                let written = libc_write(entry, b"0");
                if written == 1 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    if !request.process.kind.is_worker() && holds_ambient_capabilities() {
        // SAFETY: between fork and exec only one prctl(2) runs: a system call, async-signal-safe,
        // no allocation, no lock.
        unsafe {
            command.pre_exec(|| {
                let cleared = nix::libc::prctl(
                    nix::libc::PR_CAP_AMBIENT,
                    nix::libc::PR_CAP_AMBIENT_CLEAR_ALL,
                    0,
                    0,
                    0,
                );
                match cleared {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            });
        }
    }
    let child = command.spawn().map_err(|cause| SpawnError::Exec {
        program: program.to_string(),
        cause,
    })?;
    Ok((child, stdout_path, stderr_path))
}

/// Whether this process holds ambient capabilities — a service's unit granted them
/// (`AmbientCapabilities=CAP_BPF CAP_NET_ADMIN`: the egress programs) — which its workers keep
/// and nothing else it starts may: a hook with `CAP_NET_ADMIN` could take its crawl's egress
/// programs off. (Read once: they never change while abxd runs.)
fn holds_ambient_capabilities() -> bool {
    static HOLDS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HOLDS.get_or_init(|| crate::procstat::own_capabilities("Amb") != 0)
}

/// write(2) on a raw descriptor, for the moment between fork and exec (where nothing may
/// allocate): returns the number of bytes written, or -1.
///
/// # Safety
///
/// `fd` must be a descriptor open in this process for the whole call.
unsafe fn libc_write(fd: i32, bytes: &[u8]) -> isize {
    // SAFETY: the caller keeps `fd` open for the call (this function's contract).
    let fd = unsafe { rustix::fd::BorrowedFd::borrow_raw(fd) };
    match rustix::io::write(fd, bytes) {
        Ok(n) => n as isize,
        Err(_) => -1,
    }
}
