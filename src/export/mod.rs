//! Exports into ArchiveBox collections: a sealed crawl's snapshots copied into an ArchiveBox 0.9
//! data dir as its portable snapshot directories (`portable`), for ArchiveBox's own import
//! (`archivebox update --rescan`, which the daemon runs next: `daemon::export`). This is
//! `abxd worker export`, a process row of its own under the orchestrator.
//!
//! Invariants: ArchiveBox's database is never written here (its import does that); a snapshot
//! appears in the collection whole or not at all — copied into the collection's `tmp/` first,
//! then renamed into place — and one already there is left as it is; only what lies in a
//! snapshot's own directory is copied (`copy`); what is created belongs to the collection's
//! owner; a snapshot's `index.jsonl` is sealed before it is copied (a cancel seals snapshots that
//! never ran to their end). Two placings differ from that ([`Placing`]): a crawl served from
//! ArchiveBox's queue is placed as it goes — each plugin's directory of a started snapshot once
//! that plugin's hooks ended, whole or not at all (a rename), then at the seal every entry the
//! snapshot made, each replacing the one of its name (a rename each, `copy::replace_entries`);
//! and a redo of snapshots ArchiveBox has replaces their entries the same way, the snapshot's
//! `index.jsonl` staying ArchiveBox's.

mod copy;
mod place;

pub use copy::{copy_confined, replace_entries, Copied};
pub use place::Placing;
use place::{ended_plugins, Placer};

use crate::config::Config;
use crate::domain::WorkStatus;
use crate::hooks::index;
use crate::store::{Store, StoreError};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The oldest ArchiveBox that imports portable snapshot directories as abxd writes them.
pub const OLDEST_ARCHIVEBOX: &str = "0.9.73";

/// An ArchiveBox collection abxd may export into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collection {
    pub dir: PathBuf,
    /// Who ArchiveBox runs as there, and what is created belongs to: the data dir's owner, when
    /// abxd is root (else abxd's own user, `None`).
    pub run_as: Option<(u32, u32)>,
}

/// The collection at `dir`, or why abxd cannot export into it.
pub fn collection(dir: &Path) -> Result<Collection, String> {
    let meta = std::fs::metadata(dir)
        .map_err(|err| format!("ArchiveBox data dir {}: {err}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!(
            "ArchiveBox data dir {}: not a directory",
            dir.display()
        ));
    }
    if !dir.join("index.sqlite3").is_file() {
        return Err(format!(
            "{} is not an ArchiveBox data dir (it has no index.sqlite3): run `archivebox init` \
             in it first",
            dir.display()
        ));
    }
    let me = rustix::process::geteuid().as_raw();
    match (me, meta.uid()) {
        (0, 0) => Err(format!(
            "ArchiveBox data dir {} belongs to root, and ArchiveBox does not run as root: give it \
             to the user ArchiveBox runs as (chown -R USER {})",
            dir.display(),
            dir.display()
        )),
        (0, uid) => Ok(Collection {
            dir: dir.to_path_buf(),
            run_as: Some((uid, meta.gid())),
        }),
        (me, uid) if me == uid => Ok(Collection {
            dir: dir.to_path_buf(),
            run_as: None,
        }),
        (me, uid) => Err(format!(
            "ArchiveBox data dir {} belongs to uid {uid}, and abxd runs as uid {me}: abxd imports \
             into a collection of its own user's (or, as root, anyone's)",
            dir.display()
        )),
    }
}

/// Whether the first of `archivebox version`'s lines names a version that imports abxd's
/// directories (none: it does).
pub fn version_problem(said: &[String]) -> Option<String> {
    let first = said.first().map(|l| l.trim()).unwrap_or("");
    let version = |text: &str| -> Option<Vec<u32>> {
        let parts = text.split('.').map(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().ok()
        });
        let parts: Option<Vec<u32>> = parts.take(3).collect();
        parts.filter(|p| p.len() == 3)
    };
    match version(first) {
        Some(found) if Some(&found) >= version(OLDEST_ARCHIVEBOX).as_ref() => None,
        Some(_) => Some(format!(
            "ArchiveBox {first} cannot import portable snapshot directories: abxd needs \
             {OLDEST_ARCHIVEBOX} or newer"
        )),
        None => Some(format!(
            "`archivebox version` did not say a version (it said {:?})",
            crate::printable::line(first)
        )),
    }
}

