//! Users of their own per crawl (`hooks.crawl_users`): the members of a group, each serving one
//! crawl at a time on this host, so that a hook a hostile page took over cannot write into
//! another running crawl's directories, nor signal or trace its browser.
//!
//! Invariant: on one host a member serves at most one crawl at a time — every worker of a crawl
//! (its crawl worker, its snapshot workers, lent ones included) holds the member's lock file
//! shared, naming the crawl, for as long as it lives; a member is given to another crawl only
//! when no worker holds it. The choice is made under one lock of the whole pool, so two workers
//! never take the same member for different crawls. (Lock files are in a directory of abxd's own:
//! no hook can open one.) The library of binaries is the one thing members share
//! ([`SharedLibrary`]).

use super::{HookUser, SharedLibrary};
use nix::fcntl::{Flock, FlockArg};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The members of `hooks.crawl_users`, and who installs the binaries they share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrawlUsers {
    /// The group's name.
    pub group: String,
    /// `hooks.user`: installs the binaries into the library every member reads.
    pub installer: HookUser,
    /// The users crawls' hooks run as, in the group's order.
    pub members: Vec<HookUser>,
}

/// A member taken for a crawl: its lock file held shared for as long as this lives.
#[derive(Debug)]
pub struct Taken {
    pub user: HookUser,
    _held: Flock<std::fs::File>,
}

/// What a member's lock file says, as [`choose`] decides by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// No worker holds it.
    Free,
    /// Workers of this crawl hold it.
    Serving(i64),
}

/// The member `crawl` takes: the one already serving it, else the first free one; `None` when
/// every member serves another crawl.
pub fn choose(slots: &[Slot], crawl: i64) -> Option<usize> {
    slots
        .iter()
        .position(|slot| *slot == Slot::Serving(crawl))
        .or_else(|| slots.iter().position(|slot| *slot == Slot::Free))
}

/// The directory below the data dir that holds a lock file per member.
const LOCK_DIR: &str = "crawl-users";

/// The directory below the data dir of the library the crawl users share.
const LIBRARY: &str = "lib";

/// Whether `library` is as it must be but for its group.
fn lost_its_group(library: &SharedLibrary) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(&library.dir).is_ok_and(|meta| {
        meta.is_dir() && meta.gid() != library.gid && meta.mode() & 0o2020 == 0o2020
    })
}

/// What is wrong with `library` as the crawl users' shared library, if anything.
fn library_problem(library: &SharedLibrary) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dir = library.dir.display();
    let meta = match std::fs::symlink_metadata(&library.dir) {
        Ok(meta) => meta,
        Err(err) => return Some(format!("{dir}: {err}")),
    };
    let mode = meta.mode() & 0o7777;
    if !meta.is_dir() {
        return Some(format!("{dir} is not a directory"));
    }
    if meta.gid() != library.gid || mode & 0o2020 != 0o2020 {
        return Some(format!("{dir} is of gid {}, mode {mode:04o}", meta.gid()));
    }
    None
}

