//! The confined copy of one snapshot directory: what lies in it, and nothing it points at.
//!
//! Invariants: every directory and file is opened relative to its parent's descriptor, never
//! through a symbolic link (`O_NOFOLLOW`), so nothing outside the source directory is read
//! however its hooks arranged it; a symbolic link is copied only when it is relative and points
//! inside the snapshot (as a link, its target never read), a file with other hard links only
//! when the snapshot's owner or abxd owns it, and anything else — a link leaving the snapshot,
//! a fifo, a socket, a device — is left out and named. What is created is created anew
//! (`O_EXCL`), never through a link, and handed to `owner` when one is given.

use rustix::fs::{
    fchown, fstat, mkdirat, openat, readlinkat, statat, symlinkat, AtFlags, Dir, FileType, Gid,
    Mode, OFlags, Uid,
};
use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// How a directory is opened: never through a symbolic link.
const DIR: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

/// What a copy did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Copied {
    pub files: u64,
    pub bytes: u64,
    /// What was left out (relative to the snapshot), and why.
    pub left_out: Vec<(PathBuf, &'static str)>,
}

/// Who what is created belongs to (`None`: abxd's own user).
pub type Owner = Option<(u32, u32)>;

/// Copies what lies in the directory `from` into the new directory `to` (made here, mode 0755).
pub fn copy_confined(from: &Path, to: &Path, owner: Owner) -> std::io::Result<Copied> {
    let source = openat(rustix::fs::CWD, from, DIR, Mode::empty())?;
    mkdirat(rustix::fs::CWD, to, Mode::from_raw_mode(0o755))?;
    let target = openat(rustix::fs::CWD, to, DIR, Mode::empty())?;
    hand_over(&target, owner)?;
    // The snapshot's owner: its files may have other links (a hook's own).
    let snapshot_owner = fstat(&source)?.st_uid;
    let mut copied = Copied::default();
    copy_dir(
        &source,
        &target,
        Path::new(""),
        snapshot_owner,
        owner,
        &mut copied,
    )?;
    Ok(copied)
}

fn copy_dir(
    source: &OwnedFd,
    target: &OwnedFd,
    at: &Path,
    snapshot_owner: u32,
    owner: Owner,
    copied: &mut Copied,
) -> std::io::Result<()> {
    let mut names = Vec::new();
    for entry in Dir::read_from(source)? {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(name);
        }
    }
    names.sort();
    for name in names {
        let name = OsStr::from_bytes(&name);
        let rel = at.join(name);
        let stat = statat(source, name, AtFlags::SYMLINK_NOFOLLOW)?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => {
                let from = openat(source, name, DIR, Mode::empty())?;
                mkdirat(target, name, Mode::from_raw_mode(0o755))?;
                let to = openat(target, name, DIR, Mode::empty())?;
                hand_over(&to, owner)?;
                copy_dir(&from, &to, &rel, snapshot_owner, owner, copied)?;
            }
            FileType::RegularFile => {
                let linked_elsewhere = stat.st_nlink > 1
                    && stat.st_uid != snapshot_owner
                    && stat.st_uid != rustix::process::geteuid().as_raw();
                if linked_elsewhere {
                    copied
                        .left_out
                        .push((rel, "a hard link to a file the snapshot does not own"));
                    continue;
                }
                copied.bytes += copy_file(source, target, name, owner)?;
                copied.files += 1;
            }
            FileType::Symlink => {
                let points_at = readlinkat(source, name, Vec::new())?;
                let points_at = Path::new(OsStr::from_bytes(points_at.as_bytes()));
                if stays_inside(at, points_at) {
                    symlinkat(points_at, target, name)?;
                    if let Some((uid, gid)) = owner {
                        rustix::fs::chownat(
                            target,
                            name,
                            Some(Uid::from_raw(uid)),
                            Some(Gid::from_raw(gid)),
                            AtFlags::SYMLINK_NOFOLLOW,
                        )?;
                    }
                } else {
                    copied
                        .left_out
                        .push((rel, "a symbolic link leaving the snapshot"));
                }
            }
            _ => copied
                .left_out
                .push((rel, "not a file, a directory or a link")),
        }
    }
    Ok(())
}

