//! Benchmark 4: recovery at scale — a start after a crash with many stale rows and orphan trees.

use crate::harness::*;
use abxd::domain::Kind;
use abxd::store::{NewProcess, Store};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A daemon started on a data dir of the benchmark's own making (the fixture makes its own),
/// SIGTERMed and reaped when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.0.wait();
    }
}

/// Starts abxd on `dir` (its stale table) with a notify socket and returns the time until
/// READY=1.
pub(crate) fn time_to_ready(dir: &Path) -> Duration {
    let config = config_in(dir, "");
    let socket_path = dir.join("notify.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let started = Instant::now();
    let child = Command::new(bin("abxd"))
        .arg("--config")
        .arg(&config.source)
        .env("NOTIFY_SOCKET", &socket_path)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _daemon = KillOnDrop(child);
    let mut buffer = [0u8; 4096];
    loop {
        match socket.recv(&mut buffer) {
            Ok(n)
                if String::from_utf8_lossy(&buffer[..n])
                    .lines()
                    .any(|l| l == "READY=1") =>
            {
                break;
            }
            Ok(_) => {}
            // SIGCHLD (this process supervised children earlier) interrupts the wait.
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => panic!("no READY within a minute: {err}"),
        }
    }
    started.elapsed()
}

/// (4) Recovery at scale: stale running rows and live orphan trees left by a crashed
/// incarnation; the time from start to READY, against an empty table.
pub(crate) fn recovery_at_scale(s: &Sizes, figures: &mut Figures) {
    let empty = scratch_dir();
    let baseline = time_to_ready(empty.path());

    let dir = scratch_dir();
    let config = config_in(dir.path(), "");
    std::fs::create_dir_all(&config.data_dir).unwrap();
    let store = Store::open_at(&config.database).unwrap();
    let namespace = store.marker_namespace().unwrap();
    let conn = rusqlite::Connection::open(config.database.file().unwrap()).unwrap();
    conn.execute_batch("BEGIN").unwrap();
    let boot = abxd::identity::boot_id();
    // A crashed orchestrator (no process has pid 99999: pid_max is 32768 here).
    conn.execute(
        "INSERT INTO processes (id, kind, pid, boot_id, start_ticks, argv, cwd, status, created_at) \
         VALUES (1, 'orchestrator', 99999, ?1, 1, '[]', '/', 'running', 0)",
        [boot],
    )
    .unwrap();
    for id in 2..(2 + s.stale_rows as i64) {
        conn.execute(
            "INSERT INTO processes (id, parent_id, kind, pid, boot_id, start_ticks, argv, cwd, \
             status, created_at) VALUES (?1, 1, 'hook', ?2, ?3, 1, '[]', '/', 'running', 0)",
            rusqlite::params![id, (id % 30000 + 2) as i32, boot],
        )
        .unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
    let mut orphans = Vec::new();
    for _ in 0..s.orphan_trees {
        let row = store
            .processes()
            .insert(&NewProcess {
                parent_id: Some(1),
                kind: Kind::Hook,
                crawl_id: None,
                snapshot_id: None,
                result_id: None,
                argv: vec!["sh".into()],
                cwd: "/".into(),
                timeout_ms: None,
            })
            .unwrap();
        let child = Command::new("sh")
            .args(["-c", "sleep 300 & wait"])
            .env("ABXD_PROCESS_ID", row.to_string())
            .env("ABXD_INSTANCE", &namespace)
            .spawn()
            .unwrap();
        let identity = abxd::identity::of_unreaped_child(child.id() as i32).unwrap();
        store
            .processes()
            .record_spawned(
                row,
                &identity,
                identity.pid,
                (None, None),
                rustix::process::getuid().as_raw(),
            )
            .unwrap();
        orphans.push(child);
    }
    drop(store);
    let recovering = time_to_ready(dir.path());
    for mut orphan in orphans {
        let _ = orphan.kill();
        let _ = orphan.wait();
    }
    figures.add(
        &format!(
            "4 READY after recovering {} stale rows and {} live orphan trees (ms)",
            s.stale_rows, s.orphan_trees
        ),
        recovering.as_secs_f64() * 1000.0,
        Some((
            "READY on an empty table (ms)",
            baseline.as_secs_f64() * 1000.0,
        )),
    );
}
