//! Hooks: running a set of hooks for one snapshot or crawl, and turning each run into a result.
//!
//! The contract is SPEC §4: argv `--url=… --snapshot-id=… --crawl-id=…`, cwd
//! `<snapshot dir>/<plugin>/`, the merged config and the ids as environment, stdout and stderr
//! to log files, JSON records on stdout. Invariants: foreground hooks run one at a time in order,
//! background hooks are started in order and run alongside; a hook whose result is already
//! final (succeeded, failed or skipped) is never started again — only interrupted ones are; every run that ends gets its result recorded from its exit,
//! its records and its deadline, by the rules of [`interpret`].

use crate::config::Config;
use crate::plugins::Hook;
use crate::spawn::{Logs, SpawnRequest};
use crate::store::{
    Crawl, EndReason, ExitOutcome, Kind, NewProcess, ResultStatus, Snapshot, Store, StoreError,
};
use crate::supervisor::{ChildPolicy, Supervisor};
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The exit code by which a hook says it skipped (e.g. a tool it needs is missing).
pub const EXIT_SKIPPED: i32 = 10;

/// How much of a hook's stdout is read for records.
const MAX_STDOUT_SCAN: u64 = 16 << 20;
/// The longest output text kept on a result.
const MAX_OUTPUT_TEXT: usize = 4096;

pub fn crawl_dir(config: &Config, crawl_id: i64) -> PathBuf {
    config.data_dir.join("crawls").join(crawl_id.to_string())
}

pub fn snapshot_dir(config: &Config, crawl_id: i64, snapshot_id: i64) -> PathBuf {
    crawl_dir(config, crawl_id)
        .join("snapshots")
        .join(snapshot_id.to_string())
}

/// What a set of hooks runs for: a crawl (crawl hooks) or one of its snapshots.
#[derive(Debug, Clone)]
pub struct Scope {
    pub crawl: Crawl,
    pub snapshot: Option<Snapshot>,
    /// The process row of the worker running the hooks.
    pub parent_row: i64,
}

impl Scope {
    fn dir(&self, config: &Config) -> PathBuf {
        match &self.snapshot {
            Some(s) => snapshot_dir(config, self.crawl.id, s.id),
            None => crawl_dir(config, self.crawl.id),
        }
    }

    fn url(&self) -> &str {
        match &self.snapshot {
            Some(s) => &s.url,
            None => self.crawl.urls.first().map(String::as_str).unwrap_or(""),
        }
    }
}

pub fn hook_timeout(config: &Config, hook: &Hook) -> Duration {
    config
        .plugins
        .get(&hook.plugin)
        .and_then(|p| p.timeout)
        .unwrap_or(config.timeouts.hook_timeout)
}

