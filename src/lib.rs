//! abxd: a process supervisor for web-archiving crawls, modeled on an init system.
//!
//! # The process tree
//!
//! ```text
//! abxd                        orchestrator: the daemon, a child subreaper (daemon)
//!  └─ abxd worker crawl C     crawl worker, one per active crawl
//!      ├─ on_Crawl__… hooks   background crawl hooks (e.g. Chromium) and their descendants
//!      └─ abxd worker snapshot S
//!          └─ on_Snapshot__… hooks, run in order, and their descendants
//! ```
//!
//! Every process of the tree is a row of the process table (`store`), linked to its parent row.
//! Each supervising process (daemon, crawl worker, snapshot worker) spawns, reaps and tears down
//! its own children; the daemon, a child subreaper, also reaps whatever is orphaned below it.
//!
//! # Layers, bottom first (who owns what)
//!
//! A module uses modules of its own layer or below, never above, and the graph has no cycle
//! (`tests/architecture.rs` keeps it so). Why things are built this way: `docs/design.md`.
//!
//! 1. Foundation — the vocabulary, facts about the machine and the config:
//!    `domain` (the words every layer speaks: process kinds and states, end reasons and details,
//!    exit outcomes, work and result statuses, claims and leases — plain values, no I/O),
//!    `config` (`supervisor.toml`, strictly parsed; a `Config` is always valid), `signal` (the one
//!    signal type), `procstat` (the one `/proc/PID/stat` parser), `identity` (the host's ids;
//!    (boot id, pid, start time, pidfd inode) and "is this still that process"; `PidRef`, the
//!    pinned handle every signal goes through), `proctree` (a live process, its
//!    descendants), `marker` (`ABXD_PROCESS_ID` / `ABXD_INSTANCE`: finding what left the tree),
//!    `cgroup` (cgroup v2 containment: the scope, one cgroup read and written), `lock` (one
//!    daemon per data dir), `notify` (systemd), `logging`, `serve` (loopback HTTP), `printable`
//!    (text from outside escaped for a terminal), `own_exe` (this executable, run again as itself
//!    through `/proc/self/exe`), `admission` (whether new work may start: memory left, browsers
//!    alive, and — `disk` — free space where abxd writes).
//! 2. `store` — the database (an SQLite file, or PostgreSQL for a fleet), in four folders:
//!    `engine` (the two backends behind one `sql::Db`, migrations, transactions — every write
//!    `BEGIN IMMEDIATE` —, `busy`: a loop's writes never wait for another process's lock past the
//!    loop's next deadline), `processes` (the process table), `work` (crawls, snapshots, results;
//!    claims fenced by epoch), `fleet` (machines, the shared queue clock, LISTEN/NOTIFY, `store
//!    copy`). `Store` is the handle; each aggregate is reached through a repository over it
//!    (`store.processes()`, `store.crawls()`, `store.queue()`, `store.results()`, …). It
//!    persists `domain`'s words (a crawl's request is `domain::CrawlSpec`, whole).
//! 3. `liveness` — whether a row's process runs and the only functions that end a row;
//!    `reaper` — the one place a child is waited for.
//! 4. `spawn` (the one way a process starts), `teardown` (whole trees, SIGTERM then SIGKILL at
//!    each one's deadline, by pidfd), `recovery` (reconciling the table with reality; recovering
//!    ownerless work).
//! 5. `supervisor/` — the loop every supervising process runs: `children` (registry, deadlines),
//!    `descendants` (scans, leftovers), `lease`, `reaping`, `unrecorded`, and `decide` (the
//!    rules as pure functions).
//! 6. `plugins/` (the catalog of plugin folders, hook names as abx-dl parses them, each plugin's
//!    resolved config, the install plan), `hooks/` (a scope's hooks by abx-dl's lifecycle, their
//!    environment, judging results),
//!    `pool` (one `WorkerPool`: claim → spawn → own → seal or recover).
//! 7. `worker/` (the crawl and snapshot worker processes), `control/` (the socket: `protocol`
//!    with its framing, `server`, `client`, `access`), `verbs/` (what `add` and `schedule` judge
//!    and write, written once: the daemon's handlers, `abxctl` with abxd down and `abxd run`
//!    call the same functions).
//! 8. `daemon/` — start-up, the orchestrator loop, shutdown, `reload`, one `handlers/` file per
//!    request, and `archivebox` (serving an ArchiveBox collection's queue: abxd as its runner).
//! 9. `render`, `cli`, `ctl/` (one file per abxctl verb), `run` (`abxd run`), `install`
//!    (`abxd install`), `web` (the daemon's read-only web view and `/metrics`, on threads of
//!    its own); the binaries on top.
//!
//! # Invariants
//!
//! 1. Only the event loop reaps: nothing but the `reaper` (`reap_ready` for the children the loop
//!    knows, `reap_one` for an unknown child that ended — an escapee, swept by
//!    `supervisor::escapees` on the same turn), called from the supervisor loop, waits on a child;
//!    a row's end is written by `liveness` only, with the status the reaper saw or because procfs
//!    proves the process gone.
//! 2. Every stored pid is paired with its identity; every signal goes through an
//!    `identity::PidRef` — a pidfd confirmed to be the recorded process after it was opened —
//!    never to a bare pid (`tests/architecture.rs` keeps it so).
//! 3. A signal never makes a row final; a final row never changes again.
//! 4. The daemon never blocks on a client, never sleeps on a timer it does not need, and never
//!    panics on input. Nothing reachable from its loop — nor a worker's — calls `thread::sleep`
//!    or waits for another process's write lock: a write the busy database refused is kept
//!    (the store's outbox, or its concern's own retry) and tried again when the store's
//!    back-off ends, the loop turning meanwhile (`store::engine::busy`; `tests/architecture.rs`
//!    keeps it so).
//!
//! # The fleet
//!
//! Several hosts may share one PostgreSQL database (`paths.database = "postgres://…"`). What
//! makes that work lives in three places: `store::fleet` (the `machines` table and heartbeats,
//! the queue clock every host reads, wake-ups through LISTEN/NOTIFY, `abxd store copy`),
//! `store::engine` (the PostgreSQL backend and its migrations, `config::tls` for its TLS), and
//! `daemon::fleet` / `daemon::heartbeat` (lending a stranded host's work, the heartbeat loop).
//! The operator's view of it: `abxd-machine(8)`, `abxd-store(8)` and `docs/fleet.md`.

#![warn(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(rust_2018_idioms)]

pub mod admission;
pub mod cgroup;
pub mod cli;
pub mod commands;
pub mod config;
pub(crate) mod control;
pub mod ctl;
pub mod daemon;
pub mod disk;
pub mod domain;
pub mod egress;
pub mod exit;
pub mod export;
pub mod hook_user;
pub(crate) mod hooks;
pub mod identity;
pub mod install;
pub(crate) mod liveness;
pub mod lock;
pub mod logging;
pub mod logs;
pub(crate) mod marker;
pub(crate) mod memory;
pub(crate) mod notify;
pub mod own_exe;
pub mod passage;
pub mod plugins;
pub(crate) mod pool;
pub mod portable;
pub mod printable;
pub(crate) mod procstat;
pub mod proctree;
pub(crate) mod reaper;
pub mod recovery;
pub mod render;
pub mod run;
pub mod serve;
pub mod signal;
pub mod spawn;
pub mod store;
pub mod supervisor;
pub(crate) mod teardown;
pub(crate) mod trust;
pub mod url_rule;
pub mod uuid7;
pub mod verbs;
pub mod web;
pub mod worker;