/// Moves what lies in directory `staged` into directory `place`, each entry replacing the one
/// of its name there (moved into `replaced` first, to be removed by the caller) — but `keep`,
/// which stays as `place` has it. Every move is a rename between descriptors opened without
/// following a link, so a link swapped into `place` moves as a link, never what it points at.
pub fn replace_entries(
    staged: &OwnedFd,
    place: &OwnedFd,
    replaced: &OwnedFd,
    keep: &str,
) -> std::io::Result<()> {
    for entry in Dir::read_from(staged)? {
        let name = entry?.file_name().to_bytes().to_vec();
        if [&b"."[..], b"..", keep.as_bytes()].contains(&name.as_slice()) {
            continue;
        }
        let name = OsStr::from_bytes(&name);
        match rustix::fs::renameat(place, name, replaced, name) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(err) => return Err(err.into()),
        }
        rustix::fs::renameat(staged, name, place, name)?;
    }
    Ok(())
}

/// Copies regular file `name`; returns its size.
fn copy_file(
    source: &OwnedFd,
    target: &OwnedFd,
    name: &OsStr,
    owner: Owner,
) -> std::io::Result<u64> {
    let read = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let from = openat(source, name, read, Mode::empty())?;
    // (Swapped for something else since it was looked at: not copied.)
    if FileType::from_raw_mode(fstat(&from)?.st_mode) != FileType::RegularFile {
        return Err(std::io::Error::other(format!(
            "{} changed while it was copied",
            name.to_string_lossy()
        )));
    }
    let write = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let to = openat(target, name, write, Mode::from_raw_mode(0o644))?;
    hand_over(&to, owner)?;
    let (mut from, mut to) = (File::from(from), File::from(to));
    std::io::copy(&mut from, &mut to)
}

pub(super) fn hand_over(fd: &impl AsFd, owner: Owner) -> std::io::Result<()> {
    if let Some((uid, gid)) = owner {
        fchown(fd, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)))?;
    }
    Ok(())
}

/// Whether a link in directory `at` (relative to the snapshot) pointing at `points_at` stays in
/// the snapshot: relative, and never climbing above its top on the way.
fn stays_inside(at: &Path, points_at: &Path) -> bool {
    let mut depth = at.components().count() as i64;
    for part in points_at.components() {
        match part {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    !points_at.as_os_str().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_inside_stay_links_outside_are_left_out() {
        assert!(stays_inside(Path::new("wget"), Path::new("page.html")));
        assert!(stays_inside(
            Path::new("wget/a"),
            Path::new("../../title/title.txt")
        ));
        assert!(!stays_inside(Path::new("wget"), Path::new("../../other")));
        assert!(!stays_inside(Path::new(""), Path::new("/etc/shadow")));
        assert!(!stays_inside(Path::new(""), Path::new("a/../../b")));
    }

    #[test]
    fn only_what_lies_in_the_snapshot_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("snap"), dir.path().join("copy"));
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "not the snapshot's").unwrap();
        std::fs::create_dir_all(from.join("wget/sub")).unwrap();
        std::fs::write(from.join("wget/sub/page.html"), "<html>").unwrap();
        std::fs::write(from.join("index.jsonl"), "{}\n").unwrap();
        symlink("sub/page.html", from.join("wget/latest.html")).unwrap();
        symlink(&secret, from.join("wget/stolen")).unwrap();
        symlink("../../secret", from.join("wget/climbing")).unwrap();
        symlink(dir.path(), from.join("everything")).unwrap();
        nix::unistd::mkfifo(&from.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();

        let copied = copy_confined(&from, &to, None).unwrap();
        assert_eq!((copied.files, copied.bytes), (2, 9));
        let left: Vec<String> = (copied.left_out.iter())
            .map(|(p, _)| p.display().to_string())
            .collect();
        assert_eq!(left, ["everything", "fifo", "wget/climbing", "wget/stolen"]);
        assert_eq!(
            std::fs::read_to_string(to.join("wget/latest.html")).unwrap(),
            "<html>"
        );
        assert!(to
            .join("wget/latest.html")
            .symlink_metadata()
            .unwrap()
            .is_symlink());
        for gone in ["everything", "fifo", "wget/climbing", "wget/stolen"] {
            assert!(to.join(gone).symlink_metadata().is_err(), "{gone}");
        }
        // Copying onto what exists is refused, not merged.
        assert!(copy_confined(&from, &to, None).is_err());
    }
}
