//! The hook user's directories: the way to its work opened, its home made, the directories of
//! the work given to it (or to its group) and a sealed crawl's taken back — never through a
//! symbolic link.
//!
//! Invariants: what abxd gives is what it made (a not-root abxd keeps it its own and lets the
//! hook user's group write; a root abxd makes the hook user the owner); abxd's own files
//! (database, logs, socket) are never given, and lose what others could do with them.

use super::{HookUser, KEY};
use crate::config::Config;
use nix::unistd::{Gid, Uid};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

impl HookUser {
    /// Opens the way to its work below `data_dir`: the data dir, its `crawls` and `home` may be
    /// entered by others (never listed or written: `o+x`), and its `HOME` exists, its own. What
    /// others could then reach of abxd's own is closed to them: the database file `database`
    /// (with its `-wal` and `-shm`, which SQLite makes with the file's mode) loses its
    /// permissions for others.
    pub fn prepare_for(&self, config: &Config) -> std::io::Result<()> {
        let database = match &config.database {
            crate::config::Location::File(path) => Some(path.as_path()),
            crate::config::Location::Postgres(_) => None,
        };
        self.prepare(&config.data_dir, database)
    }

    /// [`HookUser::prepare_for`] with the data dir and the database file named.
    pub fn prepare(&self, data_dir: &Path, database: Option<&Path>) -> std::io::Result<()> {
        if let Some(database) = database {
            for suffix in ["", "-wal", "-shm"] {
                let mut name = database.as_os_str().to_owned();
                name.push(suffix);
                let path = PathBuf::from(name);
                let Ok(meta) = std::fs::symlink_metadata(&path) else {
                    continue;
                };
                let mode = meta.mode() & 0o7777;
                if meta.is_file() && mode & 0o007 != 0 {
                    std::fs::set_permissions(
                        &path,
                        std::fs::Permissions::from_mode(mode & !0o007),
                    )?;
                }
            }
        }
        for dir in [data_dir.join("crawls"), data_dir.join("home")] {
            std::fs::create_dir_all(&dir)?;
        }
        // The default TMP_DIR of its hooks (browser profiles, runtime files) is its own — a
        // crawl user's below it, apart from other crawls' (`make_tmp`, as its hooks start).
        let tmp = data_dir.join("tmp");
        std::fs::create_dir_all(&tmp)?;
        if self.library.is_none() {
            self.give(&tmp)?;
        }
        for dir in [
            data_dir.to_path_buf(),
            data_dir.join("crawls"),
            data_dir.join("home"),
            tmp,
        ] {
            let mode = std::fs::symlink_metadata(&dir)?.mode() & 0o7777;
            if mode & 0o001 == 0 {
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode | 0o001))?;
            }
        }
        self.make_home()
    }

    /// Makes its `HOME` where it is missing, owned by it (mode 0700).
    fn make_home(&self) -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        if !self.home.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.home)?;
        }
        // (Not its own: new, or taken from it — systemd gives a StateDirectory= whole to the
        // service's user when that changes, the user's library with it: given back whole.)
        let meta = std::fs::symlink_metadata(&self.home)?;
        if meta.uid() != self.uid {
            self.chown_tree(&self.home)?;
        }
        Ok(())
    }

    /// Makes it the owner of `path` and everything below it, never through a symbolic link — a
    /// directory last, while abxd may still read it.
    fn chown_tree(&self, path: &Path) -> std::io::Result<()> {
        let (uid, gid) = (Uid::from_raw(self.uid), Gid::from_raw(self.gid));
        chown_tree(path, Some(uid), Some(gid))
    }

    /// Gives it the directories from below `above` down to `dir` (a hook's cwd below its crawl
    /// or snapshot dir), never through a symbolic link.
    pub fn own_dirs(&self, above: &Path, dir: &Path) -> std::io::Result<()> {
        let Ok(relative) = dir.strip_prefix(above) else {
            return Err(std::io::Error::other(format!(
                "{} is not below {}",
                dir.display(),
                above.display()
            )));
        };
        let mut path = above.to_path_buf();
        for part in relative.components() {
            path.push(part);
            self.give(&path)?;
        }
        Ok(())
    }

    /// Makes `tmp` (its own `TMP_DIR`, below the shared one) where missing, and gives it.
    pub fn make_tmp(&self, tmp: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        match std::fs::DirBuilder::new().mode(0o700).create(tmp) {
            Err(err) if err.kind() != std::io::ErrorKind::AlreadyExists => return Err(err),
            _ => {}
        }
        self.give(tmp)
    }

    /// Gives it `dir` and everything below it, never through a symbolic link (a link itself is
    /// given, not what it points at).
    pub fn own_tree(&self, dir: &Path) -> std::io::Result<()> {
        self.give(dir)?;
        if std::fs::symlink_metadata(dir)?.is_dir() {
            for entry in std::fs::read_dir(dir)? {
                self.own_tree(&entry?.path())?;
            }
        }
        Ok(())
    }

    /// Gives it `path` (never through a symbolic link). A root abxd makes it the owner. An abxd
    /// that is not root keeps what it made its own and lets the hook user's group write there (a
    /// directory 0770, a file g+rw; no setgid bit, which a hardened unit refuses): abxd, in
    /// that group, reads and clears what hooks make — theirs, of that group, with umask 0007;
    /// what a hook made is left as it is.
    fn give(&self, path: &Path) -> std::io::Result<()> {
        if Uid::effective().is_root() {
            return self.chown(path);
        }
        let meta = std::fs::symlink_metadata(path)?;
        if meta.uid() != Uid::effective().as_raw() || meta.file_type().is_symlink() {
            return Ok(());
        }
        nix::unistd::fchownat(
            nix::fcntl::AT_FDCWD,
            path,
            None,
            Some(Gid::from_raw(self.gid)),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )?;
        let mode = match meta.is_dir() {
            true => 0o770,
            false => (meta.mode() & 0o7777) | 0o060,
        };
        chmod_nofollow(path, meta.is_dir(), mode)
    }

    /// Takes back the directory `dir` of a crawl that sealed: the data dir's (`data_dir`: its
    /// owner's — root gives it to them — and its group), mode 0750 — so no hook, of any crawl
    /// after, enters it; a crawl run again gives it back as its hooks start (`own_dirs`).
    pub fn take_back(&self, dir: &Path, data_dir: &Path) -> std::io::Result<()> {
        if !dir.exists() {
            return Ok(());
        }
        let data = std::fs::metadata(data_dir)?;
        let owner = Uid::effective()
            .is_root()
            .then(|| Uid::from_raw(data.uid()));
        nix::unistd::fchownat(
            nix::fcntl::AT_FDCWD,
            dir,
            owner,
            Some(Gid::from_raw(data.gid())),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )?;
        chmod_nofollow(dir, true, 0o750)
    }

    fn chown(&self, path: &Path) -> std::io::Result<()> {
        nix::unistd::fchownat(
            nix::fcntl::AT_FDCWD,
            path,
            Some(Uid::from_raw(self.uid)),
            Some(Gid::from_raw(self.gid)),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map_err(std::io::Error::from)
    }

    /// What it cannot reach of `path` (a plugins dir, the data dir): the first directory on
    /// the way it may not enter, by the mode bits (ACLs are not read).
    pub fn reach_problem(&self, path: &Path) -> Option<String> {
        let blocked = self.blocked_at(path)?;
        let meta = std::fs::metadata(&blocked).ok()?;
        Some(format!(
            "user {} cannot enter {} (mode {:04o}, owner uid {}): hooks there cannot run as it; \
             put it where {} can read it, or set {KEY} = \"root\"",
            self.name,
            blocked.display(),
            meta.mode() & 0o7777,
            meta.uid(),
            self.name
        ))
    }

    /// The first directory on the way to `path` it may not enter, by the mode bits.
    pub fn blocked_at(&self, path: &Path) -> Option<PathBuf> {
        let groups = user_groups(&self.name, self.gid);
        let mut walked = PathBuf::new();
        for part in path.components() {
            walked.push(part);
            let meta = std::fs::metadata(&walked).ok()?;
            let mode = meta.mode();
            let bits = if meta.uid() == self.uid {
                mode >> 6
            } else if groups.contains(&meta.gid()) {
                mode >> 3
            } else {
                mode
            };
            if meta.is_dir() && bits & 0o1 == 0 {
                return Some(walked);
            }
        }
        None
    }
}