/// The spawn request of `hook` in `scope`, for result `result_id`.
fn spawn_request(config: &Config, hook: &Hook, scope: &Scope, result_id: i64) -> SpawnRequest {
    let dir = scope.dir(config);
    let cwd = dir.join(&hook.plugin);
    let timeout = hook_timeout(config, hook);
    let mut argv = vec![
        hook.path.display().to_string(),
        format!("--url={}", scope.url()),
    ];
    if let Some(snapshot) = &scope.snapshot {
        argv.push(format!("--snapshot-id={}", snapshot.id));
    }
    argv.push(format!("--crawl-id={}", scope.crawl.id));

    let crawl_dir = crawl_dir(config, scope.crawl.id);
    let mut env: Vec<(String, String)> = vec![
        ("DATA_DIR".into(), config.data_dir.display().to_string()),
        ("TIMEOUT".into(), timeout.as_secs().max(1).to_string()),
        ("CRAWL_ID".into(), scope.crawl.id.to_string()),
        ("CRAWL_DIR".into(), crawl_dir.display().to_string()),
        ("URL".into(), scope.url().to_string()),
        ("PLUGIN".into(), hook.plugin.clone()),
    ];
    if let Some(snapshot) = &scope.snapshot {
        env.push(("SNAPSHOT_ID".into(), snapshot.id.to_string()));
        env.push(("SNAPSHOT_DIR".into(), dir.display().to_string()));
        env.push(("SNAPSHOT_DEPTH".into(), snapshot.depth.to_string()));
    }
    if let Some(plugin) = config.plugins.get(&hook.plugin) {
        env.extend(plugin.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let logs = dir.join("logs");
    SpawnRequest {
        process: NewProcess {
            parent_id: Some(scope.parent_row),
            kind: Kind::Hook,
            crawl_id: Some(scope.crawl.id),
            snapshot_id: scope.snapshot.as_ref().map(|s| s.id),
            result_id: Some(result_id),
            argv,
            cwd: cwd.display().to_string(),
            timeout_ms: Some(timeout.as_millis() as i64),
        },
        env,
        logs: Logs::Files {
            stdout: logs.join(format!("{}.stdout.log", hook.file_name)),
            stderr: logs.join(format!("{}.stderr.log", hook.file_name)),
        },
    }
}

/// What a finished hook run amounts to.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: ResultStatus,
    pub output: Option<String>,
    /// URLs reported by `{"type":"Snapshot","url":…}` records.
    pub discovered: Vec<String>,
}

/// Derives a result from how the hook ended and what it printed (SPEC §4): a record's status
/// wins when the hook exited 0; otherwise 0 = succeeded, 10 = skipped, anything else = failed;
/// a hook stopped at its deadline failed with reason timeout. (A background hook that wants to
/// succeed when its snapshot ends traps SIGTERM and exits 0.)
pub fn interpret(
    stdout: &Path,
    stderr: &Path,
    outcome: ExitOutcome,
    reason: EndReason,
    timeout: Duration,
) -> Outcome {
    let printed = scan_stdout(stdout);
    let last_line = printed.last_text.clone().or_else(|| last_line_of(stderr));
    let recorded_output = printed.output.clone().or(last_line);
    let (status, output) = match (reason, outcome) {
        (EndReason::Timeout, _) => (
            ResultStatus::Failed,
            Some(format!(
                "timeout: still running after {}",
                humantime::format_duration(timeout)
            )),
        ),
        (_, ExitOutcome::Code(0)) => (
            printed.status.unwrap_or(ResultStatus::Succeeded),
            recorded_output,
        ),
        (_, ExitOutcome::Code(EXIT_SKIPPED)) => (ResultStatus::Skipped, recorded_output),
        (_, ExitOutcome::Code(code)) => (
            ResultStatus::Failed,
            Some(recorded_output.unwrap_or_else(|| format!("exited with code {code}"))),
        ),
        (_, ExitOutcome::Signal(signal)) => (
            ResultStatus::Failed,
            Some(format!(
                "killed by signal {signal}{}",
                recorded_output
                    .map(|o| format!(": {o}"))
                    .unwrap_or_default()
            )),
        ),
    };
    // Records that could not be used are reported with the output, not silently dropped.
    let output = match (output, printed.ignored.is_empty()) {
        (output, true) => output,
        (output, false) => Some(format!(
            "{}[{} records ignored: {}]",
            output.map(|o| format!("{o} ")).unwrap_or_default(),
            printed.ignored.len(),
            printed.ignored.join(", ")
        )),
    };
    Outcome {
        status,
        output: output.map(|o| truncate(&o)),
        discovered: printed.discovered,
    }
}

fn truncate(text: &str) -> String {
    if text.len() <= MAX_OUTPUT_TEXT {
        return text.to_string();
    }
    let mut end = MAX_OUTPUT_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[derive(Default)]
struct Printed {
    status: Option<ResultStatus>,
    output: Option<String>,
    discovered: Vec<String>,
    last_text: Option<String>,
    /// Why each ignored record was ignored.
    ignored: Vec<String>,
}

fn scan_stdout(path: &Path) -> Printed {
    let mut printed = Printed::default();
    let Ok(file) = std::fs::File::open(path) else {
        return printed;
    };
    let mut reader = BufReader::new(file.take(MAX_STDOUT_SCAN));
    let mut line = Vec::new();
    while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(record) if record.get("type").is_some() => apply_record(&record, &mut printed),
            // A line that opens a JSON object but is none: a broken record.
            Err(_) if text.starts_with('{') => printed.ignored.push("not valid JSON".into()),
            _ if !text.is_empty() => printed.last_text = Some(text.to_string()),
            _ => {}
        }
        line.clear();
    }
    printed
}

fn apply_record(record: &serde_json::Value, printed: &mut Printed) {
    let field = |name: &str| record.get(name).and_then(|v| v.as_str());
    match field("type") {
        Some("ArchiveResult") => {
            printed.status = match field("status") {
                Some("succeeded") => Some(ResultStatus::Succeeded),
                Some("failed") => Some(ResultStatus::Failed),
                Some("skipped") => Some(ResultStatus::Skipped),
                _ => printed.status,
            };
            if let Some(output) = field("output") {
                printed.output = Some(output.to_string());
            }
        }
        Some("Snapshot") => {
            if let Some(url) = field("url") {
                printed.discovered.push(url.to_string());
            }
        }
        Some(other) => printed.ignored.push(format!("unknown type {other:?}")),
        None => printed.ignored.push("a type that is not a string".into()),
    }
}

fn last_line_of(path: &Path) -> Option<String> {
    let text = std::fs::read(path).ok()?;
    let tail = &text[text.len().saturating_sub(MAX_OUTPUT_TEXT)..];
    String::from_utf8_lossy(tail)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// The files under `dir` (relative paths, sorted) and their total size.
pub fn output_files(dir: &Path) -> (Vec<String>, u64) {
    let mut files = Vec::new();
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
                if let Ok(rel) = entry.path().strip_prefix(dir) {
                    files.push(rel.display().to_string());
                }
            }
        }
    }
    files.sort();
    (files, total)
}

