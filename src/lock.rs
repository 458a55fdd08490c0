//! The data-dir lock: one abxd per data directory.
//!
//! Invariant: while a [`DataDirLock`] lives, this process holds an exclusive `flock` on
//! `<data_dir>/abxd.lock`, whose content is its pid. The kernel drops the lock when the process
//! dies, however it dies, so a stale lock file never blocks a restart.

use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
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
        // Never through a symbolic link planted there (it would be truncated below): refused.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o640)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&lock)
            .map_err(|cause| match cause.raw_os_error() {
                Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => {
                    io_err(std::io::Error::other(
                        "it is a symbolic link, which abxd does not follow: remove it",
                    ))
                }
                _ => io_err(cause),
            })?;
        if !file.metadata().map_err(io_err)?.is_file() {
            return Err(io_err(std::io::Error::other("it is not a regular file")));
        }
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
