//! The SQLite file on disk: the checks made before it is opened, and the files SQLite keeps
//! beside it.
//!
//! Invariant: abxd never follows a symbolic link to its database (or its `-wal` and `-shm`), and
//! never opens one another user could have written.

use crate::store::StoreError;
use std::path::{Path, PathBuf};

/// The device and inode of the file at `path`.
pub(in crate::store) fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The checks the daemon makes before it opens (or creates) its database: neither the file nor
/// SQLite's `-wal` and `-shm` beside it is a symbolic link, and an existing database is abxd's
/// own (its user's, not writable by group or others) — so the rows recovery acts on come from a
/// file nobody else could have written.
pub(in crate::store) fn check_files(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::MetadataExt;
    for suffix in ["", "-wal", "-shm"] {
        let file = beside(path, suffix);
        let Some(meta) = not_a_link(&file)? else {
            continue;
        };
        let me = rustix::process::geteuid().as_raw();
        if let Some(problem) = crate::trust::ownership_problem(meta.uid(), meta.mode(), me) {
            return Err(StoreError::NotOwn {
                path: file,
                problem,
            });
        }
    }
    Ok(())
}

/// What is at `path` (`None`: nothing), refused if it is a symbolic link.
pub(in crate::store) fn not_a_link(path: &Path) -> Result<Option<std::fs::Metadata>, StoreError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(StoreError::Symlink {
            path: path.to_path_buf(),
        }),
        found => Ok(found.ok()),
    }
}

/// The file SQLite keeps beside the database at `path` with `suffix` (`-wal`, `-shm`).
pub(in crate::store) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut file = path.as_os_str().to_os_string();
    file.push(suffix);
    PathBuf::from(file)
}
