//! Who hooks run as. A hook runs code a crawled page can steer (a browser reading a hostile
//! page); abxd as root never lets it run as root unless the operator said so.
//!
//! Invariants: a root abxd runs crawl hooks — and so everything under them — as `hooks.user`;
//! with none set it starts no crawl, and says why naming the key; `hooks.user = "root"` is the
//! one explicit way to run them as root. An abxd that is not root runs hooks as `hooks.user`
//! where it holds CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_KILL (the packaged unit grants
//! them, hooks as `abxd-hook`), refuses crawls where it names another user and abxd lacks them,
//! and else runs them as its own user — which `abxctl status` and `abxd check-config` warn of.
//! The hook user gets a `HOME` and a default `TMP_DIR` it may write, and the directories of the
//! work it writes (see `give`); abxd's own files (database, logs, socket) stay abxd's.

use crate::config::Config;
use nix::unistd::{Gid, Uid, User};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The key that names the user.
pub const KEY: &str = "hooks.user";

/// An unprivileged user hooks run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// A `HOME` it can write: its own home directory when it owns one, else
    /// `<data_dir>/home/<name>` (made by [`HookUser::make_home`]).
    pub home: PathBuf,
}

/// Who a crawl's hooks run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunAs {
    /// As abxd's own user: abxd is not root — or is, and `hooks.user = "root"` says so.
    Abxd,
    /// As this user (abxd is root).
    User(HookUser),
}

/// What this process is, for who its hooks may run as.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Switcher {
    root: bool,
    /// Its effective set holds `CAP_SETUID`, `CAP_SETGID`, `CAP_CHOWN` and `CAP_KILL`: it may
    /// start a child as another user, give it a home and signal it (the packaged unit grants
    /// them).
    may_switch: bool,
    /// Its own user's name (its uid, where it has none).
    own: String,
}

impl Switcher {
    fn this_process() -> Switcher {
        let uid = Uid::effective();
        let own = match User::from_uid(uid) {
            Ok(Some(user)) => user.name,
            _ => uid.to_string(),
        };
        Switcher {
            root: uid.is_root(),
            may_switch: holds_switching_capabilities(),
            own,
        }
    }
}

/// Whether this process's effective capabilities hold `CAP_SETUID`, `CAP_SETGID`, `CAP_CHOWN`
/// and `CAP_KILL` (read once: they never change while abxd runs).
fn holds_switching_capabilities() -> bool {
    static HOLDS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HOLDS.get_or_init(|| {
        const NEEDED: u64 = (1 << 0) | (1 << 5) | (1 << 6) | (1 << 7);
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        (status.lines())
            .find_map(|line| line.strip_prefix("CapEff:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|effective| effective & NEEDED == NEEDED)
    })
}

/// Who crawl hooks run as under `config`, or why no crawl may start.
pub fn for_crawls(config: &Config) -> Result<RunAs, String> {
    decide(
        &Switcher::this_process(),
        config.hooks.user.as_deref(),
        &config.source,
    )
    .and_then(|named| match named {
        None => Ok(RunAs::Abxd),
        Some(name) => {
            let user = user(name, &config.data_dir)?;
            // (The data dir itself abxd opens to it: `HookUser::prepare`.)
            let above_data = config.data_dir.parent().unwrap_or(Path::new("/"));
            let reached =
                std::iter::once(above_data).chain(config.plugins_dirs.iter().map(|d| d.as_path()));
            match reached.into_iter().find_map(|dir| user.reach_problem(dir)) {
                Some(why) => Err(why),
                None => Ok(RunAs::User(user)),
            }
        }
    })
}

/// The decision apart from the machine: the name of the user to switch to, if any.
fn decide<'a>(
    this: &Switcher,
    user: Option<&'a str>,
    source: &Path,
) -> Result<Option<&'a str>, String> {
    match (this.root, user) {
        (true, Some("root")) => Ok(None),
        (true, Some(name)) => Ok(Some(name)),
        (false, None) => Ok(None),
        (false, Some(name)) if name == this.own => Ok(None),
        (false, Some(name)) if this.may_switch => Ok(Some(name)),
        (false, Some(name)) => Err(format!(
            "{KEY} = {name:?} in {}, but abxd runs as {own} without CAP_SETUID, CAP_SETGID, \
             CAP_CHOWN and CAP_KILL: it cannot start its hooks as another user. Grant them (the \
             unit's AmbientCapabilities=, as the packaged unit does) or set {KEY} = {own:?}",
            source.display(),
            own = this.own
        )),
        (true, None) => Err(format!(
            "abxd runs as root and {KEY} is not set: its hooks — and the browsers under them, \
             which read hostile pages — would run as root. Set {KEY} in {} to the user they run \
             as (the packages create `abxd`; `abxd run --hooks-user NAME` for one run), or to \
             \"root\" to accept the risk",
            source.display()
        )),
    }
}

