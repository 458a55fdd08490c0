//! Benchmark 10: the web view — what it costs the daemon with nobody looking, and with a client
//! watching a crawl.

use crate::common::TestDaemon;
use crate::harness::*;
use crate::procfs::*;
use std::io::{Read, Write};
use std::time::Duration;

/// A port nobody listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The config of a daemon that runs 8 snapshots at once, with the web view on `port` if given.
fn config(port: Option<u16>) -> String {
    let web = port
        .map(|port| format!("[web]\nlisten = \"127.0.0.1:{port}\"\n"))
        .unwrap_or_default();
    format!(
        "[limits]\nmax_snapshot_workers = 8\nmemory_floor = 0\n\
         [plugins.sleepy]\nenv = {{ SLEEPY_SECONDS = \"2\" }}\n{web}"
    )
}

/// Wake-ups (every thread), CPU ticks and PSS (MiB) of the idle daemon over `idle`.
fn idle_figures(daemon: &TestDaemon, idle: Duration) -> (f64, f64, f64) {
    let pid = daemon.pid();
    std::thread::sleep(Duration::from_millis(300));
    let (w0, c0) = (task_switches(pid), cpu_ticks(pid));
    std::thread::sleep(idle);
    let (w1, c1) = (task_switches(pid), cpu_ticks(pid));
    ((w1 - w0) as f64, (c1 - c0) as f64, pss_uss_mib(pid).0)
}

/// A client of the index's event stream on `port`, reading until it is shut down.
struct Watcher {
    stream: std::net::TcpStream,
    reader: std::thread::JoinHandle<usize>,
}

impl Watcher {
    fn start(port: u16, token: &str) -> Watcher {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            stream,
            "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n"
        )
        .unwrap();
        let mut read_side = stream.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 64 * 1024];
            let mut events = 0;
            while let Ok(n) = read_side.read(&mut buf) {
                if n == 0 {
                    break;
                }
                events += buf[..n]
                    .windows(12)
                    .filter(|w| w == b"event: live\n")
                    .count();
            }
            events
        });
        Watcher { stream, reader }
    }

    /// Closes the stream; returns how many updates it received.
    fn stop(self) -> usize {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        self.reader.join().unwrap()
    }
}

/// Runs an 8-snapshot crawl; returns the daemon's CPU (ms), wake-ups (every thread) over it, and
/// its peak RSS (MiB).
fn crawl_figures(daemon: &TestDaemon) -> (f64, f64, f64) {
    let pid = daemon.pid();
    let (w0, c0) = (task_switches(pid), cpu_ticks(pid));
    let mut args = vec!["add".to_string()];
    args.extend((0..8).map(|i| format!("http://127.0.0.1:9/{i}")));
    args.extend(["--plugins".into(), "sleepy".into(), "--wait".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = daemon.ctl(&args);
    assert!(out.status.success(), "{out:?}");
    let (w1, c1) = (task_switches(pid), cpu_ticks(pid));
    let tick_ms = 1000.0 / procfs::ticks_per_second() as f64;
    (
        (c1 - c0) as f64 * tick_ms,
        (w1 - w0) as f64,
        proc_field(pid, "VmHWM:") as f64 / 1024.0,
    )
}

/// (10) The idle daemon with the web view on and no client, against one with it off; and an
/// 8-snapshot crawl (2 s hooks, 8 at once) with a client watching the index's event stream,
/// against the same crawl with nobody watching.
pub(crate) fn web_view(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let off = daemon_with_test_plugins(dir.path(), &config(None));
    let port = free_port();
    let on = daemon_with_test_plugins(dir.path(), &config(Some(port)));
    let token = std::fs::read_to_string(on.data_dir().join("web-token")).unwrap();
    let token = token.trim();

    let idle = format!(
        "10 idle daemon over {} s, web view on, no client:",
        s.idle.as_secs()
    );
    let (off_wakeups, off_ticks, off_pss) = idle_figures(&off, s.idle);
    let (on_wakeups, on_ticks, on_pss) = idle_figures(&on, s.idle);
    // (Wake-ups and ticks are counts, 0 when all is well: side by side, never a ratio of zeros.)
    let idle_off = format!("10 idle daemon over {} s, web view off:", s.idle.as_secs());
    figures.add(&format!("{idle} wake-ups (all threads)"), on_wakeups, None);
    figures.add(
        &format!("{idle_off} wake-ups (all threads)"),
        off_wakeups,
        None,
    );
    figures.add(&format!("{idle} CPU ticks"), on_ticks, None);
    figures.add(&format!("{idle_off} CPU ticks"), off_ticks, None);
    figures.add(
        &format!("{idle} PSS (MiB)"),
        on_pss,
        Some(("web view off", off_pss)),
    );

    let (alone_ms, alone_wakeups, _) = crawl_figures(&on);
    let watcher = Watcher::start(port, token);
    let (watched_ms, watched_wakeups, peak_mib) = crawl_figures(&on);
    let updates = watcher.stop();
    let crawl = "10 crawl of 8 snapshots, a client watching the web view:";
    let alone = "10 crawl of 8 snapshots, nobody watching:";
    figures.add(&format!("{crawl} daemon CPU (ms)"), watched_ms, None);
    figures.add(&format!("{alone} daemon CPU (ms)"), alone_ms, None);
    figures.add(
        &format!("{crawl} daemon wake-ups (all threads)"),
        watched_wakeups,
        None,
    );
    figures.add(
        &format!("{alone} daemon wake-ups (all threads)"),
        alone_wakeups,
        None,
    );
    figures.add(&format!("{crawl} daemon peak RSS (MiB)"), peak_mib, None);
    figures.add(
        &format!("{crawl} updates the client received"),
        updates as f64,
        None,
    );
}
