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
//! work it writes (see `give`); abxd's own files (database, logs, socket) stay abxd's. With
//! `hooks.crawl_users`, each crawl's hooks run as a member of that group of their own
//! (`crawl_users`), `hooks.user` installing the binaries into the library they share.

mod crawl_users;
mod dirs;
mod exec;

pub use crawl_users::{CrawlUsers, Taken};
pub use exec::exec_as;

use crate::config::Config;
use nix::unistd::{Uid, User};
use std::os::unix::fs::MetadataExt;
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
    /// The library the crawl users and their installer share (`hooks.crawl_users`), where it
    /// is one of them; else its hooks' library is abxpkg's default, below its `HOME`.
    pub library: Option<SharedLibrary>,
}

/// The library of binaries the crawl users and their installer share: `<data_dir>/lib`, of the
/// group `hooks.crawl_users`, set-group-ID and group-writable — abxpkg updates what it found
/// there at every hook's start, whoever installed it. Hooks of these users run with that group
/// beside their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedLibrary {
    pub dir: PathBuf,
    pub gid: u32,
}

impl HookUser {
    /// Its `TMP_DIR` below the shared default `tmp` (none of its own: every hook of abxd's
    /// shares it) — a crawl user's own, apart from other crawls'.
    pub fn tmp_below(&self, tmp: &Path) -> PathBuf {
        match self.library {
            Some(_) => tmp.join(&self.name),
            None => tmp.to_path_buf(),
        }
    }

    /// The groups its processes hold beside its own: the shared library's.
    pub fn more_groups(&self) -> Vec<u32> {
        self.library.iter().map(|library| library.gid).collect()
    }
}

/// Who a crawl's hooks run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunAs {
    /// As abxd's own user: abxd is not root — or is, and `hooks.user = "root"` says so.
    Abxd,
    /// As this user (abxd is root, or holds the capabilities to switch).
    User(HookUser),
    /// Each crawl as a member of its own of `hooks.crawl_users` (taken by its workers).
    PerCrawl(CrawlUsers),
}

impl RunAs {
    /// Who the hooks of crawl `crawl` (that of a worker's work) run as on this host, with the
    /// crawl user it took and holds, if any — its `HOME` and the way to the work opened to it.
    pub fn for_crawl(
        self,
        crawl: Option<i64>,
        config: &Config,
    ) -> Result<(Option<HookUser>, Option<Taken>), String> {
        let (user, taken) = match (self, crawl) {
            (RunAs::Abxd, _) => return Ok((None, None)),
            (RunAs::User(user), _) => (user, None),
            (RunAs::PerCrawl(users), Some(crawl)) => {
                // (The installer's home too, where an operator's install runs: docs/service.md.)
                let installer = &users.installer;
                installer.prepare_for(config).map_err(|err| {
                    format!("cannot open the data dir to {}: {err}", installer.name)
                })?;
                let taken = users
                    .take(crawl, &config.data_dir)
                    .map_err(|err| format!("cannot take a user of {}: {err}", users.group))?;
                (taken.user.clone(), Some(taken))
            }
            (RunAs::PerCrawl(users), None) => {
                return Err(format!("no crawl to take a user of {} for", users.group))
            }
        };
        user.prepare_for(config)
            .map_err(|err| format!("cannot open the data dir to {}: {err}", user.name))?;
        Ok((Some(user), taken))
    }

    /// Who installs the binaries hooks read, where that is not abxd's own user.
    pub fn installer(&self) -> Option<&HookUser> {
        match self {
            RunAs::Abxd => None,
            RunAs::User(user) => Some(user),
            RunAs::PerCrawl(users) => Some(&users.installer),
        }
    }
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
    const NEEDED: u64 = (1 << 0) | (1 << 5) | (1 << 6) | (1 << 7);
    *HOLDS.get_or_init(|| crate::procstat::own_capabilities("Eff") & NEEDED == NEEDED)
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
            let run_as = match &config.hooks.crawl_users {
                None => RunAs::User(user),
                Some(group) => RunAs::PerCrawl(per_crawl(group, user, config)?),
            };
            // (The data dir itself abxd opens to them: `HookUser::prepare`.)
            let above_data = config.data_dir.parent().unwrap_or(Path::new("/"));
            let reached: Vec<&Path> = std::iter::once(above_data)
                .chain(config.plugins_dirs.iter().map(|d| d.as_path()))
                .collect();
            let users: Vec<&HookUser> = match &run_as {
                RunAs::PerCrawl(users) => users.members.iter().collect(),
                RunAs::User(user) => vec![user],
                RunAs::Abxd => Vec::new(),
            };
            let problem = (users.iter())
                .find_map(|user| reached.iter().find_map(|dir| user.reach_problem(dir)));
            match problem {
                Some(why) => Err(why),
                None => Ok(run_as),
            }
        }
    })
}

/// The members of `group` crawls' hooks run as, `installer` installing for them; at least one
/// for each crawl this host runs at once (the crawls of snapshot slots it lends to a fleet may
/// wait for one: `CrawlUsers::take`).
fn per_crawl(group: &str, installer: HookUser, config: &Config) -> Result<CrawlUsers, String> {
    let users = CrawlUsers::of(group, installer, &config.data_dir)?;
    let needed = config.limits.max_crawl_workers as usize;
    if users.members.len() < needed {
        return Err(format!(
            "hooks.crawl_users: group {group:?} lists {} user(s), fewer than the {needed} crawls \
             this host runs at once (limits.max_crawl_workers) in {}: add users to it, or lower \
             the limit",
            users.members.len(),
            config.source.display()
        ));
    }
    Ok(users)
}

/// The decision apart from the machine: the name of the user to switch to, if any.
fn decide<'a>(
    this: &Switcher,
    user: Option<&'a str>,
    source: &Path,
) -> Result<Option<&'a str>, String> {
    match (this.root, user) {
        // (Never root for an abxd that is not: as its own user, which is warned of.)
        (_, Some("root")) => Ok(None),
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
             as (the packages create `abxd-hook`; `abxd run --hooks-user NAME` for one run), or to \
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
        library: None,
    })
}

/// How `status` says who hooks run as, by what [`for_crawls`] decided.
pub fn describe(decided: &Result<RunAs, String>) -> String {
    match decided {
        Ok(RunAs::User(user)) => format!(
            "run as user {} (uid {}) — every crawl's: a hook of one can reach another's running \
             work (set hooks.crawl_users for a user of their own per crawl)",
            user.name, user.uid
        ),
        Ok(RunAs::PerCrawl(users)) => format!(
            "run as a user of their own per crawl, from group {} ({}: {}); binaries installed \
             as {}",
            users.group,
            users.members.len(),
            users
                .members
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            users.installer.name
        ),
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
    if let (Some(group), Some(installer)) = (&config.hooks.crawl_users, &config.hooks.user) {
        return format!(
            "hooks run as a user of their own per crawl, from group {group}; binaries installed \
             as {installer}"
        );
    }
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
