//! The words of the process table: what a process is in the tree, where it is in its life, why
//! its row ended and what was said of that end, and how a reaped process ended.
//!
//! Invariant: these are plain values, known to every layer; none of them knows how it is stored
//! (the store maps them to SQL) or shown beyond its one word (`words`).

use super::words::words;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pruned {
    /// Process rows deleted (or that would be).
    pub rows: u64,
    /// The database's size before and after, in bytes (after = before for a dry run).
    pub bytes_before: u64,
    pub bytes_after: u64,
}
