//! The data-dir lock: one abxd per data directory.
//!
//! Invariant: while a [`DataDirLock`] lives, this process holds an exclusive `flock` on
//! `<data_dir>/abxd.lock`, whose content is its pid. The kernel drops the lock when the process
//! dies, however it dies, so a stale lock file never blocks a restart.

use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("data dir {dir} is in use by another abxd (pid {holder}, lock file {lock})")]
    Held {
        dir: PathBuf,
        lock: PathBuf,
        holder: String,
    },
    #[error("cannot lock {lock}: {cause}")]
    Io {
        lock: PathBuf,
        cause: std::io::Error,
    },
}

pub struct DataDirLock {
    _lock: Flock<File>,
}

impl DataDirLock {
    pub fn acquire(data_dir: &Path) -> Result<DataDirLock, LockError> {
        let lock = data_dir.join("abxd.lock");
        let io_err = |cause| LockError::Io {
            lock: lock.clone(),
            cause,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
            .map_err(io_err)?;
        let mut locked = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = match holder.trim() {
                    "" => "unknown".to_string(),
                    pid => pid.to_string(),
                };
                return Err(LockError::Held {
                    dir: data_dir.to_path_buf(),
                    lock,
                    holder,
                });
            }
            Err((_, errno)) => return Err(io_err(errno.into())),
        };
        locked.set_len(0).map_err(io_err)?;
        locked.rewind().map_err(io_err)?;
        writeln!(locked, "{}", std::process::id()).map_err(io_err)?;
        locked.flush().map_err(io_err)?;
        Ok(DataDirLock { _lock: locked })
    }
}