/// Queues the export of `crawls` (every crawl when empty) into the collection at `target`,
/// filed under ArchiveBox user `user`: what `abxctl export` asks, the daemon or (with it
/// stopped) abxctl itself does. Crawls not sealed yet are exported once they are. Returns the
/// crawls queued, or why none was.
pub fn queue(store: &Store, target: &Path, user: &str, crawls: &[i64]) -> Result<Vec<i64>, String> {
    if let Some(why) = crate::portable::user_problem(user) {
        return Err(format!("--user: {why}"));
    }
    if !target.is_absolute() {
        return Err(format!(
            "--archivebox {}: not an absolute path",
            target.display()
        ));
    }
    collection(target)?;
    let ids = if crawls.is_empty() {
        let all = store.crawls().all().map_err(|e| e.to_string())?;
        all.into_iter().map(|c| c.id).collect()
    } else {
        for &id in crawls {
            if store.crawls().get(id).map_err(|e| e.to_string())?.is_none() {
                return Err(format!("no crawl {id}"));
            }
        }
        crawls.to_vec()
    };
    for &id in &ids {
        store
            .exports()
            .queue(id, target, user)
            .map_err(|e| e.to_string())?;
    }
    Ok(ids)
}

/// What an export of a crawl did.
#[derive(Debug, Default)]
pub struct Exported {
    pub copied: u64,
    pub already_there: u64,
    /// Sealed snapshots with no directory here (cancelled before they ran, or run elsewhere).
    pub without_dir: u64,
    pub files: u64,
    pub bytes: u64,
    /// What was left out, relative to abxd's data dir, and why.
    pub left_out: Vec<(PathBuf, &'static str)>,
    /// For each snapshot in the collection now (copied or there already), ArchiveBox's record
    /// of when it was downloaded — a column its import leaves empty: see [`downloaded_file`].
    pub downloaded: Vec<serde_json::Value>,
}

/// Where `abxd worker export` leaves, for the daemon, the records that tell ArchiveBox when
/// each snapshot of crawl `crawl_id` was downloaded (its sealing): given to
/// `archivebox snapshot create --status sealed` on its stdin after the import, they patch the
/// snapshots by id (nothing is created or queued), as ArchiveBox's own crawl fills that column.
pub fn downloaded_file(data_dir: &Path, crawl_id: i64) -> PathBuf {
    data_dir.join(format!("exports/crawl-{crawl_id}.downloaded.jsonl"))
}

/// ArchiveBox's patch of `snapshot` (by its id): when it was downloaded.
fn downloaded(snapshot: &crate::store::Snapshot, uuid: &str) -> serde_json::Value {
    let at = snapshot.sealed_at.unwrap_or_else(crate::store::now_ms);
    serde_json::json!({
        "type": "Snapshot",
        "id": uuid,
        "depth": snapshot.depth,
        "downloaded_at": index::iso(at),
    })
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Collection(String),
    #[error("snapshot {snapshot}: {what} {}: {cause}", path.display())]
    Io {
        snapshot: i64,
        what: &'static str,
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// Copies the sealed snapshots of crawl `crawl_id` into the collection at `target`, filed under
/// ArchiveBox user `user`, placed as `placing` says.
pub fn export_crawl(
    config: &Config,
    store: &Store,
    crawl_id: i64,
    target: &Path,
    (user, placing): (&str, Placing),
) -> Result<Exported, ExportError> {
    let collection = collection(target).map_err(ExportError::Collection)?;
    let Some(crawl) = store.crawls().get(crawl_id)? else {
        return Err(ExportError::Collection(format!("no crawl {crawl_id}")));
    };
    let placer = Placer {
        target,
        staging: &make_staging(&collection)?,
        collection: &collection,
    };
    let results = store.results().of_crawl(crawl_id)?;
    let mut exported = Exported::default();
    for snapshot in store.crawls().snapshots(crawl_id)? {
        let source = crate::hooks::snapshot_dir(&config.data_dir, crawl_id, snapshot.id);
        let io = |what, path: &Path| {
            let path = path.to_path_buf();
            move |cause| ExportError::Io {
                snapshot: snapshot.id,
                what,
                path,
                cause,
            }
        };
        // (Its place in the collection, by its UUID: one without has none.)
        let place = (snapshot.uuid.as_deref()).map(|uuid| {
            let dir = crate::portable::snapshot_dir(user, snapshot.created_at, &snapshot.url, uuid);
            (uuid, target.join(dir))
        });
        match (snapshot.status, &place) {
            (WorkStatus::Started, Some((uuid, place))) if placing == Placing::AsItGoes => {
                let ended = ended_plugins(&results, snapshot.id);
                (placer.place_plugins(uuid, &source, place, &ended))
                    .map_err(|(what, path, cause)| io(what, &path)(cause))?;
                continue;
            }
            (WorkStatus::Sealed, _) => {}
            _ => continue,
        }
        let (Some((uuid, place)), true) =
            (place, source.symlink_metadata().is_ok_and(|m| m.is_dir()))
        else {
            exported.without_dir += 1;
            continue;
        };
        if !index::is_sealed(&source) {
            let seal = index::Seal {
                title: index::title_of(&results, snapshot.id),
                sealed_at: crate::store::now_ms(),
                size: crate::hooks::bytes_below(&source),
                tags: index::tags_of(&crawl, &store.results().tags(snapshot.id)?),
            };
            index::seal(&config.data_dir, &source, (&crawl, &snapshot), &seal)
                .map_err(io("cannot seal the index in", &source))?;
        }
        exported.downloaded.push(downloaded(&snapshot, uuid));
        let there = place.symlink_metadata().is_ok();
        // (Placed as it goes, a snapshot is whole there once its index is: the seal's copy
        // brings it, and a plugin's copy never does.)
        let whole_there = match placing {
            Placing::Whole => there,
            Placing::AsItGoes => place.join(index::FILE).symlink_metadata().is_ok(),
            Placing::Replacing => false,
        };
        if whole_there {
            exported.already_there += 1;
            continue;
        }
        let copied = (placer.place_whole(uuid, &source, &place, (there, placing)))
            .map_err(|(what, path, cause)| io(what, &path)(cause))?;
        let rel = source.strip_prefix(&config.data_dir).unwrap_or(&source);
        exported.copied += 1;
        exported.files += copied.files;
        exported.bytes += copied.bytes;
        (exported.left_out).extend(
            copied
                .left_out
                .into_iter()
                .map(|(p, why)| (rel.join(p), why)),
        );
    }
    Ok(exported)
}

/// The collection's `tmp/abxd-export`, where snapshots are copied before they are moved into
/// place (on its file system, so the move is a rename).
fn make_staging(collection: &Collection) -> Result<PathBuf, ExportError> {
    let staging = collection.dir.join("tmp/abxd-export");
    make_dirs(&collection.dir, &staging, collection.run_as).map_err(|cause| ExportError::Io {
        snapshot: 0,
        what: "cannot make",
        path: staging.clone(),
        cause,
    })?;
    Ok(staging)
}

/// Makes the directories from `top` down to `dir` where missing, each entered without following
/// a symbolic link, the new ones handed to `owner`.
fn make_dirs(top: &Path, dir: &Path, owner: copy::Owner) -> std::io::Result<OwnedFd> {
    crate::logs::enter_dirs(top, dir, 0o755, &mut |made| copy::hand_over(made, owner))
}

/// `abxd worker export`: exports crawl `crawl_id` into `target` (`placing`: see
/// [`export_crawl`]); prints what was left out, a line each, then what was exported (its last
/// line: the daemon records it). Returns the exit code.
pub fn run_export_worker(
    config: &Config,
    crawl_id: i64,
    target: &Path,
    (user, placing): (&str, Placing),
) -> i32 {
    let exported = Store::open_existing_at(&config.database)
        .map_err(ExportError::from)
        .and_then(|store| export_crawl(config, &store, crawl_id, target, (user, placing)));
    let exported = exported.and_then(|exported| {
        let path = downloaded_file(&config.data_dir, crawl_id);
        let text = index::jsonl(&exported.downloaded);
        crate::logs::enter_dirs(&config.data_dir, path.parent().unwrap(), 0o755, &mut |_| {
            Ok(())
        })
        .and_then(|_| {
            crate::logs::replace(&config.data_dir, &path, text.as_bytes()).map_err(|e| e.cause)
        })
        .map_err(|cause| ExportError::Io {
            snapshot: 0,
            what: "cannot write",
            path,
            cause,
        })?;
        Ok(exported)
    });
    match exported {
        Ok(exported) => {
            for (path, why) in &exported.left_out {
                println!("left out {}: {why}", path.display());
            }
            println!("{}", summary(&exported));
            0
        }
        Err(err) => {
            eprintln!("crawl {crawl_id}: not exported: {err}");
            1
        }
    }
}

/// One line: what an export did.
pub fn summary(exported: &Exported) -> String {
    let mut line = format!(
        "{} snapshots copied ({} files, {} bytes)",
        exported.copied, exported.files, exported.bytes
    );
    if exported.already_there > 0 {
        line.push_str(&format!(", {} there already", exported.already_there));
    }
    if exported.without_dir > 0 {
        line.push_str(&format!(
            ", {} with no directory here",
            exported.without_dir
        ));
    }
    if !exported.left_out.is_empty() {
        line.push_str(&format!(
            ", {} paths left out (links leaving their snapshot and the like)",
            exported.left_out.len()
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archivebox_versions_that_import_portable_directories() {
        let said = |text: &str| -> Vec<String> { text.lines().map(String::from).collect() };
        assert_eq!(version_problem(&said("0.9.73\nArchiveBox v0.9.73 …")), None);
        assert_eq!(version_problem(&said("0.10.1")), None);
        assert_eq!(version_problem(&said("1.0.0rc1")), None);
        let old = version_problem(&said("0.7.2")).unwrap();
        assert!(old.contains("0.9.73 or newer"), "{old}");
        let junk = version_problem(&said("Traceback (most recent call last):")).unwrap();
        assert!(junk.contains("did not say a version"), "{junk}");
    }
}
