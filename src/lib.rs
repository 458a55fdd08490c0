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
//! # Who owns what
//!
//! - `config`: `supervisor.toml`, strictly parsed; a `Config` is always valid.
//! - `store`: the SQLite file — process table and migrations; all writes `BEGIN IMMEDIATE`.
//! - `identity`: (boot id, pid, start time) and the one check "is this still that process".
//! - `proctree`: descendants through procfs and processes by marker.
//! - `spawn`: the one way a process is started (own group, logs, marker env, row with identity).
//! - `reaper`: the one place a child is waited for.
//! - `teardown`: the deadline map — whole trees, SIGTERM, then SIGKILL at each one's deadline.
//! - `supervisor`: the loop every supervising process runs (signals, reaping, deadlines, lease).
//! - `unrecorded`: ends a failed write left unrecorded, written once writes succeed again.
//! - `lock`: one daemon per data dir.
//! - `control`: the socket protocol (`protocol`), the daemon side (`server`), abxctl's (`client`).
//! - `daemon`: start-up, the orchestrator (claims crawls, starts crawl workers), shutdown.
//! - `notify`: what the daemon tells systemd (READY, WATCHDOG, STOPPING, STATUS).
//! - `worker`: the crawl and snapshot worker processes.
//! - `recovery`: reconciling the table with reality on start; recovering ownerless work.
//! - `plugins`, `hooks`: finding hooks by the naming rule; running them and judging results.
//! - `run`, `serve`: `abxd run`, and the loopback server it crawls local pages through.
//! - `render`, `ctl`, `cli`: what abxctl shows and does, and both command lines.
//!
//! # Invariants
//!
//! 1. Only the event loop reaps: nothing but `reaper::reap_ready`, called on SIGCHLD, waits on a
//!    child; a row's exit status comes from there or from procfs proving the process gone.
//! 2. Every stored pid is paired with its identity; no signal is sent to a pid whose identity
//!    was not checked just before.
//! 3. A signal never makes a row final; a final row never changes again.
//! 4. The daemon never blocks on a client, never sleeps on a timer it does not need, and never
//!    panics on input.

pub mod cli;
pub mod config;
pub(crate) mod control;
pub mod ctl;
pub mod daemon;
pub(crate) mod hooks;
pub mod identity;
pub(crate) mod liveness;
pub(crate) mod lock;
pub mod logging;
pub(crate) mod marker;
pub(crate) mod notify;
pub(crate) mod plugins;
pub(crate) mod pool;
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
pub mod worker;
