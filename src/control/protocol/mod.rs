//! The control protocol: what a request and an answer are (this file), and how they travel
//! (`frame`: newline-delimited JSON frames, versioned, size-limited).
//!
//! A request frame is `{"version":1,"request":{"type":"status"}}`; an answer frame is
//! `{"version":1,"response":{"type":"status",...}}` or `{"version":1,"response":{"type":"error",
//! "code":"...","message":"..."}}`. Invariants: the types here are the protocol's own — an
//! engine type never goes on the wire, so the engine can change without changing the protocol;
//! decoding never panics and every malformed frame maps to an [`ErrorCode`] the peer is told
//! about.

mod frame;

pub use frame::{
    decode_request, decode_response, encode_request, encode_response, read_frame, Cut, FrameBuffer,
    FrameError,
};

use crate::domain::{CrawlSpec, Pruned, RetryScope};
use crate::signal::Signal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Is the daemon up, since when, and what runs.
    Status,
    /// Enqueue a crawl (the daemon writes it, so whoever may act may add work without write
    /// access to the database).
    Add(CrawlSpec),
    /// Tear down a live process of the table and its subtree. `row` or `pid` names it.
    Kill {
        #[serde(default)]
        row: Option<i64>,
        #[serde(default)]
        pid: Option<i32>,
        /// The first signal (its number on the wire); SIGTERM when absent.
        #[serde(default)]
        signal: Option<Signal>,
        /// Time between the first signal and SIGKILL; `timeouts.kill_grace` when absent.
        #[serde(default)]
        grace_ms: Option<u64>,
        /// Answer when the teardown is finished, with what happened to each process.
        #[serde(default)]
        wait: bool,
    },
    /// Stop a crawl for good: seal it as cancelled and tear its processes down.
    Cancel { crawl_id: i64 },
    /// Start no more hooks of a crawl (running ones go on) until it is resumed.
    Pause { crawl_id: i64 },
    /// Let a paused crawl go on.
    Resume { crawl_id: i64 },
    /// Delete the process rows of finished work that ended longer ago than `older_than_ms`
    /// (`retention.keep_days` when absent); with `dry_run`, only count them.
    Prune {
        #[serde(default)]
        older_than_ms: Option<u64>,
        #[serde(default)]
        dry_run: bool,
    },
    /// Run results of a sealed crawl again (see `Crawls::retry_results`).
    Retry {
        crawl_id: i64,
        which: RetryScope,
        #[serde(default)]
        hook: Option<String>,
    },
    /// Provision the binaries the plugins declare (all enabled ones when absent); answered when
    /// every installer run has ended.
    Install {
        #[serde(default)]
        plugins: Option<Vec<String>>,
    },
    /// Export crawls (every one when `crawls` is empty) into the ArchiveBox collection at
    /// `target` once each is sealed, filed under ArchiveBox user `user` (`archivebox.user` when
    /// absent): copied as portable snapshot directories, then imported by ArchiveBox.
    Export {
        target: std::path::PathBuf,
        #[serde(default)]
        user: Option<String>,
        #[serde(default)]
        crawls: Vec<i64>,
    },
    /// The variables a hook of `plugin` gets from its plugin's config, each with where it came
    /// from, as the daemon resolves them (its environment, its config, the collection's
    /// `ArchiveBox.conf`, the plugin's defaults).
    PluginEnv { plugin: String },
    /// Add a schedule: a crawl of `urls` made again every `every_ms`, or at the minutes of the
    /// cron expression `cron` (one of the two).
    ScheduleAdd {
        /// The crawl each occurrence makes.
        spec: CrawlSpec,
        #[serde(default)]
        every_ms: Option<u64>,
        #[serde(default)]
        cron: Option<String>,
        /// `spec`'s one URL is a `file://` URL of a file to import at each occurrence.
        #[serde(default)]
        import: bool,
        /// The time zone `cron` is read in (an IANA name): the client's; the daemon's when
        /// absent.
        #[serde(default)]
        zone: Option<String>,
    },
    /// Remove, pause or resume a schedule.
    ScheduleSet { id: i64, action: ScheduleAction },
    /// Debug only (`control.allow_debug_spawn`): run a command as a child of the orchestrator.
    Spawn {
        argv: Vec<String>,
        #[serde(default)]
        cwd: Option<String>,
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
}

impl Request {
    /// Whether the request only reads (may be allowed to more peers than those that act).
    pub fn is_read_only(&self) -> bool {
        matches!(self, Request::Status)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    Status(Box<StatusInfo>),
    Spawned {
        id: i64,
        pid: i32,
    },
    /// The crawl was enqueued.
    Added {
        crawl_id: i64,
    },
    /// The crawl is paused now (`paused`), or resumed.
    PauseSet {
        crawl_id: i64,
        paused: bool,
    },
    /// What a prune did (or would do).
    Pruned(Pruned),
    /// The schedule was added; it fires first at `next_at_ms` (unix ms).
    ScheduleAdded {
        id: i64,
        next_at_ms: i64,
    },
    /// The schedule was removed, paused or resumed.
    ScheduleSet {
        id: i64,
        action: ScheduleAction,
    },
    /// The crawl was queued again with this many results to run.
    Retried {
        crawl_id: i64,
        results: u64,
    },
    /// A teardown began; it was not asked to wait.
    TeardownStarted {
        row: i64,
    },
    /// A teardown finished.
    TornDown(TeardownReport),
    /// An install finished.
    Installed(InstallReport),
    /// These crawls' exports are queued (each runs once its crawl is sealed).
    ExportQueued {
        crawls: Vec<i64>,
    },
    /// What a plugin's hooks get from its config.
    PluginEnv(PluginEnvReport),
    Error {
        code: ErrorCode,
        message: String,
    },
}

/// The variables a plugin's hooks get from its config (`plugin_env`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginEnvReport {
    pub plugin: String,
    /// Each variable, by name.
    pub values: Vec<EnvValue>,
    /// The collection's `ArchiveBox.conf` read for it, if a collection is configured.
    #[serde(default)]
    pub collection: Option<String>,
    /// Why that file could not be used, if it could not.
    #[serde(default)]
    pub collection_problem: Option<String>,
}

