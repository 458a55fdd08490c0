//! Exports: sealed crawls copied into ArchiveBox collections and imported by ArchiveBox itself,
//! each step a process row under the orchestrator, like an install — `abxd worker export` (the
//! copy, `export`), `archivebox version` (one that imports portable directories?), then
//! `archivebox update --rescan` in the collection, as its owner (ArchiveBox's own import), then
//! `archivebox snapshot create --status sealed` reading when each snapshot was downloaded (a
//! column the import leaves empty; `export::downloaded_file`).
//!
//! Exports queued for one collection are taken together (a batch) and imported by one run of
//! ArchiveBox's import, which reads the whole collection whatever it imports: many small crawls
//! into a large collection cost one scan, not one each.
//!
//! Invariants: one batch runs at a time, each export taken only once its crawl is sealed
//! (`store`); a copy that fails ends its own export, not the batch's others; abxd
//! never writes ArchiveBox's database; an export that cannot be done — no collection there, no
//! ArchiveBox, the wrong version, an import that fails — ends `failed` saying why, the crawl and
//! its files untouched, and `abxctl export` asks again.

mod batch;
pub(super) mod said;

use super::State;
use crate::domain::{ExitOutcome, ExportStatus};
use crate::spawn::SpawnRequest;
use crate::store::Export;
use crate::supervisor::{ChildPolicy, DaemonChild, Supervisor};
use batch::Batch;
use said::{archivebox_env, import_counts, lines_of, unresolved};
use std::path::PathBuf;
use std::time::Duration;

/// The most exports into one collection taken together (one import for them all).
const BATCH: usize = 100;
/// The most `archivebox version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(120);
/// The most the copy, or ArchiveBox's import of the whole collection, may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// One crawl of the batch copied (`abxd worker export`).
    Copy,
    Version,
    Import,
    Dates,
}

/// The step under way.
struct Running {
    row: i64,
    step: Step,
    batch: Batch,
    /// Its log files (stdout, stderr).
    logs: (PathBuf, PathBuf),
}

#[derive(Default)]
pub(super) struct Exporter {
    running: Option<Running>,
}

impl State {
    /// Starts the next batch of exports of sealed crawls into one collection, unless one runs.
    pub(super) fn export_next(&mut self, supervisor: &mut Supervisor<DaemonChild>) {
        while self.exporter.running.is_none() && !self.stopping {
            let here = crate::identity::machine_id();
            let batch = match self.store.exports().take_batch(here, BATCH) {
                Ok(batch) if batch.is_empty() => return,
                Ok(batch) => batch,
                Err(err) => {
                    log::warn!("cannot look for exports to run: {err}");
                    return;
                }
            };
            match crate::export::collection(&batch[0].target) {
                Ok(collection) => {
                    let batch = Batch {
                        collection,
                        to_copy: batch.into(),
                        copying: None,
                        copied: Vec::new(),
                        imported: String::new(),
                    };
                    self.export_step(supervisor, batch, Step::Copy);
                }
                Err(why) => {
                    for export in &batch {
                        self.end_export(export, ExportStatus::Failed, &why);
                    }
                }
            }
        }
    }

    /// Starts `step` of `batch` (a copy: of its next crawl); one that cannot start ends the
    /// exports it was for.
    fn export_step(
        &mut self,
        supervisor: &mut Supervisor<DaemonChild>,
        mut batch: Batch,
        step: Step,
    ) {
        if step == Step::Copy {
            batch.copying = batch.to_copy.pop_front();
        }
        let request = self.export_request(&batch, step);
        let spawned = supervisor.spawn(
            &self.store,
            &request,
            (DaemonChild::Exporter, ChildPolicy::FOREGROUND_HOOK),
            &mut crate::spawn::nothing_more,
        );
        match spawned {
            Ok(spawned) => {
                let said = format!("{step:?}").to_lowercase();
                for export in batch.exports_in(step) {
                    log::info!(
                        "export of crawl {} into {}: {} (row {})",
                        export.crawl_id,
                        export.target.display(),
                        request.process.argv[1..].join(" "),
                        spawned.row_id
                    );
                    let recorded =
                        self.store
                            .exports()
                            .export_step(export, Some(spawned.row_id), &said);
                    if let Err(err) = recorded {
                        log::warn!("export of crawl {}: {err}", export.crawl_id);
                    }
                }
                self.exporter.running = Some(Running {
                    row: spawned.row_id,
                    step,
                    batch,
                    logs: spawned.logs,
                });
            }
            Err(err) => {
                let why = match step {
                    Step::Copy => format!("cannot start the copy: {err}"),
                    _ => format!(
                        "not imported: cannot run ArchiveBox ({err}): install ArchiveBox {} or \
                         newer, or name its program in archivebox.command",
                        crate::export::OLDEST_ARCHIVEBOX
                    ),
                };
                self.export_failed(supervisor, batch, step, &why);
            }
        }
    }

