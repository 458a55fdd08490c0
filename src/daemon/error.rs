//! Why the daemon could not start or go on, as the operator reads it.

use crate::lock::LockError;
use crate::store::StoreError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("{}", store_said(database, cause))]
    Store {
        /// The database as shown (a server without its password).
        database: String,
        cause: StoreError,
    },
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot listen on control socket {path}: {cause}")]
    Socket {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("event loop: {0}")]
    Io(#[from] std::io::Error),
    #[error("containment: {0}")]
    Containment(String),
}

/// A store's error as the operator reads it: naming the database once (many of its errors
/// name it already).
fn store_said(database: &str, cause: &StoreError) -> String {
    let said = cause.to_string();
    match said.starts_with(&format!("database {database} ")) {
        true => said,
        false => format!("database {database}: {said}"),
    }
}
