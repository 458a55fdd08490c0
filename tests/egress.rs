//! The egress policy as the kernel enforces it: the programs of `egress::program`, attached by
//! `egress::kernel` to a real cgroup v2 directory, refuse every connect and UDP send of a process
//! in it to the networks refused — IPv4, IPv6 and IPv4-mapped forms — and let through what an
//! allowed rule names (a network and port); servers outside the cgroup count what reaches them.
//!
//! Needs root and a writable cgroup v2 with BPF (CI has both); elsewhere the test says it skips.

mod common;

use abxd::egress::kernel;
use abxd::egress::program::Policy;
use abxd::egress::ranges::{Net, V4, V6};
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A cgroup of this test's own below this process's (where abxd makes its own), removed when
/// dropped.
struct TestCgroup(PathBuf);

impl TestCgroup {
    fn new(name: &str) -> Option<TestCgroup> {
        let made = (abxd::cgroup::own_cgroup().ok())
            .filter(|_| rustix::process::geteuid().is_root())
            .map(|own| {
                own.dir
                    .join(format!("abxd-egress-{name}-{}", std::process::id()))
            })
            .filter(|dir| std::fs::create_dir(dir).is_ok());
        if made.is_none() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs as root with a writable cgroup v2"
            );
            eprintln!("skipped: needs root and a writable cgroup v2");
        }
        made.map(TestCgroup)
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A TCP server on 127.0.0.1 outside the cgroup that counts the connections it accepts.
fn counting_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (port, accepted)
}

/// What a process inside the cgroup makes of each attempt: `ok`, or the error's name.
const ATTEMPTS: &str = r#"
import socket, sys
def attempt(family, kind, address):
    s = socket.socket(family, kind)
    s.settimeout(5)
    try:
        if kind == socket.SOCK_STREAM:
            s.connect(address)
        else:
            s.sendto(b"x", address)
        return "ok"
    except OSError as err:
        return type(err).__name__
    finally:
        s.close()
refused, allowed = int(sys.argv[1]), int(sys.argv[2])
print(attempt(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", refused)))
print(attempt(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", allowed)))
print(attempt(socket.AF_INET6, socket.SOCK_STREAM, ("::ffff:127.0.0.1", refused)))
print(attempt(socket.AF_INET6, socket.SOCK_STREAM, ("::1", refused)))
print(attempt(socket.AF_INET, socket.SOCK_DGRAM, ("169.254.169.254", 80)))
print(attempt(socket.AF_INET6, socket.SOCK_DGRAM, ("fd00:ec2::254", 80)))
"#;

#[test]
fn a_process_in_the_cgroup_reaches_only_what_the_policy_lets_through() {
    let Some(cgroup) = TestCgroup::new("policy") else {
        return;
    };
    let (refused_port, refused_accepted) = counting_server();
    let (allowed_port, allowed_accepted) = counting_server();
    let policy = Policy {
        allowed_v4: vec![(
            Net {
                addr: Ipv4Addr::LOCALHOST,
                prefix: 32,
            },
            Some(allowed_port),
        )],
        allowed_v6: vec![],
        refused_v4: V4.to_vec(),
        refused_v6: V6.to_vec(),
    };
    kernel::attach(&policy, &cgroup.0, None, None).unwrap_or_else(|err| panic!("{err}"));

    let said = run_in(&cgroup, ATTEMPTS, &[refused_port, allowed_port]);
    let results: Vec<&str> = said.lines().collect();
    assert_eq!(
        results,
        [
            "PermissionError",
            "ok",
            "PermissionError",
            "PermissionError",
            "PermissionError",
            "PermissionError"
        ],
        "loopback (IPv4, mapped, IPv6) and the metadata addresses refused, the allowed port not"
    );
    // (The allowed connection was accepted before the child went on; none reached the other.)
    common::wait_until("the allowed server to count one", common::WAIT, || {
        (allowed_accepted.load(Ordering::SeqCst) == 1).then_some(())
    });
    assert_eq!(refused_accepted.load(Ordering::SeqCst), 0);
}

/// Runs the Python `script` with `ports` as its arguments in `cgroup` (entered before the script
/// runs, as a hook enters its row's); returns what it printed.
fn run_in(cgroup: &TestCgroup, script: &str, ports: &[u16]) -> String {
    let procs = cgroup.0.join("cgroup.procs");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("echo $$ > \"$1\" && shift && exec python3 -c \"$@\"")
        .args(["sh", procs.to_str().unwrap(), script])
        .args(ports.iter().map(u16::to_string))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{said}");
    said
}

/// A process of the crawl that listens on loopback (its browser's DevTools port), then what the
/// crawl's hooks make of connecting to it and to a loopback server outside the crawl.
const OWN_LISTENER: &str = r#"
import socket, sys
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
def attempt(port):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        return "ok"
    except OSError as err:
        return type(err).__name__
    finally:
        s.close()
print(attempt(listener.getsockname()[1]))
print(attempt(int(sys.argv[1])))
"#;

#[test]
fn loopback_is_open_to_what_the_crawls_own_processes_listen_on_and_to_nothing_else() {
    let Some(cgroup) = TestCgroup::new("listeners") else {
        return;
    };
    let (outside_port, outside_accepted) = counting_server();
    let policy = Policy {
        refused_v4: V4.to_vec(),
        refused_v6: V6.to_vec(),
        ..Policy::default()
    };
    let listeners = kernel::Listeners::new().unwrap_or_else(|err| panic!("{err}"));
    kernel::record_listeners(&listeners, &cgroup.0).unwrap_or_else(|err| panic!("{err}"));
    kernel::attach(&policy, &cgroup.0, Some(&listeners), None)
        .unwrap_or_else(|err| panic!("{err}"));
    let said = run_in(&cgroup, OWN_LISTENER, &[outside_port]);
    let results: Vec<&str> = said.lines().collect();
    assert_eq!(
        results,
        ["ok", "PermissionError"],
        "its own listener reached, the host's refused"
    );
    assert_eq!(outside_accepted.load(Ordering::SeqCst), 0);
}
