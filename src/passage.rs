//! A passage for `abxd run`'s hooks through a directory their user may not enter. Run as root
//! from a checkout in root's home (`/root`, mode 0700 — where `git clone` puts it), hooks run as
//! `--hooks-user nobody` could reach neither the plugins nor the data dir; rather than refuse,
//! `abxd run` gives itself a mount namespace of its own in which that directory is a fresh
//! tmpfs holding only the entries on the way to what the run needs (the checkout), each the
//! same directory as before, bound in place.
//!
//! Invariants: only `abxd run`, only as root, only for a directory the hook user cannot enter
//! on the way to what the run needs; nothing outside the run's own mount namespace changes
//! (no mode, no ACL, no mount of the host's), and it ends with the run; in it the directory
//! shows the hooks — and the run — only those entries, so the rest of root's home is hidden
//! from them rather than opened; every path keeps its name, so what the run records stays true
//! outside it. A directory the user still cannot enter below a kept entry is refused as before.

use crate::hook_user::HookUser;
use std::path::{Path, PathBuf};

/// A directory the hook user cannot enter, and the entries of it the run needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    pub through: PathBuf,
    pub keeps: Vec<PathBuf>,
}

impl std::fmt::Display for Passage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept: Vec<String> = (self.keeps.iter())
            .map(|p| p.display().to_string())
            .collect();
        write!(
            f,
            "this run sees {} as only {} (a mount namespace of its own; nothing else changes)",
            self.through.display(),
            kept.join(", ")
        )
    }
}

/// The passages `user` needs to reach every path of `needed` (absolute): for each first
/// directory on the way it may not enter, the entries right below it on the way to a needed path.
pub fn plan(user: &HookUser, needed: &[PathBuf]) -> Vec<Passage> {
    plan_by(needed, |path| user.blocked_at(path))
}

/// [`plan`], with the first directory on the way to a path that blocks it given by `blocked_at`.
fn plan_by(needed: &[PathBuf], blocked_at: impl Fn(&Path) -> Option<PathBuf>) -> Vec<Passage> {
    let mut passages: Vec<Passage> = Vec::new();
    for path in needed {
        let Some(through) = blocked_at(path) else {
            continue;
        };
        let Some(first) = path
            .strip_prefix(&through)
            .ok()
            .and_then(|below| below.components().next())
        else {
            continue;
        };
        let keep = through.join(first);
        match passages.iter_mut().find(|p| p.through == through) {
            Some(passage) if passage.keeps.contains(&keep) => {}
            Some(passage) => passage.keeps.push(keep),
            None => passages.push(Passage {
                through,
                keeps: vec![keep],
            }),
        }
    }
    // (One passage inside another's kept entry would be hidden by it: the shallower first.)
    passages.sort_by_key(|p| p.through.components().count());
    passages
}

impl Passage {
    /// Opens it in this process's own mount namespace (made on the first call): a tmpfs over
    /// `through`, each kept entry bound back in place. Must run before the process starts a
    /// thread that should see it (a thread keeps the namespace it was started in).
    pub fn open(&self) -> std::io::Result<()> {
        use rustix::fs::{mkdirat, Mode, CWD};
        use rustix::mount::{
            mount, mount_change, move_mount, open_tree, MountFlags, MountPropagationFlags,
            MoveMountFlags, OpenTreeFlags,
        };
        // SAFETY: UnshareFlags::NEWNS unshares the mount namespace (and the filesystem
        // attributes it implies) of this thread alone; no file descriptor table is unshared.
        unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS)? };
        // (Nothing mounted here reaches the host's namespace, nor the other way.)
        mount_change(
            "/",
            MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
        )?;
        let clone = OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::AT_RECURSIVE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC;
        let kinds: Vec<bool> = (self.keeps.iter())
            .map(|keep| std::fs::metadata(keep).map(|meta| meta.is_dir()))
            .collect::<std::io::Result<_>>()?;
        let trees = (self.keeps.iter())
            .map(|keep| open_tree(CWD, keep, clone).map(|tree| (keep, tree)))
            .collect::<Result<Vec<_>, _>>()?;
        mount(
            "tmpfs",
            &self.through,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            Some(c"mode=0755"),
        )?;
        for ((keep, tree), is_dir) in trees.into_iter().zip(kinds) {
            // (A kept file — a config in the home itself — is bound onto a file.)
            match is_dir {
                true => mkdirat(CWD, keep, Mode::from_raw_mode(0o755))?,
                false => drop(std::fs::File::create(keep)?),
            }
            move_mount(tree, "", CWD, keep, MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passage_keeps_the_entries_on_the_way_to_each_needed_path_once() {
        let root = PathBuf::from("/root");
        let blocked = |path: &Path| path.starts_with("/root").then(|| root.clone());
        let needed: Vec<PathBuf> = [
            "/root/abxd/data",
            "/root/abxd/plugins",
            "/root/venv/lib/plugins",
            "/usr/share/abxd/plugins",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(
            plan_by(&needed, blocked),
            [Passage {
                through: root.clone(),
                keeps: vec!["/root/abxd".into(), "/root/venv".into()],
            }]
        );
        assert_eq!(plan_by(&needed[3..], blocked), []);
    }

    #[test]
    fn the_shallower_passage_is_opened_first() {
        let blocked = |path: &Path| {
            Some(match path.starts_with("/srv/a/b") {
                true => PathBuf::from("/srv/a/b"),
                false => PathBuf::from("/srv"),
            })
        };
        let needed = [PathBuf::from("/srv/a/b/c"), PathBuf::from("/srv/d")];
        let order: Vec<PathBuf> = plan_by(&needed, blocked)
            .into_iter()
            .map(|p| p.through)
            .collect();
        assert_eq!(order, [PathBuf::from("/srv"), PathBuf::from("/srv/a/b")]);
    }
}