/// The hook user abxd would switch to under `config`, if any (before it checks what that user
/// can reach).
pub fn named(config: &Config) -> Result<Option<HookUser>, String> {
    match decide(
        &Switcher::this_process(),
        config.hooks.user.as_deref(),
        &config.source,
    )? {
        Some(name) => user(name, &config.data_dir).map(Some),
        None => Ok(None),
    }
}

fn user(name: &str, data_dir: &Path) -> Result<HookUser, String> {
    let found = match User::from_name(name) {
        Ok(Some(found)) => found,
        Ok(None) => return Err(format!("{KEY}: no user named {name:?}")),
        Err(err) => return Err(format!("{KEY}: cannot look up user {name:?}: {err}")),
    };
    let owns_home = std::fs::metadata(&found.dir)
        .is_ok_and(|meta| meta.is_dir() && meta.uid() == found.uid.as_raw());
    let home = if owns_home {
        found.dir.clone()
    } else {
        data_dir.join("home").join(name)
    };
    Ok(HookUser {
        name: name.to_string(),
        uid: found.uid.as_raw(),
        gid: found.gid.as_raw(),
        home,
    })
}

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
        // The default TMP_DIR of its hooks (browser profiles, runtime files) is its own.
        let tmp = data_dir.join("tmp");
        std::fs::create_dir_all(&tmp)?;
        self.give(&tmp)?;
        for dir in [
            data_dir.to_path_buf(),
            data_dir.join("crawls"),
            data_dir.join("home"),
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
        let meta = std::fs::symlink_metadata(&self.home)?;
        if meta.uid() != self.uid {
            self.chown(&self.home)?;
        }
        Ok(())
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
        // (Opened without following a link, then changed through the descriptor.)
        let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_CLOEXEC;
        let flags = match meta.is_dir() {
            true => flags | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_RDONLY,
            false => flags | nix::fcntl::OFlag::O_PATH,
        };
        let fd = nix::fcntl::open(path, flags, nix::sys::stat::Mode::empty())?;
        match meta.is_dir() {
            true => nix::sys::stat::fchmod(&fd, nix::sys::stat::Mode::from_bits_truncate(mode))?,
            false => std::fs::set_permissions(
                format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd)),
                std::fs::Permissions::from_mode(mode),
            )?,
        }
        Ok(())
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
        let flags = nix::fcntl::OFlag::O_NOFOLLOW
            | nix::fcntl::OFlag::O_CLOEXEC
            | nix::fcntl::OFlag::O_DIRECTORY
            | nix::fcntl::OFlag::O_RDONLY;
        let fd = nix::fcntl::open(dir, flags, nix::sys::stat::Mode::empty())?;
        nix::sys::stat::fchmod(&fd, nix::sys::stat::Mode::from_bits_truncate(0o750))?;
        Ok(())
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

/// The groups of user `name` (its primary one, `gid`, included).
fn user_groups(name: &str, gid: u32) -> Vec<u32> {
    let Ok(name) = std::ffi::CString::new(name) else {
        return vec![gid];
    };
    nix::unistd::getgrouplist(&name, Gid::from_raw(gid))
        .map(|groups| groups.into_iter().map(Gid::as_raw).collect())
        .unwrap_or_else(|_| vec![gid])
}

