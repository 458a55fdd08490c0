//! The fleet in the store: what lets several hosts share one PostgreSQL database — the
//! `machines` table and its heartbeats (`machines`), the queue clock every host reads
//! (`clock`), wake-ups through LISTEN/NOTIFY (`listen`), and moving a host's SQLite file into a
//! shared database (`copy`). Lending a stranded worker's work and the heartbeat loop are the
//! daemon's (`daemon::fleet`, `daemon::heartbeat`); the server's connection is `engine::sql`.
//!
//! Invariant: on an SQLite file (one host) none of this changes what a store does but the clock,
//! which is then the host's boot clock.

pub mod clock;
pub mod copy;
pub mod listen;
pub mod machines;
