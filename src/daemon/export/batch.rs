//! A batch of exports into one collection: what each of its steps is for, what each copy said,
//! and the records of when its snapshots were downloaded, gathered for ArchiveBox's one run.

use super::Step;
use crate::daemon::State;
use crate::export::Collection;
use crate::store::Export;
use std::collections::VecDeque;
use std::path::PathBuf;

/// Exports into one collection, taken together so that ArchiveBox's import — which reads the
/// whole collection — runs once for all of them: each crawl is copied in turn, then one
/// import, then one patch of when the snapshots were downloaded.
pub(super) struct Batch {
    pub(super) collection: Collection,
    /// Exports whose copy is still to run, next first.
    pub(super) to_copy: VecDeque<Export>,
    /// The export being copied.
    pub(super) copying: Option<Export>,
    /// Exports copied, each with what its copy said.
    pub(super) copied: Vec<(Export, String)>,
    /// What the import said of them all.
    pub(super) imported: String,
}

impl Batch {
    /// The exports `step` is for: the one being copied, or every one copied.
    pub(super) fn exports_in(&self, step: Step) -> Vec<&Export> {
        match step {
            Step::Copy => self.copying.iter().collect(),
            _ => self.copied.iter().map(|(export, _)| export).collect(),
        }
    }

    /// What the copy of `export` said, if it was copied.
    pub(super) fn copy_of(&self, export: &Export) -> Option<&str> {
        (self.copied.iter())
            .find(|(copied, _)| copied.crawl_id == export.crawl_id)
            .map(|(_, said)| said.as_str())
    }
}

impl State {
    /// Where the records of when the batch's snapshots were downloaded are gathered for
    /// ArchiveBox (see `export::downloaded_file`).
    pub(super) fn batch_downloaded_file(&self, batch: &Batch) -> PathBuf {
        let first = batch
            .copied
            .first()
            .map_or(0, |(export, _)| export.crawl_id);
        crate::export::downloaded_file(&self.config.data_dir, first).with_extension("batch.jsonl")
    }

    /// Gathers the records the batch's copies left of when their snapshots were downloaded, for
    /// ArchiveBox to take in one run; whether there were any.
    pub(super) fn write_batch_dates(&self, batch: &Batch) -> bool {
        use std::io::Read;
        let mut records = Vec::new();
        for (export, _) in &batch.copied {
            let path = crate::export::downloaded_file(&self.config.data_dir, export.crawl_id);
            if let Ok(mut file) = crate::logs::read_log(&path) {
                let _ = file.read_to_end(&mut records);
            }
        }
        if records.is_empty() {
            return false;
        }
        let path = self.batch_downloaded_file(batch);
        match std::fs::write(&path, &records) {
            Ok(()) => true,
            Err(err) => {
                log::warn!("exports: cannot write {}: {err}", path.display());
                false
            }
        }
    }
}
