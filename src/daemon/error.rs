//! Why the daemon could not start or go on, as the operator reads it.

use crate::lock::LockError;
use crate::store::StoreError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("database {database}: {cause}")]
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
