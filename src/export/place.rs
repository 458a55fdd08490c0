//! Placing a snapshot's files in the collection: a sealed snapshot whole, or over what is there
//! entry by entry; a started one's plugins as they end ([`Placing::AsItGoes`]).
//!
//! Invariants: everything is copied into the collection's staging dir first, then renamed into
//! place — a snapshot (or a plugin's directory) appears whole or not at all; an entry replaced
//! is renamed aside first, so a link swapped into place moves as a link; a plugin's directory is
//! placed once its every hook that started has ended, and one there already is left (the
//! seal's copy brings what changed since).

use super::{copy_confined, make_dirs, replace_entries, Collection, Copied};
use crate::domain::HookResult;
use crate::hooks::index;
use std::path::{Path, PathBuf};

/// How an export places a crawl's snapshots in the collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placing {
    /// Each sealed snapshot once, whole; one there already is left as it is (an export for
    /// ArchiveBox's import).
    Whole,
    /// As it goes (a crawl served from ArchiveBox's queue, whose UI shows a snapshot's files as
    /// its hooks end): each plugin's directory of a started snapshot once the plugin's hooks
    /// ended, then at the seal everything the snapshot made, over those.
    AsItGoes,
    /// What the snapshots made replaces the files of those the collection has, their
    /// `index.jsonl` kept (a redo of ArchiveBox's Snapshots).
    Replacing,
}

/// The plugins of snapshot `snapshot_id` whose every hook that started has ended.
pub(super) fn ended_plugins(results: &[HookResult], snapshot_id: i64) -> Vec<&str> {
    let mut by_plugin: std::collections::BTreeMap<&str, bool> = Default::default();
    for result in results
        .iter()
        .filter(|r| r.snapshot_id == Some(snapshot_id))
    {
        *by_plugin.entry(&result.plugin).or_insert(true) &= result.is_final();
    }
    (by_plugin.into_iter())
        .filter_map(|(plugin, ended)| ended.then_some(plugin))
        .collect()
}

/// Where a crawl's snapshots are placed, and how.
pub(super) struct Placer<'a> {
    /// The collection's data dir.
    pub target: &'a Path,
    pub staging: &'a Path,
    pub collection: &'a Collection,
}

/// What failed placing a snapshot: what was done, where, and why.
type PlaceError = (&'static str, PathBuf, std::io::Error);

/// The [`PlaceError`] of `what` failing at `path`.
fn failed(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> PlaceError {
    let path = path.to_path_buf();
    move |cause| (what, path, cause)
}

impl Placer<'_> {
    /// Copies the directory of each of `plugins` that `source` has and `place` has not yet into
    /// `place`: staged first, then renamed into place whole. (Its files change no more: its
    /// hooks ended. One of its hooks that starts later writes into abxd's copy, which the seal's
    /// copy brings.)
    pub fn place_plugins(
        &self,
        uuid: &str,
        source: &Path,
        place: &Path,
        plugins: &[&str],
    ) -> Result<(), PlaceError> {
        let run_as = self.collection.run_as;
        for plugin in plugins {
            let (from, to) = (source.join(plugin), place.join(plugin));
            let is_dir = |path: &Path| path.symlink_metadata().is_ok_and(|m| m.is_dir());
            if !is_dir(&from) || to.symlink_metadata().is_ok() {
                continue;
            }
            let staged = self.staging.join(format!("{uuid}.{plugin}"));
            let what = "cannot copy a plugin's files into";
            if staged.symlink_metadata().is_ok() {
                std::fs::remove_dir_all(&staged).map_err(failed(what, &staged))?;
            }
            copy_confined(&from, &staged, run_as).map_err(failed(what, &staged))?;
            make_dirs(&self.collection.dir, place, run_as).map_err(failed(what, place))?;
            std::fs::rename(&staged, &to).map_err(failed(what, &to))?;
        }
        Ok(())
    }

    /// Places sealed snapshot `uuid` (its files in `source`) at `place`, which is `there`
    /// already or not: renamed into place whole, or — there — each entry it made replacing
    /// the one of its name (a redo keeping the `index.jsonl` ArchiveBox wrote).
    pub fn place_whole(
        &self,
        uuid: &str,
        source: &Path,
        place: &Path,
        (there, placing): (bool, Placing),
    ) -> Result<Copied, PlaceError> {
        let run_as = self.collection.run_as;
        let staged = self.staging.join(uuid);
        let replaced = self.staging.join(format!("{uuid}.replaced"));
        for old in [&staged, &replaced] {
            if old.symlink_metadata().is_ok() {
                std::fs::remove_dir_all(old).map_err(failed("cannot clear", old))?;
            }
        }
        let copied =
            copy_confined(source, &staged, run_as).map_err(failed("cannot copy into", &staged))?;
        if !there {
            let parent = place.parent().expect("a snapshot's place has a parent");
            make_dirs(self.target, parent, run_as).map_err(failed("cannot make", parent))?;
            std::fs::rename(&staged, place).map_err(failed("cannot move into", place))?;
            return Ok(copied);
        }
        let open = |dir: &Path| make_dirs(self.target, dir, run_as);
        let keep = match placing {
            Placing::Replacing => index::FILE,
            Placing::Whole | Placing::AsItGoes => "",
        };
        (open(&staged).and_then(|staged| {
            let (place, replaced) = (open(place)?, open(&replaced)?);
            replace_entries(&staged, &place, &replaced, keep)
        }))
        .map_err(failed("cannot replace the files in", place))?;
        for old in [&staged, &replaced] {
            std::fs::remove_dir_all(old).map_err(failed("cannot clear", old))?;
        }
        Ok(copied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ResultStatus;

    #[test]
    fn a_plugin_has_ended_when_every_hook_of_it_that_started_has() {
        let result =
            |snapshot_id, plugin: &str, status| HookResult::example(0, snapshot_id, plugin, status);
        let results = [
            result(7, "wget", ResultStatus::Succeeded),
            result(7, "wget", ResultStatus::Started),
            result(7, "title", ResultStatus::Failed),
            result(7, "headers", ResultStatus::Succeeded),
            result(7, "dom", ResultStatus::Queued),
            result(8, "pdf", ResultStatus::Succeeded),
        ];
        assert_eq!(ended_plugins(&results, 7), ["headers", "title"]);
        assert_eq!(ended_plugins(&results, 8), ["pdf"]);
        assert!(ended_plugins(&results, 9).is_empty());
    }
}
