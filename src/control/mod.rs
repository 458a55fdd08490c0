//! Control: the daemon's Unix socket and the one protocol both binaries speak over it.
//!
//! `protocol` defines every frame; `server` (daemon side) and `client` (abxctl side) only move
//! frames. Invariant: nothing outside `protocol` knows how a frame is encoded.

pub mod access;
pub mod client;
pub mod protocol;
pub mod server;
