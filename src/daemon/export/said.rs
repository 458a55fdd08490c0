//! What the export's steps run with and said: ArchiveBox's environment, the counts its import
//! ends with, the directory it could not import.

use crate::export::Collection;
use std::path::Path;

/// What ArchiveBox runs with besides `PATH` and the locale (none of abxd's environment: what
/// configures abxd's hooks is not ArchiveBox's config): a `HOME` of its user's own (ArchiveBox
/// keeps its binaries' state below it) — its home directory when it owns one, else the
/// collection; abxd's own when ArchiveBox runs as abxd's user. And a terminal width no line
/// reaches: ArchiveBox's output (rich) would otherwise break a long path in two, and what it
/// could not import would be read as half a line.
pub(in crate::daemon) fn archivebox_env(collection: &Collection) -> Vec<(String, String)> {
    let wide = ("COLUMNS".to_string(), "10000".to_string());
    let Some((uid, _)) = collection.run_as else {
        let home = std::env::var("HOME").unwrap_or_else(|_| collection.dir.display().to_string());
        return vec![("HOME".into(), home), wide];
    };
    use std::os::unix::fs::MetadataExt;
    let home = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|user| user.dir)
        .filter(|dir| std::fs::metadata(dir).is_ok_and(|m| m.is_dir() && m.uid() == uid))
        .unwrap_or_else(|| collection.dir.clone());
    vec![("HOME".into(), home.display().to_string()), wide]
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

/// The first snapshot directory ArchiveBox's rescan could not import, and why (with the lines
/// a narrow terminal broke it into joined again), and how many it could not.
pub(super) fn unresolved(stdout: &Path) -> Option<String> {
    first_unresolved(&lines_of(stdout))
}

fn first_unresolved(lines: &[String]) -> Option<String> {
    let count = lines
        .iter()
        .filter(|l| l.starts_with("Unresolved:"))
        .count();
    let at = lines.iter().position(|l| l.starts_with("Unresolved:"))?;
    let mut first = lines[at].clone();
    for more in &lines[at + 1..] {
        let next_entry = ["Unresolved:", "Imported:", "Repaired:", "Unchanged:"]
            .iter()
            .any(|word| more.starts_with(word));
        if more.is_empty() || next_entry {
            break;
        }
        first.push_str(more);
    }
    match count {
        1 => Some(first),
        n => Some(format!("{first} (and {} more)", n - 1)),
    }
}

pub(in crate::daemon) fn lines_of(path: &Path) -> Vec<String> {
    let mut text = String::new();
    if let Ok(mut file) = crate::logs::read_log(path) {
        use std::io::Read;
        let _ = file.read_to_string(&mut text);
    }
    text.lines().map(|l| l.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::first_unresolved;

    #[test]
    fn what_archivebox_could_not_import_is_read_whole_even_when_broken_across_lines() {
        let said = "[*] Rescanning\nUnresolved:\n/c/archive/users/system/snapshots/20261128/127\n\
                    .0.0.1_9/01a2: timestamp belongs to another snapshot\n\
                    Unresolved: /c/x: another\nImported: 1, Repaired: 0, Unchanged: 0, Errors: 2";
        let lines: Vec<String> = said.lines().map(|l| l.trim().to_string()).collect();
        assert_eq!(
            first_unresolved(&lines).unwrap(),
            "Unresolved:/c/archive/users/system/snapshots/20261128/127.0.0.1_9/01a2: timestamp \
             belongs to another snapshot (and 1 more)"
        );
        assert_eq!(first_unresolved(&lines[..1]), None);
    }
}
