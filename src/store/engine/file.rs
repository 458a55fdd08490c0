//! The SQLite file on disk: the checks made before it is opened, and the files SQLite keeps
//! beside it, and what the daemon asks of the file it has open (`store.file()`).
//!
//! Invariant: abxd never follows a symbolic link to its database (or its `-wal` and `-shm`), and
//! never opens one another user could have written.

use crate::store::sql::args;
use crate::store::{DatabaseFile, StoreError};
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

impl DatabaseFile<'_> {
    /// What became of the file this store opened, if it is no longer at its path: `None` while
    /// the path still names that file (same device and inode).
    pub fn gone(&self) -> Option<String> {
        let opened = self.store.file?;
        match std::fs::metadata(&self.store.path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Some(format!(
                "the database file {} was deleted while abxd had it open",
                self.store.path.display()
            )),
            Err(_) => None,
            Ok(_) if file_id(&self.store.path) == Some(opened) => None,
            Ok(_) => Some(format!(
                "the database file {} was replaced by another file while abxd had it open",
                self.store.path.display()
            )),
        }
    }

    /// Writes a consistent copy of the open database to `to` (a new file): everything recorded,
    /// also when the file at the store's path was deleted meanwhile.
    pub fn save_copy(&self, to: &Path) -> Result<(), StoreError> {
        let partial = to.with_extension("partial");
        let _ = std::fs::remove_file(&partial);
        self.store.db.execute(
            "VACUUM INTO ?1",
            &args![partial.to_string_lossy().into_owned()],
        )?;
        std::fs::rename(&partial, to).map_err(|err| {
            StoreError::Sql(rusqlite::Error::ToSqlConversionFailure(Box::new(err)))
        })?;
        Ok(())
    }

    /// The size of the write-ahead log now (0 if there is none).
    pub fn wal_bytes(&self) -> u64 {
        if self.store.file.is_none() {
            return 0;
        }
        std::fs::metadata(beside(&self.store.path, "-wal")).map_or(0, |m| m.len())
    }

    /// Copies the write-ahead log into the database and truncates it to nothing, if no reader
    /// or writer is in the way; returns whether it did. (A long reader keeps SQLite from
    /// resetting the log, which then grows; `journal_size_limit` only trims it when it resets.)
    pub fn truncate_wal(&self) -> Result<bool, StoreError> {
        let Some(conn) = self.store.sqlite() else {
            return Ok(true);
        };
        let blocked: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        Ok(blocked == 0)
    }
}
