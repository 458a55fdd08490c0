//! Installs: the binaries of the selected plugins, provisioned one installer run at a time as
//! children of the orchestrator (`plugins::install` plans them).
//!
//! Invariants: at most one install is under way; each installer run is a process row like a hook
//! (visible in `abxctl ps`, torn down with the daemon); whoever asked is answered once the last
//! run has ended, with what each one did. A binary a due crawl needs is provisioned before the
//! crawl is claimed (`[install] auto`), once per daemon run however many crawls want it.

use super::{Daemon, State};
use crate::control::protocol::{InstallReport, InstalledBinary};
use crate::domain::{ExitOutcome, Kind};
use crate::hook_user::HookUser;
use crate::logs::Logs;
use crate::plugins::install::{self, InstallStep};
use crate::plugins::{Catalog, UnknownPlugins};
use crate::spawn::SpawnRequest;
use crate::store::{Binary, NewProcess};
use crate::supervisor::{ChildPolicy, DaemonChild, Supervisor};
use mio::Token;
use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::time::Duration;

/// The most one installer run may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(900);

/// An installer run: its row, its step, its log files (stdout, stderr), and where it ran and
/// its home (what a path it prints relative to is relative to).
struct InstallRun {
    row: i64,
    step: InstallStep,
    logs: (PathBuf, PathBuf),
    cwd: PathBuf,
    home: Option<PathBuf>,
}

/// Who gets the report when `abxd install` ran the daemon just for the install.
pub(crate) type ReportTo = Box<dyn FnOnce(&InstallReport)>;

/// An install under way.
#[derive(Default)]
pub(super) struct Installer {
    queue: VecDeque<InstallStep>,
    /// The installer run under way.
    running: Option<InstallRun>,
    report: Option<InstallReport>,
    /// Connections waiting for the report.
    pub waiting: Vec<Token>,
    /// Hand the report on and stop the daemon when the install is over (`abxd install` with no
    /// daemon running).
    pub then_stop: Option<ReportTo>,
    /// Binaries whose installer run failed since the daemon started: not tried again for a
    /// crawl (`abxd install` tries again).
    tried: BTreeSet<String>,
}

impl Installer {
    pub fn busy(&self) -> bool {
        self.report.is_some()
    }

    /// Starts an install of `steps`; `problems` are reported as they are.
    pub fn begin(&mut self, steps: Vec<InstallStep>, problems: Vec<String>) {
        self.queue = steps.into();
        self.report = Some(InstallReport {
            binaries: Vec::new(),
            problems,
        });
    }
}

/// The environment an install is planned in: abxd's, but for the `HOME` of the user installs
/// run as (the hooks' user's, who runs what is installed — its library is under it), and the
/// library it shares with the crawl users, where it does.
fn installer_environ(name: &str, installer: Option<&HookUser>) -> Option<String> {
    let library = installer.and_then(|user| user.library.as_ref());
    match (name, installer, library) {
        ("ABXPKG_LIB_DIR", _, Some(library)) => Some(library.dir.display().to_string()),
        ("HOME", Some(user), _) => Some(user.home.display().to_string()),
        ("XDG_CONFIG_HOME", Some(_), _) => None,
        _ => crate::plugins::env::process_environ(name),
    }
}

impl State {
    /// Who installs run as, where that is not abxd's own user.
    fn installer(&self) -> Option<&HookUser> {
        self.hooks.as_ref().ok()?.installer()
    }

    /// Plans the install of the binaries of `plugins` (every enabled one when absent) and starts
    /// it; returns the report at once when there is nothing to run.
    pub(super) fn begin_install(
        &mut self,
        supervisor: &mut Supervisor<DaemonChild>,
        plugins: Option<&[String]>,
    ) -> Result<Option<InstallReport>, UnknownPlugins> {
        let catalog = Catalog::load(&self.config.plugins_dirs);
        let selected = catalog.select(&self.config, plugins)?;
        let installer = self.installer();
        let environ = |name: &str| installer_environ(name, installer);
        let (steps, problems) = install::plan(&catalog, &selected, &self.config, &environ);
        self.installer.begin(steps, problems);
        Ok(self.install_next(supervisor))
    }

    /// Provisions what the due crawls need before one is claimed, as abx-dl does at a crawl's
    /// start (`[install] auto`): the binaries their plugins declare that are neither provisioned
    /// nor failed since the daemon started — found where abxpkg finds them (the `PATH` first),
    /// installed when missing — one installer run each, as children of the orchestrator.
    /// Returns whether claims must wait for an install under way.
    pub(super) fn provision_due_crawls(
        &mut self,
        supervisor: &mut Supervisor<DaemonChild>,
    ) -> bool {
        if self.installer.busy() {
            return true;
        }
        if !self.config.install.auto {
            return false;
        }
        let steps = match self.missing_binaries() {
            Ok(steps) => steps,
            Err(err) => {
                log::warn!("cannot tell which binaries the queued crawls need: {err}");
                return false;
            }
        };
        if steps.is_empty() {
            return false;
        }
        let names: Vec<&str> = steps.iter().map(|s| s.binary.as_str()).collect();
        log::info!("the queued crawls need {}: provisioning", names.join(", "));
        self.installer.begin(steps, Vec::new());
        if let Some(report) = self.install_next(supervisor) {
            log::warn!(
                "no binary could be provisioned: {} failed",
                report.binaries.len()
            );
        }
        self.installer.busy()
    }