impl CrawlUsers {
    /// The members of group `group` (as the group database lists them), their homes below
    /// `data_dir` unless they own one, sharing `<data_dir>/lib` with `installer` — which must be
    /// that group's, set-group-ID and group-writable (the packages make it; abxd, under a unit
    /// that refuses set-group-ID bits, cannot).
    pub fn of(group: &str, mut installer: HookUser, data_dir: &Path) -> Result<CrawlUsers, String> {
        let found = match nix::unistd::Group::from_name(group) {
            Ok(Some(found)) => found,
            Ok(None) => return Err(format!("hooks.crawl_users: no group named {group:?}")),
            Err(err) => {
                return Err(format!(
                    "hooks.crawl_users: cannot look up {group:?}: {err}"
                ))
            }
        };
        let library = SharedLibrary {
            dir: data_dir.join(LIBRARY),
            gid: found.gid.as_raw(),
        };
        if lost_its_group(&library) {
            // (systemd gives a StateDirectory= whole to the service's user when that changes —
            // a drop-in that runs abxd as root, and back: the group is given back, modes kept.)
            log::warn!("{} lost group {group}: given back", library.dir.display());
            let gid = Some(nix::unistd::Gid::from_raw(library.gid));
            if let Err(err) = super::dirs::chown_tree(&library.dir, None, gid) {
                log::warn!(
                    "cannot give {} back to {group}: {err}",
                    library.dir.display()
                );
            }
        }
        if let Some(why) = library_problem(&library) {
            return Err(format!(
                "hooks.crawl_users: {why}: the crawl users' library must be a directory of group \
                 {group}, set-group-ID and group-writable — as root, `install -d -o {installer} \
                 -g {group} -m 2775 {dir}` (the packages make it)",
                installer = installer.name,
                dir = library.dir.display()
            ));
        }
        installer.library = Some(library.clone());
        let members = found
            .mem
            .iter()
            .map(|name| {
                let mut member = super::user(name, data_dir)?;
                member.library = Some(library.clone());
                Ok(member)
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(CrawlUsers {
            group: group.to_string(),
            installer,
            members,
        })
    }

    /// Takes the member that serves `crawl` on this host — waiting while every one serves
    /// another — by the lock files in `<data_dir>/crawl-users` (made, abxd's own, where
    /// missing).
    pub fn take(&self, crawl: i64, data_dir: &Path) -> std::io::Result<Taken> {
        use std::os::unix::fs::DirBuilderExt;
        let lock_dir = &data_dir.join(LOCK_DIR);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(lock_dir)?;
        if self.members.is_empty() {
            return Err(std::io::Error::other(format!(
                "group {} lists no user",
                self.group
            )));
        }
        let mut waited = false;
        loop {
            if let Some(taken) = self.try_take(crawl, lock_dir)? {
                return Ok(taken);
            }
            if !waited {
                log::warn!(
                    "crawl {crawl} waits for a user of group {}: all {} serve other crawls",
                    self.group,
                    self.members.len()
                );
                waited = true;
            }
            // (Until the crawls of one member — chosen by the crawl, to spread the waiters —
            // let go of it; then every member is looked at again.)
            let member = &self.members[crawl.unsigned_abs() as usize % self.members.len()];
            let file = open(&lock_dir.join(&member.name))?;
            drop(lock(file, FlockArg::LockExclusive)?);
        }
    }

    fn try_take(&self, crawl: i64, lock_dir: &Path) -> std::io::Result<Option<Taken>> {
        let _pool = lock(open(&lock_dir.join(".pool"))?, FlockArg::LockExclusive)?;
        let mut files = Vec::with_capacity(self.members.len());
        let mut slots = Vec::with_capacity(self.members.len());
        for member in &self.members {
            let file = open(&lock_dir.join(&member.name))?;
            let (file, slot) = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(held) => (held.unlock().map_err(|(_, err)| err)?, Slot::Free),
                Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                    let mut named = String::new();
                    file.rewind()?;
                    file.read_to_string(&mut named)?;
                    (file, Slot::Serving(named.trim().parse().unwrap_or(-1)))
                }
                Err((_, err)) => return Err(err.into()),
            };
            files.push(file);
            slots.push(slot);
        }
        let Some(index) = choose(&slots, crawl) else {
            return Ok(None);
        };
        let mut file = files.swap_remove(index);
        if slots[index] == Slot::Free {
            file.set_len(0)?;
            file.rewind()?;
            writeln!(file, "{crawl}")?;
        }
        // (Shared: every worker of the crawl holds it; the pool's lock keeps this apart from
        // another crawl's look at it.)
        let held = lock(file, FlockArg::LockSharedNonblock)?;
        Ok(Some(Taken {
            user: self.members[index].clone(),
            _held: held,
        }))
    }
}

fn open(path: &PathBuf) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
        .open(path)
}

fn lock(file: std::fs::File, how: FlockArg) -> std::io::Result<Flock<std::fs::File>> {
    Flock::lock(file, how).map_err(|(_, err)| err.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crawl_joins_its_member_else_takes_the_first_free_one() {
        use Slot::*;
        assert_eq!(choose(&[Serving(3), Free, Serving(7)], 7), Some(2));
        assert_eq!(choose(&[Serving(3), Free, Free], 7), Some(1));
        assert_eq!(choose(&[Serving(3), Serving(4)], 7), None);
        assert_eq!(choose(&[], 7), None);
    }

    fn member(name: &str) -> HookUser {
        HookUser {
            name: name.into(),
            uid: 1,
            gid: 1,
            home: PathBuf::from("/nonexistent"),
            library: None,
        }
    }

    /// Workers of one crawl share a member; another crawl gets another, and takes the first
    /// back only once every worker holding it is gone.
    #[test]
    fn a_member_serves_one_crawl_until_its_last_worker_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let users = CrawlUsers {
            group: "crawlers".into(),
            installer: member("installer"),
            members: vec![member("one"), member("two")],
        };
        let locks = dir.path().join(LOCK_DIR);
        let crawl_worker = users.take(7, dir.path()).unwrap();
        let snapshot_worker = users.take(7, dir.path()).unwrap();
        assert_eq!(crawl_worker.user.name, "one");
        assert_eq!(snapshot_worker.user.name, "one");
        let other = users.take(8, dir.path()).unwrap();
        assert_eq!(other.user.name, "two");
        assert!(users.try_take(9, &locks).unwrap().is_none());
        drop(crawl_worker);
        assert!(users.try_take(9, &locks).unwrap().is_none());
        drop(snapshot_worker);
        assert_eq!(users.try_take(9, &locks).unwrap().unwrap().user.name, "one");
    }
}