    fn export_request(&self, batch: &Batch, step: Step) -> SpawnRequest {
        let archivebox = self.config.archivebox.command.display().to_string();
        let collection = &batch.collection;
        let target = collection.dir.display().to_string();
        let (argv, cwd, timeout, env) = match (step, &batch.copying) {
            (Step::Copy, Some(export)) => {
                let crawl = export.crawl_id.to_string();
                let target = export.target.display().to_string();
                let args = ["export", &crawl, "--to", &target, "--user", &export.owner];
                let argv = crate::pool::worker_argv(&self.config, &args);
                let cwd = self.config.data_dir.display().to_string();
                (
                    argv,
                    cwd,
                    STEP_TIMEOUT,
                    crate::pool::worker_env(&self.config),
                )
            }
            (Step::Version, _) => (
                vec![archivebox, "version".into()],
                "/".into(),
                VERSION_TIMEOUT,
                archivebox_env(collection),
            ),
            (Step::Dates, _) => (
                [&archivebox, "snapshot", "create", "--status", "sealed"]
                    .map(String::from)
                    .to_vec(),
                target,
                STEP_TIMEOUT,
                archivebox_env(collection),
            ),
            (Step::Import | Step::Copy, _) => (
                vec![archivebox, "update".into(), "--rescan".into()],
                target,
                STEP_TIMEOUT,
                archivebox_env(collection),
            ),
        };
        let mut request = self.errand(argv, cwd, timeout, "export");
        request.env = env;
        request.inherit_env = step == Step::Copy;
        request.run_as = (step != Step::Copy).then_some(collection.run_as).flatten();
        if step == Step::Dates {
            request.stdin = Some(self.batch_downloaded_file(batch));
        }
        request
    }

    /// A child exited: if it was the running export's step, goes on to the next step or ends
    /// the exports. Returns whether it was.
    pub(super) fn export_ended(
        &mut self,
        supervisor: &mut Supervisor<DaemonChild>,
        row: i64,
        outcome: ExitOutcome,
    ) -> bool {
        let running = match self.exporter.running.take() {
            Some(running) if running.row == row => running,
            other => {
                self.exporter.running = other;
                return false;
            }
        };
        let Running {
            step,
            mut batch,
            logs: (stdout, stderr),
            ..
        } = running;
        let failed = |what: &str| {
            let said = crate::hooks::last_line_of(&stderr)
                .or_else(|| crate::hooks::last_line_of(&stdout))
                .unwrap_or_default();
            format!("{what} {outcome}: {said}")
        };
        let ok = outcome == ExitOutcome::Code(0);
        match (step, ok) {
            (Step::Copy, true) => {
                let said = crate::hooks::last_line_of(&stdout).unwrap_or_default();
                if let Some(export) = batch.copying.take() {
                    batch.copied.push((export, said));
                }
                self.after_copy(supervisor, batch);
            }
            (Step::Copy, false) => {
                if let Some(export) = batch.copying.take() {
                    self.end_export(&export, ExportStatus::Failed, &failed("the copy"));
                }
                self.after_copy(supervisor, batch);
            }
            (Step::Version, true) => match crate::export::version_problem(&lines_of(&stdout)) {
                None => self.export_step(supervisor, batch, Step::Import),
                Some(why) => {
                    self.export_failed(supervisor, batch, step, &format!("not imported: {why}"))
                }
            },
            (Step::Version, false) => {
                let why = format!("not imported: {}", failed("`archivebox version`"));
                self.export_failed(supervisor, batch, step, &why);
            }
            (Step::Import, true) => {
                batch.imported = import_counts(&stdout).unwrap_or_default();
                match self.write_batch_dates(&batch) {
                    true => self.export_step(supervisor, batch, Step::Dates),
                    false => self.export_done(supervisor, batch),
                }
            }
            (Step::Import, false) => {
                let why =
                    unresolved(&stdout).unwrap_or_else(|| failed("`archivebox update --rescan`"));
                let why = format!("ArchiveBox's import failed: {why}");
                self.export_failed(supervisor, batch, step, &why);
            }
            (Step::Dates, true) => self.export_done(supervisor, batch),
            (Step::Dates, false) => {
                let why = format!(
                    "but ArchiveBox did not take when they were downloaded: {}",
                    failed("`archivebox snapshot create --status sealed`")
                );
                self.export_failed(supervisor, batch, step, &why);
            }
        }
        true
    }

