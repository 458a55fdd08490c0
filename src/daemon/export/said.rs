//! What the export's steps run with and said: ArchiveBox's environment, the counts its import
//! ends with, the directory it could not import.

use crate::export::Collection;
use std::path::Path;

/// What ArchiveBox runs with besides `PATH` and the locale (none of abxd's environment: what
/// configures abxd's hooks is not ArchiveBox's config): a `HOME` of its user's own (ArchiveBox
/// keeps its binaries' state below it) — its home directory when it owns one, else the
/// collection; abxd's own when ArchiveBox runs as abxd's user.
pub(super) fn archivebox_env(collection: &Collection) -> Vec<(String, String)> {
    let Some((uid, _)) = collection.run_as else {
        let home = std::env::var("HOME").unwrap_or_else(|_| collection.dir.display().to_string());
        return vec![("HOME".into(), home)];
    };
    use std::os::unix::fs::MetadataExt;
    let home = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|user| user.dir)
        .filter(|dir| std::fs::metadata(dir).is_ok_and(|m| m.is_dir() && m.uid() == uid))
        .unwrap_or_else(|| collection.dir.clone());
    vec![("HOME".into(), home.display().to_string())]
}

/// The counts ArchiveBox's rescan ends with ("Imported: 2, Repaired: 0, Unchanged: 0, Errors:
/// 0"), from its stdout.
pub(super) fn import_counts(stdout: &Path) -> Option<String> {
    lines_of(stdout)
        .into_iter()
        .rev()
        .find(|line| line.starts_with("Imported:"))
        .map(|line| format!("ArchiveBox {line}"))
}

/// The first snapshot directory ArchiveBox's rescan could not import, and why.
pub(super) fn unresolved(stdout: &Path) -> Option<String> {
    lines_of(stdout)
        .into_iter()
        .find(|line| line.starts_with("Unresolved:"))
}

pub(super) fn lines_of(path: &Path) -> Vec<String> {
    let mut text = String::new();
    if let Ok(mut file) = crate::logs::read_log(path) {
        use std::io::Read;
        let _ = file.read_to_string(&mut text);
    }
    text.lines().map(|l| l.trim().to_string()).collect()
}