/// One variable a hook gets, and where its value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvValue {
    pub key: String,
    /// Its value (`None`: a secret, whose value is not shown).
    pub value: Option<String>,
    /// Where it came from, in words ("ArchiveBox.conf (TIMEOUT)", "its default", …).
    pub from: String,
}

/// What `schedule_set` does to a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleAction {
    Remove,
    Pause,
    Resume,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    Malformed,
    UnsupportedVersion,
    UnknownRequest,
    FrameTooLarge,
    NotAllowed,
    NotFound,
    PermissionDenied,
    TooManyConnections,
    Failed,
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Its wire name: `not_found`, `permission_denied`, …
        let name = serde_json::to_value(self).ok();
        f.write_str(name.as_ref().and_then(|v| v.as_str()).unwrap_or("error"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusInfo {
    pub pid: u32,
    pub version: String,
    pub started_at_ms: i64,
    pub uptime_ms: i64,
    pub database: String,
    pub socket: String,
    /// Rows that claim a live process, by kind.
    pub live: BTreeMap<String, u64>,
    /// Orphan trees of a previous incarnation are still being torn down; no work is claimed yet.
    #[serde(default)]
    pub recovering: bool,
    /// The containment in force: `cgroup v2 at <path> (controllers: …)` or `procfs (why)`.
    #[serde(default)]
    pub containment: String,
    /// The database file was deleted or replaced under the daemon: what happened and what to do.
    #[serde(default)]
    pub database_lost: Option<String>,
    /// Since when (unix ms) another process has held the database's write lock, if it does.
    #[serde(default)]
    pub database_busy_since_ms: Option<i64>,
    /// On a shared store (a fleet): every machine registered in it.
    #[serde(default)]
    pub machines: Vec<MachineInfo>,
    /// Who crawl hooks run as (`hooks.user`), or why no crawl starts.
    #[serde(default)]
    pub hooks: String,
    /// Whether new crawls and snapshots may start (`admission`), what waits for what, and what
    /// admission measured.
    #[serde(default)]
    pub admission: String,
    /// The plugins dirs its crawls run, as found in its own environment (a service's is not the
    /// operator's shell's: `abxctl plugins` lists these).
    #[serde(default)]
    pub plugins_dirs: Vec<String>,
    /// Whether crawls' hooks are held to their egress policy, or why not.
    #[serde(default)]
    pub egress: String,
    /// The work waiting, running and paused, and what sealed and failed in the last day (none
    /// while the database does not answer).
    #[serde(default)]
    pub work: Option<crate::domain::WorkTally>,
}

/// One machine of a fleet, as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineInfo {
    pub id: String,
    pub hostname: String,
    pub version: String,
    /// When it last said it was alive (unix ms, the server's clock).
    pub heartbeat_at_ms: i64,
    /// Not heard for longer than the lease: presumed dead, its work taken over.
    pub silent: bool,
    /// The machine of the daemon that answers.
    pub this_machine: bool,
}

/// One binary an install provisioned, or failed to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledBinary {
    pub plugin: String,
    pub binary: String,
    /// The installer's process row, when it could be started.
    pub row: Option<i64>,
    pub ok: bool,
    /// The installer's last line, or why it failed.
    pub detail: String,
}

/// The outcome of an install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallReport {
    pub binaries: Vec<InstalledBinary>,
    /// Declared binaries that could not be installed at all (a name that stays a placeholder).
    pub problems: Vec<String>,
}

impl InstallReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty() && self.binaries.iter().all(|b| b.ok)
    }
}

/// What happened to one process of a torn-down tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fate", rename_all = "snake_case")]
pub enum Fate {
    /// It was gone before any signal reached it.
    AlreadyGone,
    /// It exited after the first signal, this long after it.
    ExitedOnSignal { after_ms: u64 },
    /// It outlived its grace and was killed at its deadline.
    KilledAtDeadline { after_ms: u64 },
    /// It was still alive a while after SIGKILL (e.g. in uninterruptible sleep).
    Survived { state: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessFate {
    pub row_id: Option<i64>,
    pub pid: i32,
    pub command: String,
    #[serde(flatten)]
    pub fate: Fate,
}

/// The outcome of a finished teardown: each process's fate, and whether none is left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeardownReport {
    pub root_row: i64,
    pub complete: bool,
    pub processes: Vec<ProcessFate>,
}

#[cfg(test)]
mod tests;
