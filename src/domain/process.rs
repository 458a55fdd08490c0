//! The words of the process table: what a process is in the tree, where it is in its life, why
//! its row ended and what was said of that end, and how a reaped process ended.
//!
//! Invariant: these are plain values, known to every layer; none of them knows how it is stored
//! (the store maps them to SQL) or shown beyond its one word (`words`).

use super::words::words;
use crate::identity::Identity;
use serde::Serialize;

words!(
    /// What a process is in the tree (`docs/design.md`, "The process tree").
    Kind {
        Orchestrator => "orchestrator",
        CrawlWorker => "crawl_worker",
        SnapshotWorker => "snapshot_worker",
        Hook => "hook",
        Child => "child",
    }
);

words!(
    /// Where a process is in its life.
    Status {
        Starting => "starting",
        Running => "running",
        Stopping => "stopping",
        Exited => "exited",
        Lost => "lost",
    }
);

words!(
    /// Why a process's row became final.
    EndReason {
        Exited => "exited",
        Timeout => "timeout",
        Killed => "killed",
        OrphanReaped => "orphan_reaped",
        Lost => "lost",
        SpawnFailed => "spawn_failed",
        Unknown => "unknown",
    }
);

impl Status {
    /// Whether the row still claims a live process.
    pub fn is_live(self) -> bool {
        matches!(self, Status::Starting | Status::Running | Status::Stopping)
    }
}

impl Kind {
    /// Whether a process of this kind supervises children: it reaps them and records their ends
    /// (and, being a subreaper, those of what is re-parented to it).
    pub fn is_supervisor(self) -> bool {
        matches!(
            self,
            Kind::Orchestrator | Kind::CrawlWorker | Kind::SnapshotWorker
        )
    }

    /// Whether it is a worker process (a crawl or snapshot worker).
    pub fn is_worker(self) -> bool {
        matches!(self, Kind::CrawlWorker | Kind::SnapshotWorker)
    }
}

/// How a reaped process ended: exactly one of an exit code or a terminating signal (the raw
/// number the kernel reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitOutcome {
    Code(i32),
    Signal(i32),
}

impl std::fmt::Display for ExitOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitOutcome::Code(code) => write!(f, "exit code {code}"),
            ExitOutcome::Signal(signal) => {
                write!(f, "killed by {}", crate::signal::name_of_raw(*signal))
            }
        }
    }
}

/// What is said of a row's end beyond its [`EndReason`]: the two things its supervisor notes
/// that decide a hook's result, or the words of whoever ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndDetail {
    /// The kernel killed it for going over its cgroup's `memory.max`.
    MemoryLimit,
    /// It was still alive `after_secs` after SIGKILL, in `state`, waiting in `wchan`: its scope
    /// went on without it.
    Unkillable {
        after_secs: u64,
        state: char,
        wchan: String,
    },
    /// Anything else said of its end (why it was lost, why it did not start).
    Said(String),
}

/// The words of [`EndDetail::MemoryLimit`].
const MEMORY_LIMIT: &str = "memory limit";

impl std::fmt::Display for EndDetail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndDetail::MemoryLimit => f.write_str(MEMORY_LIMIT),
            EndDetail::Unkillable {
                after_secs,
                state,
                wchan,
            } => write!(
                f,
                "unkillable: alive {after_secs} s after SIGKILL (state {state}, waiting in {wchan})"
            ),
            EndDetail::Said(words) => f.write_str(words),
        }
    }
}

impl EndDetail {
    /// The detail whose words are `text`: what [`Display`](std::fmt::Display) wrote of it.
    pub fn parse(text: &str) -> EndDetail {
        if text == MEMORY_LIMIT {
            return EndDetail::MemoryLimit;
        }
        EndDetail::parse_unkillable(text).unwrap_or_else(|| EndDetail::Said(text.to_string()))
    }

    fn parse_unkillable(text: &str) -> Option<EndDetail> {
        let rest = text.strip_prefix("unkillable: alive ")?;
        let (secs, rest) = rest.split_once(" s after SIGKILL (state ")?;
        let (state, rest) = rest.split_once(", waiting in ")?;
        let wchan = rest.strip_suffix(')')?;
        let mut state_chars = state.chars();
        let (Some(state), None) = (state_chars.next(), state_chars.next()) else {
            return None;
        };
        Some(EndDetail::Unkillable {
            after_secs: secs.parse().ok()?,
            state,
            wchan: wchan.to_string(),
        })
    }
}

impl serde::Serialize for EndDetail {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// What a prune did (or, dry, would do).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pruned {
    /// Process rows deleted (or that would be).
    pub rows: u64,
    /// The database's size before and after, in bytes (after = before for a dry run).
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// One row of the process table: a process abxd started or found, with its identity, where
/// it is in its life and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessRow {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub kind: Kind,
    pub crawl_id: Option<i64>,
    pub snapshot_id: Option<i64>,
    pub result_id: Option<i64>,
    pub pid: Option<i32>,
    #[serde(skip)]
    pub identity: Option<Identity>,
    pub pgid: Option<i32>,
    pub argv: Vec<String>,
    pub cwd: String,
    pub stdout_path: Option<String>,
    pub stderr_path: Option<String>,
    pub timeout_ms: Option<i64>,
    pub deadline_at: Option<i64>,
    pub status: Status,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub sigterm_at: Option<i64>,
    pub sigkill_at: Option<i64>,
    pub exit_code: Option<i32>,
    pub exit_signal: Option<i32>,
    pub ended_at: Option<i64>,
    pub end_reason: Option<EndReason>,
    pub end_detail: Option<EndDetail>,
    /// The process exited while processes it started lived on.
    pub leaking: bool,
    /// When SIGKILL is due, once a teardown has begun.
    pub kill_at: Option<i64>,
    /// It was found as an unknown child of a supervising process: it escaped its hook's tree.
    pub escaped: bool,
    /// Under cgroup containment: its cgroup, and what that counted of it and its descendants
    /// (CPU time in µs; peak memory in bytes, where the memory controller is enabled).
    pub cgroup: Option<String>,
    pub cpu_usec: Option<i64>,
    pub memory_peak: Option<i64>,
    /// Still alive long after SIGKILL: its scope went on without it (`end_detail` says why).
    pub unkillable: bool,
    /// `deadline_at` on the boot clock (`boot_clock_ms`): what a teardown decides by.
    pub deadline_clock: Option<i64>,
    /// The real uid its process runs as, recorded when it was found or started.
    pub uid: Option<u32>,
    /// The machine its process runs on (`identity::machine_id`; `None`: written before abxd
    /// knew machines, on the host that wrote it).
    pub machine_id: Option<String>,
    /// Its UUIDv7, as `index.jsonl` names its Process record (`None`: written before abxd
    /// gave processes one).
    pub uuid: Option<String>,
}

impl ProcessRow {
    /// What is said of its end, in words (as the database holds it).
    pub fn end_detail_text(&self) -> Option<String> {
        self.end_detail.as_ref().map(ToString::to_string)
    }

    /// Whether its process runs on this machine (a row written before abxd knew machines does):
    /// only then does its pid mean anything here.
    pub fn on_this_machine(&self) -> bool {
        self.machine_id
            .as_deref()
            .is_none_or(|id| id == crate::identity::machine_id())
    }
}
