//! A throwaway PostgreSQL server for one test: a cluster made by `initdb` in a temp dir, run by
//! an unprivileged user (PostgreSQL refuses root), listening only on a Unix socket in that dir —
//! no TCP port, no system service touched — and stopped, then removed, when dropped (also when
//! the test fails).
//!
//! Where PostgreSQL is not installed a test skips, saying so — except in CI (`CI` set), which
//! installs it (`.ci/run`): there a missing server fails the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The role and database every throwaway cluster has.
pub const ROLE: &str = "abxd";

pub struct Postgres {
    dir: tempfile::TempDir,
    server: Child,
    /// The server's binaries.
    bin: PathBuf,
}

/// The directory of Debian's newest PostgreSQL server binaries, if one is installed.
fn server_bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Runs `command` as the unprivileged user that owns the cluster when this process is root
/// (`postgres`, made by Debian's package; else `nobody`).
fn as_owner(bin: &Path, program: &str) -> Command {
    if !rustix::process::geteuid().is_root() {
        return Command::new(bin.join(program));
    }
    let mut command = Command::new("setpriv");
    let (uid, gid) = owner();
    command.args([
        format!("--reuid={uid}"),
        format!("--regid={gid}"),
        "--clear-groups".into(),
        "--".into(),
    ]);
    command.arg(bin.join(program));
    command
}

/// The uid and gid the cluster runs as when the tests run as root.
fn owner() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&"postgres"))
                .then(|| Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?)))
                .flatten()
        })
        .unwrap_or((super::UNPRIVILEGED, super::UNPRIVILEGED))
}

/// The server of the cluster in `dir`, on a Unix socket there only.
fn spawn_server(bin: &Path, dir: &Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .unwrap();
    as_owner(bin, "postgres")
        .arg("-D")
        .arg(dir.join("data"))
        .arg("-k")
        .arg(dir)
        .args(["-c", "listen_addresses=", "-c", "fsync=off"])
        .args(["-c", "max_connections=200"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// Runs `command` to its end; a failure fails the test with what it said.
fn run_ok(command: &mut Command) {
    let output = command.stdout(Stdio::null()).output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Whether a throwaway server can run here (always in CI, which installs PostgreSQL).
pub fn available() -> bool {
    server_bin_dir().is_some() || std::env::var_os("CI").is_some()
}

impl Postgres {
    /// Starts a cluster and waits until it accepts connections, or `None` (after saying so)
    /// where PostgreSQL is not installed outside CI.
    pub fn start() -> Option<Postgres> {
        let Some(bin) = server_bin_dir() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "PostgreSQL is not installed: CI installs it (.ci/run), and the fleet's tests \
                 need it"
            );
            eprintln!("SKIPPED: PostgreSQL is not installed here (apt install postgresql)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("abxd-pg")
            .tempdir()
            .unwrap();
        if rustix::process::geteuid().is_root() {
            let (uid, gid) = owner();
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let data = dir.path().join("data");
        run_ok(
            as_owner(&bin, "initdb")
                .args(["--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C"])
                .arg(format!("--username={ROLE}"))
                .arg("-D")
                .arg(&data),
        );
        let server = spawn_server(&bin, dir.path());
        let mut postgres = Postgres {
            dir,
            server,
            bin: bin.clone(),
        };
        postgres.wait_ready();
        run_ok(as_owner(&bin, "createdb").args(["-h", &postgres.socket_dir(), "-U", ROLE, ROLE]));
        Some(postgres)
    }

    /// Stops the server as an operator's restart does (SIGINT: fast shutdown, every session
    /// closed) and waits until it is gone.
    pub fn stop(&mut self) {
        // (Our own child: its pid cannot mean another process until we reap it.)
        let pid = nix::unistd::Pid::from_raw(self.server.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        self.server.wait().unwrap();
    }

    /// Starts the stopped server again on the same data, and waits until it is ready.
    pub fn start_again(&mut self) {
        self.server = spawn_server(&self.bin, self.dir.path());
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let bin = self.bin.clone();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(bin.join("pg_isready"))
                .args(["-q", "-h", &self.socket_dir(), "-U", ROLE])
                .status()
                .unwrap();
            if ready.success() {
                return;
            }
            if let Some(status) = self.server.try_wait().unwrap() {
                panic!(
                    "PostgreSQL exited ({status}) before it was ready: {}",
                    std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "PostgreSQL was not ready in 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The directory of its Unix socket.
    pub fn socket_dir(&self) -> String {
        self.dir.path().display().to_string()
    }

    /// Its connection string (libpq's key-value form): the socket dir, the role, the database.
    pub fn url(&self) -> String {
        format!("host={} user={ROLE} dbname={ROLE}", self.socket_dir())
    }

    /// Its URL, as `paths.database` names a server.
    pub fn database_url(&self) -> String {
        format!("postgres://{ROLE}@/{ROLE}?host={}", self.socket_dir())
    }

    /// The server's pid (the postmaster's).
    pub fn pid(&self) -> i32 {
        self.server.id() as i32
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGQUIT: the postmaster's immediate shutdown, which ends its backends too. It is our
        // own child: its pid cannot mean another process until we reap it.
        let pid = nix::unistd::Pid::from_raw(self.server.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGQUIT);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.server.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = self.server.kill();
                let _ = self.server.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
