//! Test fixtures: a real abxd daemon in a temp dir, driven through the real abxctl binary.
//!
//! Every process a test starts carries `ABXD_TEST_TAG=<unique>` in its environment (children
//! inherit it), and `Drop` kills every process with that tag — by pid, after checking the pid
//! still is that process — so nothing outlives a test, also when it fails.

#![allow(dead_code)]

pub mod abx;
pub mod archivebox;
pub mod browser;
pub mod postgres;
pub mod sites;

use abxd::identity;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const TAG_ENV: &str = "ABXD_TEST_TAG";
pub const WAIT: Duration = Duration::from_secs(30);

/// Polls `check` until it returns `Some`, failing the test after `timeout`.
pub fn wait_until<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A tag unique to this test process and call.
pub fn unique_tag() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "abxd-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Pids of live processes whose environment carries `TAG_ENV=tag`.
pub fn tagged_pids(tag: &str) -> Vec<i32> {
    let needle = format!("{TAG_ENV}={tag}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|var| var == needle.as_bytes()))
                .unwrap_or(false)
        })
        .filter(|&pid| identity::of_pid(pid).is_some())
        .collect()
}

/// Pids of the running children of `parent` (not the ended ones it has not reaped yet).
pub fn children_of(parent: i32) -> Vec<i32> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    (all.filter_map(|process| process.ok()?.stat().ok()))
        .filter(|stat| stat.ppid == parent && stat.state != 'Z')
        .map(|stat| stat.pid)
        .collect()
}