    /// The installer runs the crawls a claim would take next lack, each binary once (none while
    /// no crawl worker slot is free: the plugins dirs are not read for nothing).
    fn missing_binaries(&self) -> Result<Vec<InstallStep>, crate::store::StoreError> {
        let (free, only) = self.crawls.room(&self.config);
        if free == 0 {
            return Ok(Vec::new());
        }
        let mut due = self.store.crawls().due_crawls()?;
        due.retain(|crawl| only.is_none_or(|id| crawl.id == id));
        due.truncate(free);
        if due.is_empty() {
            return Ok(Vec::new());
        }
        let installed = self.store.results().installed_binaries()?;
        let catalog = Catalog::load(&self.config.plugins_dirs);
        let installer = self.installer();
        let environ = |name: &str| installer_environ(name, installer);
        let mut steps: Vec<InstallStep> = Vec::new();
        for crawl in due {
            // (A crawl naming a plugin that is gone runs without it, saying so: `worker`.)
            let Ok(mut selected) = catalog.select(&self.config, crawl.plugins.as_deref()) else {
                continue;
            };
            // (An imported crawl's first snapshot runs the parsers of imports.)
            if crawl.has_input {
                let parsers = catalog.import_parsers();
                if let Ok(more) = catalog.select(&self.config, Some(&parsers)) {
                    selected.extend(more);
                }
            }
            let (planned, _) = install::plan(&catalog, &selected, &self.config, &environ);
            for step in planned {
                let known = installed.contains(&step.binary)
                    || self.installer.tried.contains(&step.binary)
                    || steps.iter().any(|s| s.binary == step.binary);
                if !known {
                    steps.push(step);
                }
            }
        }
        Ok(steps)
    }

    /// The spawn request of one of the orchestrator's own errands — an installer run, a step of
    /// an export: a row under the orchestrator, as abxd's user, its logs in `logs/<what>/`.
    pub(super) fn errand(
        &self,
        argv: Vec<String>,
        cwd: String,
        timeout: Duration,
        what: &str,
    ) -> SpawnRequest {
        SpawnRequest {
            process: NewProcess {
                parent_id: Some(self.orchestrator_id),
                kind: Kind::Hook,
                crawl_id: None,
                snapshot_id: None,
                result_id: None,
                argv,
                cwd,
                timeout_ms: Some(timeout.as_millis() as i64),
            },
            env: Vec::new(),
            inherit_env: true,
            logs: Logs::InDir(self.config.data_dir.join("logs").join(what)),
            limits: Default::default(),
            run_as: None,
            umask: None,
            groups: Vec::new(),
            stdin: None,
        }
    }

    /// Starts installer runs until one runs or none is left; returns the report when the
    /// install is over.
    pub(super) fn install_next(
        &mut self,
        supervisor: &mut Supervisor<DaemonChild>,
    ) -> Option<InstallReport> {
        while self.installer.running.is_none() {
            let Some(step) = self.installer.queue.pop_front() else {
                return self.installer.report.take();
            };
            let cwd = self.config.data_dir.display().to_string();
            let mut request = self.errand(step.argv.clone(), cwd, INSTALL_TIMEOUT, "install");
            // (Installed as the hooks' user, who runs what is installed: nothing root-owned in
            // its library, and no install as root it did not ask for.)
            if let Some(user) = self.installer() {
                // (Its home, in the data dir, opened to it as a crawl's worker opens it.)
                if let Err(err) = user.prepare_for(&self.config) {
                    let why = format!("cannot open the data dir to {}: {err}", user.name);
                    self.record_binary_failure(&step, &why);
                    self.record_install(step, None, false, why);
                    continue;
                }
                request.run_as = Some((user.uid, user.gid));
                request.process.cwd = user.home.display().to_string();
                request.env.extend([
                    ("HOME".into(), user.home.display().to_string()),
                    ("USER".into(), user.name.clone()),
                    ("LOGNAME".into(), user.name.clone()),
                ]);
                // (A library the crawl users share: what it installs there, they may update.)
                if let Some(library) = &user.library {
                    request.groups = user.more_groups();
                    request.umask = Some(0o002);
                    let dir = library.dir.display().to_string();
                    request.env.push(("ABXPKG_LIB_DIR".into(), dir));
                }
            }
            log::info!("install: {} for plugin {}", step.binary, step.plugin);
            match supervisor.spawn(
                &self.store,
                &request,
                (DaemonChild::Installer, ChildPolicy::FOREGROUND_HOOK),
                &mut crate::spawn::nothing_more,
            ) {
                Ok(spawned) => {
                    let home = (request.env.iter().rev())
                        .find(|(key, _)| key == "HOME")
                        .map(|(_, home)| PathBuf::from(home))
                        .or_else(|| std::env::var_os("HOME").map(PathBuf::from));
                    self.installer.running = Some(InstallRun {
                        row: spawned.row_id,
                        step,
                        logs: spawned.logs,
                        cwd: PathBuf::from(&request.process.cwd),
                        home,
                    });
                }
                Err(err) => {
                    let why = format!("could not start the installer: {err}");
                    self.record_binary_failure(&step, &why);
                    self.record_install(step, None, false, why);
                }
            }
        }
        None
    }

