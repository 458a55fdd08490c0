//! The daemon under a (simulated) systemd: the sd_notify protocol on a datagram socket set as
//! NOTIFY_SOCKET — READY only after recovery, watchdog pings at half the interval, STOPPING.

mod common;

use common::{fixtures, plugins_config, wait_until, TestDaemon, WAIT};
use nix::sys::signal::Signal;
use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

const WATCHDOG_USEC: u64 = 1_000_000;

/// Receives the next notification (one datagram, possibly several `KEY=value` lines).
fn next_message(socket: &UnixDatagram) -> String {
    let mut buffer = [0u8; 4096];
    let n = socket
        .recv(&mut buffer)
        .expect("a notification within the timeout");
    String::from_utf8_lossy(&buffer[..n]).into_owned()
}

#[test]
fn ready_after_recovery_watchdog_at_half_the_interval_and_stopping_at_shutdown() {
    let mut daemon = TestDaemon::prepare(&format!(
        "{}[plugins.long_running]\ntimeout = \"300s\"\n",
        plugins_config(&[&fixtures().join("escape")])
    ));
    // A previous incarnation that crashed with work running: recovery has orphans to kill.
    daemon.launch();
    daemon.add(&["http://127.0.0.1:9/", "--plugins", "long_running"]);
    wait_until("the hook to run", WAIT, || {
        let rows = daemon
            .store()
            .processes()
            .list(&Default::default())
            .unwrap();
        rows.iter()
            .any(|r| r.kind == abxd::domain::Kind::Child && r.status.is_live())
            .then_some(())
    });
    daemon.crash();
    let orphans = common::tagged_pids(&daemon.tag);
    assert!(!orphans.is_empty());

    let path = daemon.path("notify.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    daemon.launch_with_env(&[
        ("NOTIFY_SOCKET", path.to_str().unwrap()),
        ("WATCHDOG_USEC", &WATCHDOG_USEC.to_string()),
    ]);

    let first = next_message(&socket);
    assert!(first.lines().any(|l| l == "READY=1"), "{first:?}");
    assert!(first.contains("STATUS="), "{first:?}");
    // At READY, recovery has run: the orphans are gone; and the control socket answers.
    for pid in &orphans {
        assert!(
            abxd::identity::of_pid(*pid).is_none(),
            "orphan {pid} alive at READY"
        );
    }
    daemon.ctl_ok(&["status"]);

    let mut pings = Vec::new();
    while pings.len() < 4 {
        let message = next_message(&socket);
        if message.lines().any(|l| l == "WATCHDOG=1") {
            pings.push(Instant::now());
        }
    }
    let interval = Duration::from_micros(WATCHDOG_USEC);
    for gap in pings.windows(2).map(|w| w[1] - w[0]) {
        assert!(
            gap < interval,
            "a ping came {gap:?} after the last: systemd would kill us"
        );
        assert!(
            gap >= interval / 2 - interval / 10,
            "pings too often: {gap:?}"
        );
    }
    // Children never see the supervisor's notify socket (checked on hooks in tests/crawl.rs).

    daemon.signal(Signal::SIGTERM);
    let stopping = wait_until("STOPPING=1", WAIT, || {
        let message = next_message(&socket);
        message
            .lines()
            .any(|l| l == "STOPPING=1")
            .then_some(message)
    });
    assert!(stopping.contains("STOPPING=1"));
    assert_eq!(daemon.wait_exit().code(), Some(0));
}

#[test]
fn without_notify_socket_nothing_is_sent_and_the_daemon_runs() {
    // The daemon of every other test runs without NOTIFY_SOCKET; here, with WATCHDOG_USEC alone,
    // it must neither fail nor wake up for a watchdog nobody asked for.
    let mut daemon = TestDaemon::prepare("");
    daemon.launch_with_env(&[("WATCHDOG_USEC", "100000")]);
    common::assert_sleeps_without_timer(daemon.pid());
}
