//! Where the web view listens (a loopback TCP port or a Unix socket) and its accepting thread.
//!
//! Invariants: a Unix socket is made its owner's only (or its owner's and `control.group`'s);
//! a file at its path that is not a socket is never removed; the accepting thread sleeps in
//! `accept` and hands each connection to a thread of its own, at most
//! [`super::MAX_CONNECTIONS`] at once — one more is told 503 and closed.

use super::http::Response;
use super::Shared;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// A socket file left by an earlier run goes; any other file at the path stays, and binding
/// fails naming it.
pub(super) fn remove_stale_socket(path: &std::path::Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path),
        _ => Ok(()),
    }
}

/// The socket file: its owner only, or its owner and `group`.
pub(super) fn restrict_socket(path: &std::path::Path, group: Option<&str>) -> std::io::Result<()> {
    let mode = match group {
        Some(name) => {
            let gid = crate::config::group_id(name).map_err(std::io::Error::other)?;
            nix::unistd::chown(path, None, Some(gid)).map_err(std::io::Error::from)?;
            0o660
        }
        None => 0o600,
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

pub(super) enum Listener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

pub(super) enum Connection {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Connection {
    pub(super) fn set_read_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        match self {
            Connection::Tcp(stream) => stream.set_read_timeout(timeout),
            Connection::Unix(stream) => stream.set_read_timeout(timeout),
        }
    }
}

impl Read for Connection {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Connection::Tcp(stream) => stream.read(buf),
            Connection::Unix(stream) => stream.read(buf),
        }
    }
}

impl Write for Connection {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Connection::Tcp(stream) => stream.write(buf),
            Connection::Unix(stream) => stream.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Connection::Tcp(stream) => stream.flush(),
            Connection::Unix(stream) => stream.flush(),
        }
    }
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Connection::Tcp(stream) => stream.as_fd(),
            Connection::Unix(stream) => stream.as_fd(),
        }
    }
}

pub(super) fn accept_forever(listener: Listener, shared: Arc<Shared>) {
    loop {
        let accepted = match &listener {
            Listener::Tcp(listener) => listener.accept().map(|(s, _)| Connection::Tcp(s)),
            Listener::Unix(listener) => listener.accept().map(|(s, _)| Connection::Unix(s)),
        };
        let mut connection = match accepted {
            Ok(connection) => connection,
            Err(err) => {
                log::warn!("web: accept failed: {err}");
                // (Out of descriptors: do not spin on the error.)
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if shared.connections.fetch_add(1, Ordering::AcqRel) >= super::MAX_CONNECTIONS {
            shared.connections.fetch_sub(1, Ordering::AcqRel);
            let busy = Response::text(503, "too many connections to the web view; try again");
            let _ = busy.write_to(&mut connection, true);
            continue;
        }
        let shared = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("web-conn".into())
            .spawn(move || {
                super::serve_connection(connection, &shared);
                shared.connections.fetch_sub(1, Ordering::AcqRel);
            });
        if let Err(err) = spawned {
            log::warn!("web: cannot start a thread for a connection: {err}");
        }
    }
}