/// SIGKILLs every live process carrying `tag`, until none is left.
pub fn kill_tagged(tag: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let pids = tagged_pids(tag);
        if pids.is_empty() || Instant::now() > deadline {
            return;
        }
        for pid in pids {
            if let Some(id) = identity::of_pid(pid) {
                if identity::check(&id).is_alive() {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn abxd_bin() -> &'static str {
    env!("CARGO_BIN_EXE_abxd")
}

pub fn abxctl_bin() -> &'static str {
    env!("CARGO_BIN_EXE_abxctl")
}

/// A daemon in its own temp dir.
pub struct TestDaemon {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub tag: String,
    child: Option<Child>,
    /// Run as [`UNPRIVILEGED`], not root.
    unprivileged: bool,
    /// The abxd executable it runs (the one cargo built unless a test gives it a copy).
    exe: PathBuf,
    /// Its PostgreSQL server, when its store is one (dropped after the daemon).
    postgres: Option<postgres::Postgres>,
    /// What the daemon runs under (e.g. `unshare`), if anything.
    wrapper: Vec<String>,
}

/// The stores the suites that must hold on both run against: the SQLite file, and a throwaway
/// PostgreSQL server where one can run (always in CI). Says which ran.
pub fn backends() -> Vec<&'static str> {
    if postgres::available() {
        vec!["sqlite", "postgres"]
    } else {
        eprintln!("SKIPPED on PostgreSQL: it is not installed here (apt install postgresql)");
        vec!["sqlite"]
    }
}

/// `extra` config lines with `paths.database` set to `url`.
fn with_database(extra: &str, url: &str) -> String {
    let line = format!("database = {url:?}\n");
    match extra.find("[paths]\n") {
        Some(at) => {
            let (before, after) = extra.split_at(at + "[paths]\n".len());
            format!("{before}{line}{after}")
        }
        None => format!("{extra}[paths]\n{line}"),
    }
}

/// The uid and gid of `nobody`, the unprivileged user daemons run as in some tests.
pub const UNPRIVILEGED: u32 = 65534;

impl TestDaemon {
    /// The config every test daemon gets, before `extra` lines.
    /// What every test daemon's config starts with: debug spawn allowed, and — tests run as
    /// root — hooks run as root by the explicit key (see [`TestDaemon::config_text`]).
    pub const BASE_CONFIG: &'static str =
        "[hooks]\nuser = \"root\"\n[control]\nallow_debug_spawn = true\n";

    /// Writes a config (debug spawn allowed, plus `extra`) into a fresh temp dir; starts nothing.
    pub fn prepare(extra: &str) -> TestDaemon {
        Self::prepare_on("sqlite", extra)
    }

    /// [`TestDaemon::prepare`] with its store on `backend` (one of [`backends`]): for
    /// `postgres`, a throwaway server of its own.
    pub fn prepare_on(backend: &str, extra: &str) -> TestDaemon {
        let dir = tempfile::Builder::new().prefix("abxd").tempdir().unwrap();
        Self::prepare_at(dir, backend, extra)
    }

    /// [`TestDaemon::prepare_on`] in `dir`.
    fn prepare_at(dir: tempfile::TempDir, backend: &str, extra: &str) -> TestDaemon {
        let postgres = match backend {
            "sqlite" => None,
            "postgres" => Some(postgres::Postgres::start().expect("PostgreSQL is installed")),
            "postgres-tls" => {
                Some(postgres::Postgres::start_with_tls().expect("PostgreSQL is installed"))
            }
            other => panic!("no backend {other}"),
        };
        let extra = match &postgres {
            Some(server) => with_database(extra, &server.database_url()),
            None => extra.to_string(),
        };
        let config = dir.path().join("supervisor.toml");
        std::fs::write(&config, Self::config_text(&extra)).unwrap();
        // The default plugins dir (empty), for configs that name none.
        std::fs::create_dir_all(dir.path().join("plugins")).unwrap();
        TestDaemon {
            dir,
            config,
            tag: unique_tag(),
            child: None,
            unprivileged: false,
            exe: PathBuf::from(abxd_bin()),
            postgres,
            wrapper: Vec::new(),
        }
    }

    /// [`TestDaemon::prepare`] in a new directory below `root`, which is kept when the daemon is
    /// dropped (the benchmarks keep every file until all are done; see `benches/supervisor`).
    pub fn prepare_in(root: &Path, extra: &str) -> TestDaemon {
        let kept = tempfile::Builder::new()
            .prefix("abxd")
            .disable_cleanup(true)
            .tempdir_in(root)
            .unwrap();
        Self::prepare_at(kept, "sqlite", extra)
    }

    /// Runs a copy of abxd in this daemon's dir from now on (which a test may then replace, as
    /// a package upgrade does); returns its path.
    pub fn run_a_copy_of_abxd(&mut self) -> PathBuf {
        let copy = self.dir.path().join("abxd");
        std::fs::copy(abxd_bin(), &copy).unwrap();
        self.exe = copy.clone();
        copy
    }

    pub fn start() -> TestDaemon {
        Self::start_with("")
    }

    /// Starts a daemon with `extra` config and waits until it answers `status`.
    pub fn start_with(extra: &str) -> TestDaemon {
        Self::start_on("sqlite", extra)
    }

    /// [`TestDaemon::start_with`] with its store on `backend`.
    pub fn start_on(backend: &str, extra: &str) -> TestDaemon {
        let mut daemon = Self::prepare_on(backend, extra);
        daemon.launch();
        daemon
    }

    /// Starts the daemon of this dir (again) and waits until it answers `status`.
    pub fn launch(&mut self) {
        self.launch_with_env(&[]);
    }

    /// Like `launch`, with extra environment variables for the daemon.
    pub fn launch_with_env(&mut self, env: &[(&str, &str)]) {
        let mut command = self.abxd_command(&[]);
        command.envs(env.iter().copied());
        let child = command.spawn().expect("start abxd");
        self.child = Some(child);
        wait_until("abxd to answer status", WAIT, || {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("abxd exited at start: {status}\n{}", self.log());
            }
            self.ctl(&["status"]).status.success().then_some(())
        });
    }

    /// Starts the daemon as a host of its own: the first process of a new PID namespace, seeing
    /// only its own processes (`unshare --pid --fork --mount-proc`, as root). `unshare` holds
    /// SIGTERM and SIGINT back while it waits for its child, so [`TestDaemon::signal`] does not
    /// reach the daemon; killed itself ([`TestDaemon::crash`]), `unshare` has the daemon sent
    /// SIGTERM, and when that ends the kernel kills whatever is left in its namespace.
    pub fn launch_in_own_pid_namespace(&mut self) {
        self.wrapper = [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            "--kill-child=SIGTERM",
        ]
        .map(String::from)
        .to_vec();
        self.launch();
    }

    /// Starts the daemon as the first process of the memory cgroup at `dir` (its `cgroup.procs`,
    /// v2, or its `tasks`, v1), whose limit then bounds everything it runs.
    pub fn launch_in_memory_cgroup(&mut self, dir: &Path) {
        let procs = ["cgroup.procs", "tasks"]
            .map(|file| dir.join(file))
            .into_iter()
            .find(|path| path.exists())
            .expect("a cgroup has cgroup.procs or tasks");
        self.wrapper = vec![
            "sh".into(),
            "-c".into(),
            format!("echo $$ > '{}' && exec \"$@\"", procs.display()),
            "sh".into(),
        ];
        self.launch();
    }

    /// Hands this daemon's dir to the unprivileged user `nobody` and runs the daemon as that
    /// user from now on ([`UNPRIVILEGED`]), as a packaged daemon runs as its own user.
    pub fn give_to_nobody(&mut self) {
        self.unprivileged = true;
        // (A copy in its dir: nobody may not enter a checkout in root's home, mode 0700.)
        self.run_a_copy_of_abxd();
        fn chown_all(path: &Path) {
            std::os::unix::fs::lchown(path, Some(UNPRIVILEGED), Some(UNPRIVILEGED)).unwrap();
            if path.is_dir() && !path.is_symlink() {
                for entry in std::fs::read_dir(path).unwrap().flatten() {
                    chown_all(&entry.path());
                }
            }
        }
        chown_all(self.dir.path());
    }

    /// Hands this daemon's dir to `user` and runs the daemon as that user from now on, with its
    /// groups and the ambient capabilities `caps` (setpriv's list, e.g. "+setuid,+kill"), as the
    /// packaged unit runs abxd.
    pub fn run_as_with_capabilities(&mut self, user: &nix::unistd::User, caps: &str) {
        fn chown_all(path: &Path, user: &nix::unistd::User) {
            std::os::unix::fs::lchown(path, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
                .unwrap();
            if path.is_dir() && !path.is_symlink() {
                for entry in std::fs::read_dir(path).unwrap().flatten() {
                    chown_all(&entry.path(), user);
                }
            }
        }
        chown_all(self.dir.path(), user);
        self.wrapper = vec![
            "setpriv".into(),
            format!("--reuid={}", user.name),
            format!("--regid={}", user.name),
            "--init-groups".into(),
            format!("--inh-caps={caps}"),
            format!("--ambient-caps={caps}"),
        ];
    }

    /// Starts the daemon and expects it to exit at once with an error (and leave nothing running).
    pub fn launch_expecting_failure(&mut self) {
        let mut child = self.abxd_command(&[]).spawn().expect("start abxd");
        let status = wait_until("abxd to refuse to start", WAIT, || {
            child.try_wait().unwrap()
        });
        assert!(!status.success(), "abxd started: {}", self.log());
        assert!(
            tagged_pids(&self.tag).is_empty(),
            "something was left running"
        );
    }

    /// A command running the abxd binary on this daemon's config, tagged, logging to `abxd.log`.
    pub fn abxd_command(&self, args: &[&str]) -> Command {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let mut command = match self.wrapper.split_first() {
            Some((program, wrapper_args)) => {
                let mut command = Command::new(program);
                command.args(wrapper_args).arg(&self.exe);
                command
            }
            None => Command::new(&self.exe),
        };
        command
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env(TAG_ENV, &self.tag)
            .env("RUST_LOG", "abxd=debug")
            .env_remove("ABXD_CONFIG")
            // (Not the test runner's service manager's: a test names one where it wants one.)
            .env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .env_remove("WATCHDOG_PID")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        if self.unprivileged {
            use std::os::unix::process::CommandExt;
            command.uid(UNPRIVILEGED).gid(UNPRIVILEGED);
        }
        command
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("abxd.log")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Its SQLite file (for tests of the file itself: a daemon on PostgreSQL has none).
    pub fn database(&self) -> PathBuf {
        assert!(
            self.postgres.is_none(),
            "a daemon on PostgreSQL has no database file"
        );
        self.data_dir().join("abxd.sqlite3")
    }

    /// Replaces its config with [`TestDaemon::BASE_CONFIG`] and `extra` (its store kept).
    pub fn write_config(&self, extra: &str) {
        let extra = match &self.postgres {
            Some(server) => with_database(extra, &server.database_url()),
            None => extra.to_string(),
        };
        std::fs::write(&self.config, Self::config_text(&extra)).unwrap();
    }

    /// [`TestDaemon::BASE_CONFIG`] and `extra`, less its `[hooks]` when `extra` says who hooks
    /// run as.
    fn config_text(extra: &str) -> String {
        let base = match Self::BASE_CONFIG.find("[control]") {
            Some(control) if extra.contains("[hooks]") => &Self::BASE_CONFIG[control..],
            _ => Self::BASE_CONFIG,
        };
        // (Tests of other things crawl many pages of one loopback "site" and time nothing by
        // it: politeness, which would space their starts a second apart, is lifted unless the
        // test speaks of it — an empty `[politeness]` keeps its defaults.)
        let polite = match extra.contains("[politeness") {
            true => "",
            false => "\n[politeness]\nmax_per_host = 1000\ndelay = \"0s\"\n",
        };
        format!("{base}{extra}{polite}")
    }

    /// Its PostgreSQL server (a daemon started `on` it).
    pub fn postgres_mut(&mut self) -> &mut postgres::Postgres {
        self.postgres.as_mut().expect("a daemon on PostgreSQL")
    }

    /// Where its store is.
    pub fn location(&self) -> abxd::store::Location {
        match &self.postgres {
            Some(server) => abxd::store::Location::Postgres(abxd::store::Server {
                url: server.database_url(),
                password_file: None,
            }),
            None => abxd::store::Location::File(self.data_dir().join("abxd.sqlite3")),
        }
    }

    /// Asserts that nothing this daemon started outlives its crawls: no process of its tag runs
    /// but the daemon itself.
    pub fn assert_nothing_survives(&self) {
        let survivors: Vec<i32> = tagged_pids(&self.tag)
            .into_iter()
            .filter(|&pid| pid != self.pid())
            .collect();
        assert!(
            survivors.is_empty(),
            "processes of the crawl survived: {survivors:?}"
        );
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("daemon started").id() as i32
    }

    /// Runs abxctl on this daemon's config.
    pub fn ctl(&self, args: &[&str]) -> Output {
        self.ctl_command(args).output().expect("run abxctl")
    }

    /// Creates the database as the daemon's first start does (abxctl never creates one), for
    /// tests that queue work before the daemon ever ran.
    pub fn create_database(&self) {
        std::fs::create_dir_all(self.data_dir()).unwrap();
        abxd::store::Store::open_at(&self.location()).unwrap();
    }

    /// An abxctl command on this daemon's config, not started yet.
    pub fn ctl_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(abxctl_bin());
        command
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env(TAG_ENV, &self.tag)
            .env_remove("ABXD_CONFIG");
        command
    }

    /// Runs abxctl and returns its stdout, failing the test if it did not succeed.
    pub fn ctl_ok(&self, args: &[&str]) -> String {
        let output = self.ctl(args);
        assert!(
            output.status.success(),
            "abxctl {args:?} failed: {}\n{}\ndaemon log:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Spawns `argv` under the daemon; returns (row id, pid).
    pub fn spawn(&self, argv: &[&str]) -> (i64, i32) {
        let mut args = vec!["spawn", "--"];
        args.extend_from_slice(argv);
        let out = self.ctl_ok(&args);
        let mut fields = out.split_whitespace();
        let id = fields.next().unwrap().parse().unwrap();
        let pid = fields.next().unwrap().parse().unwrap();
        (id, pid)
    }

    /// `abxctl ps --json` (with `--all` when `all`), parsed.
    pub fn ps_json(&self, all: bool) -> serde_json::Value {
        let mut args = vec!["ps", "--json"];
        if all {
            args.push("--all");
        }
        serde_json::from_str(&self.ctl_ok(&args)).unwrap()
    }

    /// The `ps --json --all` entry of row `id`.
    pub fn row(&self, id: i64) -> serde_json::Value {
        self.ps_json(true)["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no row {id}"))
    }

    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid()), signal).unwrap();
    }

    /// Waits for the daemon to exit and returns its status.
    /// Whether the daemon's process has exited (reaped now if it has).
    pub fn has_exited(&mut self) -> bool {
        let child = self.child.as_mut().expect("daemon started");
        child.try_wait().unwrap().is_some()
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        let child = self.child.as_mut().expect("daemon started");
        let status = wait_until("abxd to exit", WAIT, || child.try_wait().unwrap());
        self.child = None;
        status
    }

    /// SIGKILLs the daemon alone (its children live on) and reaps it.
    pub fn crash(&mut self) {
        self.signal(Signal::SIGKILL);
        self.wait_exit();
    }

    /// The database, read-only, as abxctl sees it.
    pub fn store(&self) -> abxd::store::Store {
        abxd::store::Store::open_read_only_at(&self.location()).unwrap()
    }

    /// The rows of `kind` that claim a live process now.
    pub fn live_rows(&self, kind: abxd::domain::Kind) -> Vec<abxd::store::ProcessRow> {
        self.store()
            .processes()
            .list(&Default::default())
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == kind && r.status.is_live())
            .collect()
    }

    /// `abxctl add ARGS…`; returns the crawl id.
    pub fn add(&self, args: &[&str]) -> i64 {
        let mut all = vec!["add"];
        all.extend_from_slice(args);
        let out = self.ctl_ok(&all);
        out.split_whitespace()
            .nth(1)
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("no crawl id in {out:?}"))
    }

    /// Waits until crawl `id` is sealed and every process that worked on it has ended; on
    /// timeout, fails naming what is still live.
    pub fn wait_sealed(&self, id: i64, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let store = self.store();
            let sealed = store
                .crawls()
                .get(id)
                .unwrap()
                .is_some_and(|c| c.status == "sealed");
            let rows = store
                .processes()
                .list(&abxd::store::ProcessFilter::default())
                .unwrap();
            let live: Vec<String> = rows
                .iter()
                .filter(|r| r.crawl_id == Some(id) && r.status.is_live())
                .map(|r| {
                    // The end of its log, to tell why it is still there.
                    let log = r
                        .stderr_path
                        .as_ref()
                        .and_then(|p| std::fs::read_to_string(p).ok())
                        .unwrap_or_default();
                    let tail = &log[log.len().saturating_sub(2000)..];
                    format!("row {} {} {} {:?}\n{tail}", r.id, r.kind, r.status, r.argv)
                })
                .collect();
            if sealed && live.is_empty() {
                return;
            }
            if Instant::now() >= deadline {
                // What its workers said, to tell why.
                let workers: String = (rows.iter())
                    .filter(|r| r.crawl_id == Some(id) && r.kind.is_worker())
                    .map(|r| {
                        let log = (r.stderr_path.as_ref())
                            .and_then(|p| std::fs::read_to_string(p).ok())
                            .unwrap_or_default();
                        format!("--- row {} {} {} ---\n{log}\n", r.id, r.kind, r.status)
                    })
                    .collect();
                panic!(
                    "crawl {id}: sealed {sealed}, live rows: {live:#?}\n{workers}\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        kill_tagged(&self.tag);
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.remove_cgroups();
        if std::thread::panicking() {
            eprintln!("--- abxd log ---\n{}", self.log());
        }
    }
}

impl TestDaemon {
    /// Removes the cgroup scopes the daemon made (its log names each, at every start) once its
    /// processes are gone: a daemon killed by a test never removes its own.
    fn remove_cgroups(&self) {
        for line in self.log().lines() {
            let Some((_, rest)) = line.split_once("containment: cgroup v2 at ") else {
                continue;
            };
            if let Some(scope) = rest.split(" (controllers").next() {
                abxd::cgroup::Cgroup::at(scope).remove();
            }
        }
    }
}

/// Waits until `pid` blocks in epoll_wait and asserts it waits with no timeout (no timer: it
/// sleeps until an event comes).
pub fn assert_sleeps_without_timer(pid: i32) {
    // /proc/PID/syscall: "<nr> <arg1> ... <arg6> <sp> <pc>"; epoll_wait's 4th argument is the
    // timeout, -1 when the loop waits for an event with no timer.
    let syscall = wait_until("the process to block in epoll_wait", WAIT, || {
        let text = std::fs::read_to_string(format!("/proc/{pid}/syscall")).ok()?;
        let fields: Vec<String> = text.split_whitespace().map(str::to_string).collect();
        let number: i64 = fields.first()?.parse().ok()?;
        // x86_64: epoll_wait 232, epoll_pwait 281; aarch64: epoll_pwait 22.
        [232, 281, 22].contains(&number).then_some(fields)
    });
    let timeout = u64::from_str_radix(syscall[4].trim_start_matches("0x"), 16).unwrap();
    assert_eq!(timeout as u32 as i32, -1, "timeout argument of {syscall:?}");
}

/// The directory of test fixtures.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Writes, below the plugins dir `root`, a plugin folder `name` holding the hook `hook` running
/// `script` (bash).
pub fn plugin(root: &Path, name: &str, hook: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(hook);
    std::fs::write(&path, format!("#!/usr/bin/env bash\n{script}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Config lines that point the daemon at plugin dirs.
pub fn plugins_config(dirs: &[&Path]) -> String {
    let list: Vec<String> = dirs
        .iter()
        .map(|d| format!("{:?}", d.display().to_string()))
        .collect();
    format!("[paths]\nplugins_dirs = [{}]\n", list.join(", "))
}

/// Whether `path` exists, for readable waits.
pub fn exists(path: &Path) -> Option<()> {
    path.exists().then_some(())
}

/// What a daemon of containment `mode` needs to run crawls: under procfs the kernel cannot hold
/// hooks to an egress policy, and a crawl must be let run unprotected.
pub fn egress_for(mode: &str) -> &'static str {
    match mode {
        "procfs" => "[crawl]\negress = \"unrestricted\"\n",
        _ => "",
    }
}

/// The containments the escape matrix runs under here: `procfs` always, and `cgroup` where this
/// machine lets abxd make cgroups (a writable cgroup2 mount; CI's machines have one, and there
/// it is required). Says which ran.
pub fn containments() -> Vec<&'static str> {
    let writable = abxd::cgroup::own_cgroup().ok().is_some_and(|own| {
        let probe = own.dir.join(format!("abxd-probe-{}", unique_tag()));
        std::fs::create_dir(&probe).is_ok() && std::fs::remove_dir(&probe).is_ok()
    });
    if writable {
        return vec!["procfs", "cgroup"];
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI machines have a writable cgroup2 mount: cgroup containment must be tested there"
    );
    eprintln!("containment: cgroup v2 is not writable here: the case runs under procfs only");
    vec!["procfs"]
}

/// A new, empty store on `backend` (one of [`backends`]), and what must outlive it: its temp dir,
/// or its throwaway PostgreSQL server.
pub fn fresh_store(backend: &str) -> (abxd::store::Store, Box<dyn std::any::Any>) {
    match backend {
        "postgres" => {
            let server = postgres::Postgres::start().expect("PostgreSQL is installed");
            let store = abxd::store::Store::open_postgres(&server.url()).unwrap();
            (store, Box::new(server))
        }
        _ => {
            let dir = tempfile::tempdir().unwrap();
            let store = abxd::store::Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
            (store, Box::new(dir))
        }
    }
}

/// Every row of `rows` is final but the orchestrator's (whose daemon still runs).
pub fn assert_every_row_final(rows: &[abxd::store::ProcessRow]) {
    for row in rows {
        assert!(
            !row.status.is_live() || row.kind == abxd::domain::Kind::Orchestrator,
            "row {} ({:?}) is still {}",
            row.id,
            row.argv,
            row.status
        );
    }
}

/// The unprivileged user the tests create for hooks (and ArchiveBox) to run as.
pub const HOOK_USER: &str = "abxd-hooktest";

/// Creates [`HOOK_USER`] unless it exists (tests never remove it: another may be using it).
pub fn hook_user() -> nix::unistd::User {
    system_user(HOOK_USER, &[])
}

/// A user the tests create for a daemon that is not root (tests never remove it), in the group
/// of [`HOOK_USER`] — as the packages put abxd in abxd-hook's —, so that it reads what hooks
/// write.
pub const DAEMON_USER: &str = "abxd-daemontest";

/// Creates [`DAEMON_USER`] (and [`HOOK_USER`]) unless it exists.
pub fn daemon_user() -> nix::unistd::User {
    hook_user();
    system_user(DAEMON_USER, &["--groups", HOOK_USER])
}

/// The group of users crawls' hooks run as (`hooks.crawl_users`) that the tests create, and its
/// members — each in a group of its own, which [`DAEMON_USER`] is in, as the packages make
/// `abxd-crawl`.
pub const CRAWL_USERS: &str = "abxd-crawltest";
pub const CRAWL_USER_NAMES: [&str; 2] = ["abxd-crawltest1", "abxd-crawltest2"];

/// Creates [`CRAWL_USERS`] and its members unless they exist, and puts [`DAEMON_USER`] in each
/// member's group.
pub fn crawl_users() -> Vec<nix::unistd::User> {
    let daemon = daemon_user();
    if nix::unistd::Group::from_name(CRAWL_USERS)
        .unwrap()
        .is_none()
    {
        let status = std::process::Command::new("groupadd")
            .args(["--system", CRAWL_USERS])
            .status()
            .expect("groupadd");
        assert!(
            status.success()
                || nix::unistd::Group::from_name(CRAWL_USERS)
                    .unwrap()
                    .is_some(),
            "groupadd {CRAWL_USERS}: {status}"
        );
    }
    let members: Vec<_> = (CRAWL_USER_NAMES.iter())
        .map(|name| system_user(name, &["--groups", CRAWL_USERS]))
        .collect();
    for name in CRAWL_USER_NAMES {
        let status = std::process::Command::new("usermod")
            .args(["--append", "--groups", name, &daemon.name])
            .status()
            .expect("usermod");
        assert!(status.success(), "usermod: {status}");
    }
    members
}

/// Copies the files of directory `from` (a plugin's) into `to`, made where missing: where a
/// user the test runs the daemon as reaches them (a checkout in root's home is not).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Creates system user `name` (no home, no login; `more` of useradd's options) unless it exists.
fn system_user(name: &str, more: &[&str]) -> nix::unistd::User {
    if nix::unistd::User::from_name(name).unwrap().is_none() {
        let status = std::process::Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
            ])
            .args(more)
            .arg(name)
            .status()
            .expect("useradd");
        // (Two tests may race to create it: either made it.)
        assert!(
            status.success() || nix::unistd::User::from_name(name).unwrap().is_some(),
            "useradd {name}: {status}"
        );
    }
    nix::unistd::User::from_name(name).unwrap().unwrap()
}

