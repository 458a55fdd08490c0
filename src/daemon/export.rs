//! Exports: sealed crawls copied into ArchiveBox collections and imported by ArchiveBox itself,
//! each step a process row under the orchestrator, like an install — `abxd worker export` (the
//! copy, `export`), `archivebox version` (one that imports portable directories?), then
//! `archivebox update --rescan` in the collection, as its owner (ArchiveBox's own import), then
//! `archivebox snapshot create --status sealed` reading when each snapshot was downloaded (a
//! column the import leaves empty; `export::downloaded_file`).
//!
//! Invariants: one export runs at a time, taken only once its crawl is sealed (`store`); abxd
//! never writes ArchiveBox's database; an export that cannot be done — no collection there, no
//! ArchiveBox, the wrong version, an import that fails — ends `failed` saying why, the crawl and
//! its files untouched, and `abxctl export` asks again.

use super::State;
use crate::domain::{ExitOutcome, ExportStatus};
use crate::export::Collection;
use crate::spawn::SpawnRequest;
use crate::store::Export;
use crate::supervisor::{ChildPolicy, DaemonChild, Supervisor};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most `archivebox version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(120);
/// The most the copy, or ArchiveBox's import of the whole collection, may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Copy,
    Version,
    Import,
    Dates,
}

/// The export under way.
struct Running {
    row: i64,
    step: Step,
    export: Export,
    collection: Collection,
    /// Its log files (stdout, stderr).
    logs: (PathBuf, PathBuf),
    /// What the copy said it did.
    copied: String,
}

#[derive(Default)]
pub(super) struct Exporter {
    running: Option<Running>,
}

impl State {
    /// Starts the next export of a sealed crawl, unless one runs.
    pub(super) fn export_next(&mut self, supervisor: &mut Supervisor<DaemonChild>) {
        while self.exporter.running.is_none() && !self.stopping {
            let export = match self.store.exports().take() {
                Ok(Some(export)) => export,
                Ok(None) => return,
                Err(err) => {
                    log::warn!("cannot look for exports to run: {err}");
                    return;
                }
            };
            match crate::export::collection(&export.target) {
                Ok(collection) => {
                    self.export_step(supervisor, export, collection, Step::Copy, String::new())
                }
                Err(why) => self.end_export(&export, ExportStatus::Failed, &why),
            }
        }
    }

    /// Starts `step` of `export`; one that cannot start ends the export.
    fn export_step(
        &mut self,
        supervisor: &mut Supervisor<DaemonChild>,
        export: Export,
        collection: Collection,
        step: Step,
        copied: String,
    ) {
        let request = self.export_request(&export, &collection, step);
        let spawned = supervisor.spawn(
            &self.store,
            &request,
            (DaemonChild::Exporter, ChildPolicy::FOREGROUND_HOOK),
            &mut crate::spawn::nothing_more,
        );
        match spawned {
            Ok(spawned) => {
                log::info!(
                    "export of crawl {} into {}: {} (row {})",
                    export.crawl_id,
                    export.target.display(),
                    request.process.argv[1..].join(" "),
                    spawned.row_id
                );
                let said = format!("{step:?}").to_lowercase();
                if let Err(err) =
                    self.store
                        .exports()
                        .export_step(&export, Some(spawned.row_id), &said)
                {
                    log::warn!("export of crawl {}: {err}", export.crawl_id);
                }
                self.exporter.running = Some(Running {
                    row: spawned.row_id,
                    step,
                    export,
                    collection,
                    logs: spawned.logs,
                    copied,
                });
            }
            Err(err) => {
                let why = match step {
                    Step::Copy => format!("cannot start the copy: {err}"),
                    _ => format!(
                        "{copied}; not imported: cannot run ArchiveBox ({err}): install \
                         ArchiveBox {} or newer, or name its program in archivebox.command",
                        crate::export::OLDEST_ARCHIVEBOX
                    ),
                };
                self.end_export(&export, ExportStatus::Failed, &why);
            }
        }
    }

    fn export_request(&self, export: &Export, collection: &Collection, step: Step) -> SpawnRequest {
        let archivebox = self.config.archivebox.command.display().to_string();
        let target = export.target.display().to_string();
        let (argv, cwd, timeout, env) = match step {
            Step::Copy => {
                let crawl = export.crawl_id.to_string();
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
            Step::Version => (
                vec![archivebox, "version".into()],
                "/".into(),
                VERSION_TIMEOUT,
                archivebox_env(collection),
            ),
            Step::Import => (
                vec![archivebox, "update".into(), "--rescan".into()],
                target,
                STEP_TIMEOUT,
                archivebox_env(collection),
            ),
            Step::Dates => (
                [&archivebox, "snapshot", "create", "--status", "sealed"]
                    .map(String::from)
                    .to_vec(),
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
            request.stdin = Some(self.downloaded_file(export));
        }
        request
    }

    /// A child exited: if it was the running export's step, goes on to the next step or ends
    /// the export. Returns whether it was.
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
            export,
            collection,
            logs: (stdout, stderr),
            copied,
            ..
        } = running;
        let failed = |what: &str| {
            let said = crate::hooks::last_line_of(&stderr)
                .or_else(|| crate::hooks::last_line_of(&stdout))
                .unwrap_or_default();
            format!("{what} {outcome}: {said}")
        };
        let next = match (step, outcome == ExitOutcome::Code(0)) {
            (Step::Copy, true) => Ok((
                Step::Version,
                crate::hooks::last_line_of(&stdout).unwrap_or_default(),
            )),
            (Step::Copy, false) => Err(failed("the copy")),
            (Step::Version, true) => match crate::export::version_problem(&lines_of(&stdout)) {
                None => Ok((Step::Import, copied)),
                Some(why) => Err(format!("{copied}; not imported: {why}")),
            },
            (Step::Version, false) => Err(format!(
                "{copied}; not imported: {}",
                failed("`archivebox version`")
            )),
            (Step::Import, true) => {
                let said = import_counts(&stdout).unwrap_or_default();
                let copied = format!("{copied}; {said}");
                match self.has_dates(&export) {
                    true => Ok((Step::Dates, copied)),
                    false => {
                        self.end_export(&export, ExportStatus::Imported, &copied);
                        self.export_next(supervisor);
                        return true;
                    }
                }
            }
            (Step::Import, false) => Err(format!(
                "{copied}; ArchiveBox's import failed: {}",
                unresolved(&stdout).unwrap_or_else(|| failed("`archivebox update --rescan`"))
            )),
            (Step::Dates, true) => {
                self.end_export(&export, ExportStatus::Imported, &copied);
                self.export_next(supervisor);
                return true;
            }
            (Step::Dates, false) => Err(format!(
                "{copied}; but ArchiveBox did not take when they were downloaded: {}",
                failed("`archivebox snapshot create --status sealed`")
            )),
        };
        match next {
            Ok((step, copied)) => self.export_step(supervisor, export, collection, step, copied),
            Err(why) => {
                self.end_export(&export, ExportStatus::Failed, &why);
                self.export_next(supervisor);
            }
        }
        true
    }

    fn downloaded_file(&self, export: &Export) -> PathBuf {
        crate::export::downloaded_file(&self.config.data_dir, export.crawl_id)
    }

    /// Whether the copy left records of when snapshots were downloaded for ArchiveBox to take.
    fn has_dates(&self, export: &Export) -> bool {
        crate::logs::read_log(&self.downloaded_file(export))
            .and_then(|file| file.metadata())
            .is_ok_and(|meta| meta.len() > 0)
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

/// What ArchiveBox runs with besides `PATH` and the locale (none of abxd's environment: what
/// configures abxd's hooks is not ArchiveBox's config): a `HOME` of its user's own (ArchiveBox
/// keeps its binaries' state below it) — its home directory when it owns one, else the
/// collection; abxd's own when ArchiveBox runs as abxd's user.
fn archivebox_env(collection: &Collection) -> Vec<(String, String)> {
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
fn import_counts(stdout: &Path) -> Option<String> {
    lines_of(stdout)
        .into_iter()
        .rev()
        .find(|line| line.starts_with("Imported:"))
        .map(|line| format!("ArchiveBox {line}"))
}

/// The first snapshot directory ArchiveBox's rescan could not import, and why.
fn unresolved(stdout: &Path) -> Option<String> {
    lines_of(stdout)
        .into_iter()
        .find(|line| line.starts_with("Unresolved:"))
}

fn lines_of(path: &Path) -> Vec<String> {
    let mut text = String::new();
    if let Ok(mut file) = crate::logs::read_log(path) {
        use std::io::Read;
        let _ = file.read_to_string(&mut text);
    }
    text.lines().map(|l| l.trim().to_string()).collect()
}