/// Gives `path` and everything below it to `owner` and `group` (each where named), never through
/// a symbolic link — a directory last, while abxd may still read it.
pub(super) fn chown_tree(
    path: &Path,
    owner: Option<Uid>,
    group: Option<Gid>,
) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path)?.is_dir() {
        for entry in std::fs::read_dir(path)? {
            chown_tree(&entry?.path(), owner, group)?;
        }
    }
    let no_follow = nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW;
    nix::unistd::fchownat(nix::fcntl::AT_FDCWD, path, owner, group, no_follow)?;
    Ok(())
}

/// The groups of user `name` (its primary one, `gid`, included).
fn user_groups(name: &str, gid: u32) -> Vec<u32> {
    let Ok(name) = std::ffi::CString::new(name) else {
        return vec![gid];
    };
    nix::unistd::getgrouplist(&name, Gid::from_raw(gid))
        .map(|groups| groups.into_iter().map(Gid::as_raw).collect())
        .unwrap_or_else(|_| vec![gid])
}

/// Sets the mode of `path` (a directory, else a file) to `mode`, opened without following a
/// symbolic link and changed through the descriptor.
fn chmod_nofollow(path: &Path, is_dir: bool, mode: u32) -> std::io::Result<()> {
    use nix::fcntl::OFlag;
    let flags = OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let flags = match is_dir {
        true => flags | OFlag::O_DIRECTORY | OFlag::O_RDONLY,
        false => flags | OFlag::O_PATH,
    };
    let fd = nix::fcntl::open(path, flags, nix::sys::stat::Mode::empty())?;
    match is_dir {
        true => nix::sys::stat::fchmod(&fd, nix::sys::stat::Mode::from_bits_truncate(mode))?,
        // (fchmod refuses an O_PATH descriptor; its /proc link is the file itself.)
        false => std::fs::set_permissions(
            format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd)),
            std::fs::Permissions::from_mode(mode),
        )?,
    }
    Ok(())
}
