//! Control: the daemon's Unix socket and the one protocol both binaries speak over it.
//!
//! `protocol` defines every request and answer and owns framing (`protocol::frame`: delimiting,
//! encoding, the size limit); `server` (daemon side) and `client` (abxctl side) only move bytes
//! and frames; `access` decides who may ask what. Invariant: nothing outside `protocol` knows how
//! a frame is delimited or encoded.

pub mod access;
pub mod client;
pub mod protocol;
pub mod server;
