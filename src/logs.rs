//! Log files: where a child's stdout and stderr go, made and read so that nothing abxd writes or
//! shows ever passes through a symbolic link a hook planted.
//!
//! Invariants: a log is created anew (exclusively, mode 0640) below the directory it belongs to,
//! every directory on the way entered without following a symbolic link, so nothing abxd writes
//! lands outside that directory; a log is read ([`read_log`]) never through a symbolic link. A
//! file abxd appends records to in a hook's directory ([`open_append`]) is reached the same way.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// A log file that could not be made, and why.
#[derive(Debug, thiserror::Error)]
#[error("cannot open log file {}: {cause}", path.display())]
pub struct LogError {
    pub path: PathBuf,
    pub cause: std::io::Error,
}

/// Where a child's stdout and stderr go.
#[derive(Debug, Clone)]
pub enum Logs {
    /// `<dir>/<row id>.stdout.log` and `<dir>/<row id>.stderr.log` (`dir` is abxd's own).
    InDir(PathBuf),
    /// Exactly these files, below `beneath` (abxd's own dir; what lies below it may be a
    /// hook's, and is never followed through a symbolic link).
    Files {
        stdout: PathBuf,
        stderr: PathBuf,
        beneath: PathBuf,
    },
}

impl Logs {
    pub(crate) fn paths(&self, row_id: i64) -> (PathBuf, PathBuf) {
        match self {
            Logs::InDir(dir) => (
                dir.join(format!("{row_id}.stdout.log")),
                dir.join(format!("{row_id}.stderr.log")),
            ),
            Logs::Files { stdout, stderr, .. } => (stdout.clone(), stderr.clone()),
        }
    }

    /// The directory the log files are opened relative to.
    pub(crate) fn beneath(&self) -> &Path {
        match self {
            Logs::InDir(dir) => dir,
            Logs::Files { beneath, .. } => beneath,
        }
    }
}

/// Creates the log files `stdout` and `stderr` anew, relative to the directory `beneath`: each
/// directory below `beneath` is made if missing and entered without following a symbolic link
/// (once, when both logs share it), a file already there (a previous attempt's log, or a link a
/// hook planted) is removed, and each log is created exclusively, mode 0640. So nothing abxd
/// writes ever lands outside `beneath`.
pub(crate) fn open_logs(
    beneath: &Path,
    stdout: &Path,
    stderr: &Path,
) -> Result<(File, File), LogError> {
    let out_dir = enter_log_dir(beneath, stdout)?;
    let err_dir = if stderr.parent() == stdout.parent() {
        None
    } else {
        Some(enter_log_dir(beneath, stderr)?)
    };
    let stdout_file = create_log(&out_dir, stdout)?;
    let stderr_file = create_log(err_dir.as_ref().unwrap_or(&out_dir), stderr)?;
    Ok((stdout_file, stderr_file))
}

fn log_err(path: &Path) -> impl Fn(std::io::Error) -> LogError + '_ {
    move |cause| LogError {
        path: path.to_path_buf(),
        cause,
    }
}

/// The directory of log file `path`, below `beneath`, made where missing and entered one
/// component at a time without following a symbolic link.
fn enter_log_dir(beneath: &Path, path: &Path) -> Result<OwnedFd, LogError> {
    let failed = log_err(path);
    std::fs::create_dir_all(beneath).map_err(&failed)?;
    let dir = path.parent().unwrap_or(beneath);
    enter_dirs(beneath, dir, 0o750, &mut |_| Ok(())).map_err(failed)
}

/// Enters directory `dir` below the directory `beneath`, one component at a time and never
/// through a symbolic link, making each that is missing (with `mode`, then handed to `made`).
pub fn enter_dirs(
    beneath: &Path,
    dir: &Path,
    mode: u32,
    made: &mut dyn FnMut(&OwnedFd) -> std::io::Result<()>,
) -> std::io::Result<OwnedFd> {
    use rustix::fs::{mkdirat, openat, Mode, OFlags};
    let relative = dir
        .strip_prefix(beneath)
        .map_err(|_| std::io::Error::other("not below abxd's directory"))?;
    let dir_flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY;
    let mut at = openat(
        rustix::fs::CWD,
        beneath,
        OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for part in relative.components() {
        let std::path::Component::Normal(part) = part else {
            return Err(std::io::Error::other("an unexpected path component"));
        };
        let new = match mkdirat(&at, part, Mode::from_raw_mode(mode)) {
            Ok(()) => true,
            Err(rustix::io::Errno::EXIST) => false,
            Err(err) => return Err(err.into()),
        };
        at = openat(&at, part, dir_flags, Mode::empty())?;
        if new {
            made(&at)?;
        }
    }
    Ok(at)
}

/// Creates log file `path` in `dir` (its directory, entered by [`enter_log_dir`]) anew.
fn create_log(dir: &OwnedFd, path: &Path) -> Result<File, LogError> {
    use rustix::fs::{openat, unlinkat, AtFlags, Mode, OFlags};
    let failed = log_err(path);
    let name = path
        .file_name()
        .ok_or_else(|| failed(std::io::Error::other("no file name")))?;
    match unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
        Err(err) => return Err(failed(err.into())),
    }
    let file_flags = OFlags::WRONLY
        | OFlags::APPEND
        | OFlags::CREATE
        | OFlags::EXCL
        | OFlags::NOFOLLOW
        | OFlags::CLOEXEC;
    let fd =
        openat(dir, name, file_flags, Mode::from_raw_mode(0o640)).map_err(|e| failed(e.into()))?;
    Ok(File::from(fd))
}

/// Opens `path` (below `beneath`) to append to it, created (mode 0644) if missing: each
/// directory on the way made if missing and entered without following a symbolic link, and the
/// file itself never one — for records abxd appends in a directory a hook may write
/// (`index.jsonl`).
pub fn open_append(beneath: &Path, path: &Path) -> Result<File, LogError> {
    use rustix::fs::{openat, Mode, OFlags};
    let dir = enter_log_dir(beneath, path)?;
    let failed = log_err(path);
    let name = path
        .file_name()
        .ok_or_else(|| failed(std::io::Error::other("no file name")))?;
    let flags =
        OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(&dir, name, flags, Mode::from_raw_mode(0o644)).map_err(|e| failed(e.into()))?;
    Ok(File::from(fd))
}

/// Replaces `path` (below `beneath`) with `bytes` at once: written to a new file beside it (made
/// exclusively, never through a link) and renamed over it, each directory on the way entered
/// without following a symbolic link. A reader sees the old file or the new one, never half.
pub fn replace(beneath: &Path, path: &Path, bytes: &[u8]) -> Result<(), LogError> {
    use rustix::fs::{openat, renameat, unlinkat, AtFlags, Mode, OFlags};
    use std::io::Write;
    let dir = enter_log_dir(beneath, path)?;
    let failed = log_err(path);
    let name = path
        .file_name()
        .ok_or_else(|| failed(std::io::Error::other("no file name")))?;
    let mut fresh = std::ffi::OsString::from(".");
    fresh.push(name);
    fresh.push(".abxd-new");
    match unlinkat(&dir, &fresh, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
        Err(err) => return Err(failed(err.into())),
    }
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd =
        openat(&dir, &fresh, flags, Mode::from_raw_mode(0o644)).map_err(|e| failed(e.into()))?;
    File::from(fd).write_all(bytes).map_err(&failed)?;
    renameat(&dir, &fresh, &dir, name).map_err(|e| failed(e.into()))
}

/// Opens a log file to read it, never through a symbolic link (a hook may swap its log for one
/// pointing at a file it could not read itself).
pub fn read_log(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}
