//! A throwaway PostgreSQL server for one test: a cluster made by `initdb` in a temp dir, run by
//! an unprivileged user (PostgreSQL refuses root), listening only on a Unix socket in that dir —
//! no TCP port, no system service touched — and stopped, then removed, when dropped (also when
//! the test fails). A server started [`Postgres::start_with_tls`] also listens on a loopback TCP
//! port with TLS, its certificate (for `localhost`) and the authority that signed it made by
//! `openssl` in that dir.
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
    /// With TLS: the loopback port it listens on as well.
    tls_port: Option<u16>,
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

/// The server of the cluster in `dir`, on a Unix socket there, and with TLS on `tls_port` of
/// the loopback interface if given.
fn spawn_server(bin: &Path, dir: &Path, tls_port: Option<u16>) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .unwrap();
    let mut command = as_owner(bin, "postgres");
    command.arg("-D").arg(dir.join("data")).arg("-k").arg(dir);
    match tls_port {
        None => command.args(["-c", "listen_addresses="]),
        Some(port) => command
            .args(["-c", "listen_addresses=127.0.0.1", "-p", &port.to_string()])
            .args(["-c", "ssl=on"])
            .arg("-c")
            .arg(format!(
                "ssl_cert_file={}",
                dir.join("server.crt").display()
            ))
            .arg("-c")
            .arg(format!("ssl_key_file={}", dir.join("server.key").display())),
    };
    command
        .args(["-c", "fsync=off", "-c", "max_connections=200"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// Makes a certificate authority (`ca.crt`), the server's certificate for `localhost` signed by
/// it, and another authority that signed nothing (`other.crt`) in `dir`, the server's key owned as
/// the server wants it; returns a free loopback port for the server.
fn make_certificates(dir: &Path) -> u16 {
    let openssl = |args: &[&str]| run_ok(Command::new("openssl").current_dir(dir).args(args));
    let days = ["-days", "2"];
    for (name, subject) in [("ca", "/CN=abxd test CA"), ("other", "/CN=another CA")] {
        let (key, cert) = (format!("{name}.key"), format!("{name}.crt"));
        openssl(
            &[
                &[
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
                ][..],
                &days,
                &["-keyout", &key, "-out", &cert],
            ]
            .concat(),
        );
    }
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        &[
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
            ][..],
            &[
                "-CAcreateserial",
                "-extfile",
                "server.ext",
                "-out",
                "server.crt",
            ],
            &days,
        ]
        .concat(),
    );
    let key = dir.join("server.key");
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    if rustix::process::geteuid().is_root() {
        let (uid, gid) = owner();
        std::os::unix::fs::chown(&key, Some(uid), Some(gid)).unwrap();
    }
    // (Freed at once for the server to take: a race with another process taking it meanwhile
    // fails the start loudly, never silently.)
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
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
        Self::start_as(false, None)
    }

    /// [`Postgres::start`], listening with TLS on a loopback port too (see [`Postgres::tls_url`]).
    pub fn start_with_tls() -> Option<Postgres> {
        Self::start_as(true, None)
    }

    /// [`Postgres::start`] with the cluster's files in a directory below `parent`, left there
    /// when dropped (the server still stops): for a caller that removes them itself, later.
    pub fn start_leaving_files_in(parent: &Path) -> Option<Postgres> {
        Self::start_as(false, Some(parent))
    }

    fn start_as(tls: bool, leaving_files_in: Option<&Path>) -> Option<Postgres> {
        let Some(bin) = server_bin_dir() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "PostgreSQL is not installed: CI installs it (.ci/run), and the fleet's tests \
                 need it"
            );
            eprintln!("SKIPPED: PostgreSQL is not installed here (apt install postgresql)");
            return None;
        };
        let mut dir = tempfile::Builder::new();
        dir.prefix("abxd-pg")
            .disable_cleanup(leaving_files_in.is_some());
        let dir = match leaving_files_in {
            Some(parent) => dir.tempdir_in(parent),
            None => dir.tempdir(),
        }
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
        let tls_port = tls.then(|| make_certificates(dir.path()));
        let server = spawn_server(&bin, dir.path(), tls_port);
        let mut postgres = Postgres {
            dir,
            server,
            bin: bin.clone(),
            tls_port,
        };
        postgres.wait_ready();
        let port = postgres.port().to_string();
        run_ok(
            as_owner(&bin, "createdb")
                .args(["-h", &postgres.socket_dir(), "-p", &port])
                .args(["-U", ROLE, ROLE]),
        );
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
        self.server = spawn_server(&self.bin, self.dir.path(), self.tls_port);
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let bin = self.bin.clone();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(bin.join("pg_isready"))
                .args(["-q", "-h", &self.socket_dir(), "-U", ROLE])
                .args(["-p", &self.port().to_string()])
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

    /// Its port: the loopback port with TLS, else PostgreSQL's default (which also names its
    /// Unix socket).
    fn port(&self) -> u16 {
        self.tls_port.unwrap_or(5432)
    }

    /// The directory of its Unix socket.
    pub fn socket_dir(&self) -> String {
        self.dir.path().display().to_string()
    }

    /// Its connection string (libpq's key-value form): the socket dir, the role, the database.
    pub fn url(&self) -> String {
        format!(
            "host={} port={} user={ROLE} dbname={ROLE}",
            self.socket_dir(),
            self.port()
        )
    }

    /// Its URL, as `paths.database` names a server: over its Unix socket, or — started with
    /// TLS — over TCP with TLS, the server's certificate and name checked (`verify-full`).
    pub fn database_url(&self) -> String {
        match self.tls_port {
            None => format!("postgres://{ROLE}@/{ROLE}?host={}", self.socket_dir()),
            Some(_) => self.tls_url(
                "localhost",
                &format!(
                    "sslmode=verify-full&sslrootcert={}",
                    self.root_certificate().display()
                ),
            ),
        }
    }

    /// Its URL over TCP with TLS, as `paths.database` names a server: `host` (`localhost` is
    /// the name its certificate carries) and `query` (e.g. `sslmode=verify-full`) given.
    pub fn tls_url(&self, host: &str, query: &str) -> String {
        let port = self.tls_port.expect("a server started with TLS");
        format!("postgres://{ROLE}@{host}:{port}/{ROLE}?{query}")
    }

    /// The authority that signed the server's certificate: the root a client trusts.
    pub fn root_certificate(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// Another authority, which did not sign the server's certificate.
    pub fn other_certificate(&self) -> PathBuf {
        self.dir.path().join("other.crt")
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