    /// A child exited: if it was the running installer, records what it did. Returns whether
    /// it was.
    pub(super) fn installer_ended(&mut self, row: i64, outcome: ExitOutcome) -> bool {
        match self.installer.running.take() {
            Some(run) if run.row == row => {
                let InstallRun {
                    step,
                    logs: (stdout, stderr),
                    ..
                } = run;
                let ok = outcome == ExitOutcome::Code(0);
                let said = |log: &std::path::Path| crate::hooks::last_line_of(log);
                let last = if ok {
                    said(&stdout)
                } else {
                    said(&stderr).or_else(|| said(&stdout))
                }
                .unwrap_or_default();
                let detail = if ok {
                    last.clone()
                } else {
                    install::failure_of(&tail_of(&stderr))
                        .unwrap_or_else(|| format!("{outcome}: {last}"))
                };
                let found = ok.then(|| install::Found::parse(&last)).flatten();
                match found.map(|f| f.anchored(&run.cwd, run.home.as_deref())) {
                    Some(found) => self.record_binary(&step, Some(found), None),
                    None if ok => self.record_binary(&step, None, None),
                    None => self.record_binary_failure(&step, &detail),
                }
                self.record_install(step, Some(row), ok, detail);
                true
            }
            other => {
                self.installer.running = other;
                false
            }
        }
    }

    /// Records how this host resolved `step`'s binary: found (where, if the installer said),
    /// or not, with why.
    fn record_binary(
        &mut self,
        step: &InstallStep,
        found: Option<install::Found>,
        failure: Option<&str>,
    ) {
        let binary = Binary {
            name: step.binary.clone(),
            plugin: step.plugin.clone(),
            override_key: step.override_key.clone(),
            abspath: found.as_ref().map(|f| f.abspath.clone()),
            version: found.as_ref().map(|f| f.version.clone()),
            provider: found.map(|f| f.provider),
            failure: failure.map(str::to_string),
            resolved_at: 0,
        };
        if let Err(err) = self.store.results().record_binary(&binary) {
            log::error!("install: cannot record {}: {err}", step.binary);
        }
    }

    fn record_binary_failure(&mut self, step: &InstallStep, why: &str) {
        self.record_binary(step, None, Some(why));
    }

    fn record_install(&mut self, step: InstallStep, row: Option<i64>, ok: bool, detail: String) {
        if !ok {
            log::warn!("install: {} failed: {detail}", step.binary);
            self.installer.tried.insert(step.binary.clone());
        }
        if let Some(report) = &mut self.installer.report {
            report.binaries.push(InstalledBinary {
                plugin: step.plugin,
                binary: step.binary,
                row,
                ok,
                detail,
            });
        }
    }
}

/// The end of a log (its last 64 KiB), as text.
fn tail_of(log: &std::path::Path) -> String {
    use std::io::Read;
    let mut text = Vec::new();
    if let Ok(reader) = crate::logs::read_log(log) {
        let _ = reader.take(1 << 26).read_to_end(&mut text);
    }
    let tail = &text[text.len().saturating_sub(1 << 16)..];
    String::from_utf8_lossy(tail).into_owned()
}

impl Daemon {
    /// Installs the plugins' binaries and then stops: `abxd install` with no daemon running. The
    /// daemon claims no crawls meanwhile; `on_report` gets the report when the install is over.
    pub fn install_then_stop(
        &mut self,
        plugins: Option<&[String]>,
        on_report: ReportTo,
    ) -> Result<(), String> {
        self.state.claims_off = true;
        self.state.installer.then_stop = Some(on_report);
        let begun = self.state.begin_install(&mut self.supervisor, plugins);
        if let Some(report) = begun.map_err(|e| e.to_string())? {
            self.install_over(report);
        }
        Ok(())
    }

    /// Starts the next installer run; when the install is over, answers whoever waits (or
    /// prints the report and stops, for `abxd install`).
    pub(super) fn continue_install(&mut self) {
        if let Some(report) = self.state.install_next(&mut self.supervisor) {
            self.install_over(report);
        }
    }

    /// The install is over: answers whoever waits, or hands the report on and stops.
    fn install_over(&mut self, report: crate::control::protocol::InstallReport) {
        self.state.wake = true;
        let response = crate::control::protocol::Response::Installed(report.clone());
        for token in std::mem::take(&mut self.state.installer.waiting) {
            self.server.reply(token, &response);
        }
        if let Some(on_report) = self.state.installer.then_stop.take() {
            on_report(&report);
            self.state.exit_code = if report.ok() { 0 } else { 1 };
            self.stop();
        }
    }
}