/// Every thread of `pid` but its first comes to block in a call that has no timeout: the web
/// view's `accept` (x86_64: accept 43, accept4 288; aarch64: accept 202, accept4 242). A thread
/// that polled on a timer would show another call, or the same with a timeout. A thread that
/// ends while it is looked at (a connection's, after its answer) is gone, not waiting; at least
/// one thread must stay.
pub fn assert_threads_sleep_without_timer(pid: i32) {
    let in_accept = |tid: i32| -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall"))
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse::<i64>().ok())
            .is_some_and(|number| [43, 288, 202, 242].contains(&number))
    };
    let deadline = Instant::now() + WAIT;
    loop {
        let tasks: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&tid| tid != pid)
            .collect();
        let busy: Vec<String> = tasks
            .iter()
            .filter(|&&tid| !in_accept(tid))
            .filter_map(|tid| {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
                Some(format!("{} ({tid})", comm.trim()))
            })
            .collect();
        assert!(!tasks.is_empty(), "no thread but the loop");
        if busy.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for every thread but the loop to block in accept: \
             threads {tasks:?}, not in accept: {busy:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The timeout (ms) of the `epoll_wait` process `pid`'s loop sleeps in once it blocks there with
/// a timer (see [`assert_sleeps_without_timer`]).
pub fn sleeping_timeout_ms(pid: i32) -> i64 {
    let syscall = wait_until("the process to block in epoll_wait", WAIT, || {
        let text = std::fs::read_to_string(format!("/proc/{pid}/syscall")).ok()?;
        let fields: Vec<String> = text.split_whitespace().map(str::to_string).collect();
        let number: i64 = fields.first()?.parse().ok()?;
        [232, 281, 22].contains(&number).then_some(fields)
    });
    u64::from_str_radix(syscall[4].trim_start_matches("0x"), 16).unwrap() as u32 as i32 as i64
}

/// The lines of a ledger (`tests/fixtures/torture/ledger/ledger.sh`) at `path`: (event, snapshot
/// id, hook, unix ms) — none if there is no ledger yet.
pub fn ledger_lines(path: &Path) -> Vec<(String, i64, String, i64)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some((
                f.first()?.to_string(),
                f.get(1)?.parse().ok()?,
                f.get(2)?.to_string(),
                f.get(3)?.parse().ok()?,
            ))
        })
        .collect()
}

/// A small deterministic random number generator (xorshift64*) for torture tests.
pub struct Rng(u64);

impl Rng {
    /// Seeded from the variable `env` if set, else from the clock; prints the seed, so that a
    /// failure can be replayed.
    pub fn seeded(env: &str, what: &str) -> Rng {
        let seed: u64 = std::env::var(env)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        println!("{what} seed: {seed} (replay with {env}={seed})");
        Rng(seed)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// Whether this process may make PID namespaces (root, with util-linux's `unshare`), as a fleet's
/// hosts need ([`TestDaemon::launch_in_own_pid_namespace`]); outside CI a test that needs them
/// skips, saying so.
pub fn can_unshare() -> bool {
    let root = rustix::process::geteuid().is_root();
    let unshare = Path::new("/usr/bin/unshare").exists();
    assert!(
        std::env::var_os("CI").is_none() || (root && unshare),
        "CI runs as root with util-linux: the fleet's tests need PID namespaces"
    );
    root && unshare
}