/// How `status` says who hooks run as, by what [`for_crawls`] decided.
pub fn describe(decided: &Result<RunAs, String>) -> String {
    match decided {
        Ok(RunAs::User(user)) => format!("run as user {} (uid {})", user.name, user.uid),
        Ok(RunAs::Abxd) if Uid::effective().is_root() => {
            format!("run as root: {KEY} = \"root\" accepts the risk")
        }
        Ok(RunAs::Abxd) => format!(
            "run as abxd's own user (uid {}) — WARNING: a hook can then reach what abxd can (its \
             database, socket and cgroups; the crawl worker's signals): set {KEY} to a user of \
             their own (the packages create {HOOK_USER}) and grant abxd CAP_SETUID, CAP_SETGID, \
             CAP_CHOWN and CAP_KILL",
            Uid::effective()
        ),
        Err(why) => format!("NO CRAWL STARTS: {why}"),
    }
}

/// The user the packages create for hooks, apart from the daemon's.
pub const HOOK_USER: &str = "abxd-hook";

/// What `abxd check-config` says of who hooks run as: whom `config` names, and a warning where
/// that is the user the data dir belongs to — the daemon's, as the service runs it — or where
/// it names none.
pub fn check_line(config: &Config) -> String {
    let owner = std::fs::metadata(&config.data_dir)
        .ok()
        .and_then(|meta| User::from_uid(Uid::from_raw(meta.uid())).ok().flatten())
        .map(|user| user.name);
    match (config.hooks.user.as_deref(), owner) {
        (Some("root"), _) => format!("hooks run as root ({KEY} = \"root\" accepts the risk)"),
        (Some(name), Some(owner)) if name == owner => format!(
            "hooks run as {name}, who owns the data dir — WARNING: the daemon's own user, so a \
             hook can reach what the daemon can; set {KEY} to a user of their own (the \
             packages create {HOOK_USER})"
        ),
        (Some(name), _) => format!("hooks run as {name}"),
        (None, _) => format!(
            "hooks run as the daemon's own user ({KEY} is not set; as root no crawl starts) — \
             WARNING: a hook can then reach what the daemon can"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn switcher(root: bool, may_switch: bool) -> Switcher {
        let own = if root { "root" } else { "abxd" }.to_string();
        Switcher {
            root,
            may_switch,
            own,
        }
    }

    #[test]
    fn root_needs_a_hook_user_or_an_explicit_root_and_others_run_hooks_as_themselves() {
        let source = Path::new("/etc/abxd/supervisor.toml");
        let root = switcher(true, true);
        let why = decide(&root, None, source).unwrap_err();
        assert!(why.contains("hooks.user is not set"), "{why}");
        assert!(why.contains("/etc/abxd/supervisor.toml"), "{why}");
        assert_eq!(decide(&root, Some("root"), source), Ok(None));
        assert_eq!(decide(&root, Some("abxd"), source), Ok(Some("abxd")));
        let plain = switcher(false, false);
        assert_eq!(decide(&plain, None, source), Ok(None));
        assert_eq!(decide(&plain, Some("abxd"), source), Ok(None));
    }

    /// A daemon that is not root starts hooks as another user only with the capabilities to;
    /// without them a named other user stops crawls, saying what to grant.
    #[test]
    fn a_daemon_that_is_not_root_switches_to_the_hook_user_only_with_the_capabilities_to() {
        let source = Path::new("/etc/abxd/supervisor.toml");
        let capable = switcher(false, true);
        assert_eq!(
            decide(&capable, Some(HOOK_USER), source),
            Ok(Some(HOOK_USER))
        );
        assert_eq!(decide(&capable, Some("abxd"), source), Ok(None));
        let why = decide(&switcher(false, false), Some(HOOK_USER), source).unwrap_err();
        assert!(
            why.contains("without CAP_SETUID") && why.contains("AmbientCapabilities="),
            "{why}"
        );
    }
}