struct Running {
    hook: Hook,
    result_id: i64,
    request: SpawnRequest,
}

/// Runs one scope's hooks through a [`Supervisor`]: foreground in order, background alongside.
pub struct HookRunner {
    scope: Scope,
    pending: VecDeque<Hook>,
    foreground: Option<i64>,
    running: HashMap<i64, Running>,
}

impl HookRunner {
    /// Prepares to run `hooks`, recording a result row for each one up front: a scope whose
    /// results are all final has run every hook (which is how recovery tells a finished snapshot
    /// from an interrupted one).
    pub fn new(
        store: &mut Store,
        scope: Scope,
        hooks: Vec<Hook>,
    ) -> Result<HookRunner, StoreError> {
        for hook in &hooks {
            store.result_for(
                scope.crawl.id,
                scope.snapshot.as_ref().map(|s| s.id),
                &hook.plugin,
                &hook.file_name,
            )?;
        }
        Ok(HookRunner {
            scope,
            pending: hooks.into(),
            foreground: None,
            running: HashMap::new(),
        })
    }

    /// Starts hooks in order until a foreground hook is running or none is left. Hooks whose
    /// result already succeeded are passed over.
    pub fn start_next(
        &mut self,
        config: &Config,
        supervisor: &mut Supervisor,
        store: &mut Store,
    ) -> Result<(), StoreError> {
        while self.foreground.is_none() {
            let Some(hook) = self.pending.pop_front() else {
                return Ok(());
            };
            let scope = &self.scope;
            let result = store.result_for(
                scope.crawl.id,
                scope.snapshot.as_ref().map(|s| s.id),
                &hook.plugin,
                &hook.file_name,
            )?;
            if result.is_final() {
                log::info!(
                    "{}: {} before, not run again",
                    hook.file_name,
                    result.status
                );
                continue;
            }
            let request = spawn_request(config, &hook, scope, result.id);
            if let Err(err) = std::fs::create_dir_all(&request.process.cwd) {
                log::error!("{}: cannot create its dir: {err}", hook.file_name);
            }
            let policy = if hook.background {
                ChildPolicy::BACKGROUND_HOOK
            } else {
                ChildPolicy::FOREGROUND_HOOK
            };
            // The attempt counts from here: a worker that dies while starting the hook has
            // interrupted it all the same.
            store.start_result(result.id, None)?;
            match supervisor.spawn(store, &request, policy) {
                Ok(spawned) => {
                    store.set_result_process(result.id, spawned.row_id)?;
                    log::info!("{} started (row {})", hook.file_name, spawned.row_id);
                    if !hook.background {
                        self.foreground = Some(spawned.row_id);
                    }
                    self.running.insert(
                        spawned.row_id,
                        Running {
                            hook,
                            result_id: result.id,
                            request,
                        },
                    );
                }
                Err(err) => {
                    let message = format!("could not start: {err}");
                    store.finish_result(result.id, ResultStatus::Failed, Some(&message), &[], 0)?;
                }
            }
        }
        Ok(())
    }

    /// Records the result of hook row `row_id` if it is one of ours; returns the URLs it
    /// discovered. Starts the next hook when a foreground one ended.
    pub fn on_exit(
        &mut self,
        config: &Config,
        supervisor: &mut Supervisor,
        store: &mut Store,
        row_id: i64,
        outcome: ExitOutcome,
        reason: EndReason,
    ) -> Result<Option<Vec<String>>, StoreError> {
        let Some(run) = self.running.remove(&row_id) else {
            return Ok(None);
        };
        let (stdout, stderr) = match &run.request.logs {
            Logs::Files { stdout, stderr } => (stdout.clone(), stderr.clone()),
            Logs::InDir(_) => unreachable!("hooks log to named files"),
        };
        let timeout = hook_timeout(config, &run.hook);
        let result = interpret(&stdout, &stderr, outcome, reason, timeout);
        let (files, size) = output_files(Path::new(&run.request.process.cwd));
        store.finish_result(
            run.result_id,
            result.status,
            result.output.as_deref(),
            &files,
            size,
        )?;
        log::info!(
            "{} {}: {}",
            run.hook.file_name,
            result.status.as_str(),
            result.output.as_deref().unwrap_or("")
        );
        if self.foreground == Some(row_id) {
            self.foreground = None;
            self.start_next(config, supervisor, store)?;
        }
        Ok(Some(result.discovered))
    }

    /// Whether every foreground hook has run (background ones may still be up).
    pub fn foreground_done(&self) -> bool {
        self.foreground.is_none() && self.pending.is_empty()
    }

    /// Whether no hook of this runner is running.
    pub fn idle(&self) -> bool {
        self.running.is_empty()
    }

    /// Row ids of the hooks still running.
    pub fn running_rows(&self) -> Vec<i64> {
        self.running.keys().copied().collect()
    }
}