    /// After a copy: the next crawl's, or — once all are copied — ArchiveBox's import of those
    /// that were.
    fn after_copy(&mut self, supervisor: &mut Supervisor<DaemonChild>, batch: Batch) {
        match (batch.to_copy.is_empty(), batch.copied.is_empty()) {
            (false, _) => self.export_step(supervisor, batch, Step::Copy),
            (true, false) => self.export_step(supervisor, batch, Step::Version),
            (true, true) => self.export_next(supervisor),
        }
    }

    /// Every export of `batch` that `step` was for ends failed, saying what each copy did and
    /// `why`; the next batch starts.
    fn export_failed(
        &mut self,
        supervisor: &mut Supervisor<DaemonChild>,
        batch: Batch,
        step: Step,
        why: &str,
    ) {
        for export in batch.exports_in(step) {
            let copied = batch.copy_of(export);
            let detail = match copied {
                Some(copied) => format!("{copied}; {why}"),
                None => why.to_string(),
            };
            self.end_export(export, ExportStatus::Failed, &detail);
        }
        match step {
            // (A copy that could not start: the batch's other crawls go on.)
            Step::Copy => self.after_copy(
                supervisor,
                Batch {
                    copying: None,
                    ..batch
                },
            ),
            _ => self.export_next(supervisor),
        }
    }

    /// Every copied export of `batch` ends imported, saying what its copy and the import did.
    fn export_done(&mut self, supervisor: &mut Supervisor<DaemonChild>, batch: Batch) {
        let together = match batch.copied.len() {
            1 => String::new(),
            n => format!(" (one import for {n} crawls)"),
        };
        let here = crate::identity::machine_id();
        for (export, copied) in &batch.copied {
            let detail = format!("{copied}; {}{together}", batch.imported);
            // (A fleet's: the snapshots that ran on other hosts are copied there, in turn.)
            match self.store.exports().parts_left(export, here) {
                Ok(left) if !left.is_empty() => {
                    let detail = format!(
                        "{detail}; the snapshots that ran on {} are exported there next",
                        left.join(", ")
                    );
                    log::info!("export of crawl {}: {detail}", export.crawl_id);
                    if let Err(err) = self.store.exports().hand_on(export, here, &detail) {
                        log::error!("export of crawl {}: {err}", export.crawl_id);
                    }
                }
                _ => self.end_export(export, ExportStatus::Imported, &detail),
            }
        }
        if let Err(err) = std::fs::remove_file(self.batch_downloaded_file(&batch)) {
            if err.kind() != std::io::ErrorKind::NotFound {
                log::warn!("exports: {err}");
            }
        }
        self.export_next(supervisor);
    }

    fn end_export(&mut self, export: &Export, status: ExportStatus, detail: &str) {
        let crawl = export.crawl_id;
        match status {
            ExportStatus::Failed => log::warn!("export of crawl {crawl}: {detail}"),
            _ => log::info!("export of crawl {crawl}: {status}: {detail}"),
        }
        if let Err(err) = self.store.exports().end(export, status, detail) {
            log::error!("export of crawl {crawl}: cannot record its end: {err}");
        }
    }
}
