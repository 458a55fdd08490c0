//! The daemon side of the control socket: non-blocking connections driven by the event loop.
//!
//! Invariants: the server never blocks the loop — each connection keeps its own input and output
//! buffers and is served as far as its socket allows; an input buffer never grows past the frame
//! limit (an oversized frame is answered with an error and the connection closed); the socket file
//! is created with mode 0660 and removed when the server is dropped.

use super::access::{Access, Policy};
use super::protocol::{self, Cut, ErrorCode, FrameBuffer, Request, Response};
use mio::net::{UnixListener, UnixStream};
use mio::{Interest, Registry, Token};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

struct Connection {
    stream: UnixStream,
    access: Access,
    input: FrameBuffer,
    output: Vec<u8>,
    /// Close once `output` is flushed.
    closing: bool,
}

/// The most connections served at once; more are answered "too many connections" and closed.
pub const MAX_CONNECTIONS: usize = 256;

pub struct Server {
    registry: Registry,
    policy: Policy,
    listener: UnixListener,
    path: PathBuf,
    listener_token: Token,
    connections: HashMap<Token, Connection>,
    next_token: usize,
    max_frame_bytes: usize,
}

impl Server {
    /// Binds the socket at `path` (replacing a stale file: the caller holds the data-dir lock, so
    /// no live daemon of this data dir owns it) and registers it under `token`. Connection tokens
    /// are allocated above `token`.
    pub fn bind(
        path: &Path,
        registry: &Registry,
        token: Token,
        max_frame_bytes: usize,
        policy: Policy,
    ) -> std::io::Result<Server> {
        match std::fs::remove_file(path) {
            Err(err) if err.kind() != ErrorKind::NotFound => return Err(err),
            _ => {}
        }
        // The umask makes the socket 0660 from its first moment: no window where it is wider.
        let old_mask = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o117));
        let bound = UnixListener::bind(path);
        nix::sys::stat::umask(old_mask);
        let mut listener = bound?;
        apply_to_socket_file(path, &policy)?;
        registry.register(&mut listener, token, Interest::READABLE)?;
        Ok(Server {
            registry: registry.try_clone()?,
            policy,
            listener,
            path: path.to_path_buf(),
            listener_token: token,
            connections: HashMap::new(),
            next_token: token.0 + 1,
            max_frame_bytes,
        })
    }

    pub fn set_max_frame_bytes(&mut self, bytes: usize) {
        self.max_frame_bytes = bytes;
    }

    /// Applies a new access policy: to the socket file (group, mode) now, and to connections
    /// accepted from now on.
    pub fn set_policy(&mut self, policy: Policy) -> std::io::Result<()> {
        let applied = apply_to_socket_file(&self.path, &policy);
        self.policy = policy;
        applied
    }

    pub fn owns(&self, token: Token) -> bool {
        token == self.listener_token || self.connections.contains_key(&token)
    }

    /// Serves a readiness event for `token`, answering every complete request with `handle`
    /// (which returns `None` for an answer it gives later through [`Server::reply`]).
    pub fn on_event(&mut self, token: Token, handle: &mut Handler<'_>) {
        if token == self.listener_token {
            self.accept();
            return;
        }
        let Some(connection) = self.connections.get_mut(&token) else {
            return;
        };
        let open = serve(
            connection,
            token,
            self.max_frame_bytes,
            &self.policy,
            handle,
        );
        self.settle(token, open);
    }

    /// Sends a deferred answer to the connection `token` (if it is still open).
    pub fn reply(&mut self, token: Token, response: &Response) {
        let Some(connection) = self.connections.get_mut(&token) else {
            return;
        };
        connection
            .output
            .extend_from_slice(&protocol::encode_response(response));
        let open = flush(connection);
        self.settle(token, open);
    }

    /// Re-registers a connection for what it waits on, or drops it.
    fn settle(&mut self, token: Token, open: bool) {
        let registry = &self.registry;
        let Some(connection) = self.connections.get_mut(&token) else {
            return;
        };
        if open {
            // A peer that does not read its answers is not read from either, until it does:
            // its buffers stay bounded.
            let interest = if connection.output.is_empty() {
                Interest::READABLE
            } else if connection.output.len() > output_limit(self.max_frame_bytes) {
                Interest::WRITABLE
            } else {
                Interest::READABLE | Interest::WRITABLE
            };
            if registry
                .reregister(&mut connection.stream, token, interest)
                .is_ok()
            {
                return;
            }
        }
        if let Some(mut connection) = self.connections.remove(&token) {
            let _ = registry.deregister(&mut connection.stream);
        }
    }

    fn accept(&mut self) {
        let registry = &self.registry;
        loop {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    let access = match peer(&stream) {
                        Some((uid, gid, pid)) => {
                            let access = self.policy.access(uid, gid);
                            if access == Access::Denied {
                                log::warn!(
                                    "control: refused uid {uid} (pid {pid}): {}",
                                    self.policy.rule()
                                );
                            }
                            access
                        }
                        None => Access::Denied,
                    };
                    let refusal = match access {
                        Access::Denied => Some(denied(&self.policy)),
                        _ if self.connections.len() >= MAX_CONNECTIONS => {
                            log::warn!("control: {MAX_CONNECTIONS} connections open, refusing one");
                            Some(Response::Error {
                                code: ErrorCode::TooManyConnections,
                                message: format!(
                                    "abxd serves at most {MAX_CONNECTIONS} connections at once; \
                                     try again"
                                ),
                            })
                        }
                        _ => None,
                    };
                    if let Some(refusal) = refusal {
                        // Best effort, never blocking: the socket buffer takes one small frame.
                        let _ = stream.write(&protocol::encode_response(&refusal));
                        continue;
                    }
                    let token = Token(self.next_token);
                    self.next_token += 1;
                    if let Err(err) = registry.register(&mut stream, token, Interest::READABLE) {
                        log::warn!("control: cannot register a connection: {err}");
                        continue;
                    }
                    self.connections.insert(
                        token,
                        Connection {
                            stream,
                            access,
                            input: FrameBuffer::default(),
                            output: Vec::new(),
                            closing: false,
                        },
                    );
                }
                Err(err) if err.kind() == ErrorKind::WouldBlock => return,
                Err(err) if err.kind() == ErrorKind::Interrupted => continue,
                Err(err) => {
                    log::warn!("control: accept failed: {err}");
                    return;
                }
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Gives the socket file the group and mode `policy` asks for: owned by `control.group` (else
/// the daemon's group), mode 0666 with `control.public_read` (anyone may connect; what they may
/// ask is checked per connection), else 0660.
fn apply_to_socket_file(path: &Path, policy: &Policy) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let group = policy.group_id().unwrap_or_else(nix::unistd::getegid);
    nix::unistd::chown(path, None, Some(group))?;
    let mode = if policy.public_read() { 0o666 } else { 0o660 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Answers a request now (`Some`) or later through [`Server::reply`] (`None`).
pub type Handler<'a> = dyn FnMut(Token, Request) -> Option<Response> + 'a;

/// Reads what is there, answers complete frames, writes what the peer accepts. Returns whether
/// the connection stays open.
fn serve(
    connection: &mut Connection,
    token: Token,
    max_frame_bytes: usize,
    policy: &Policy,
    handle: &mut Handler<'_>,
) -> bool {
    // (A bookmarks file of megabytes arrives in a few hundred reads, not thousands.)
    let mut chunk = vec![0u8; 64 * 1024];
    let mut peer_closed = false;
    while !connection.closing && connection.output.len() <= output_limit(max_frame_bytes) {
        match connection.stream.read(&mut chunk) {
            Ok(0) => {
                peer_closed = true;
                break;
            }
            Ok(n) => {
                connection.input.push(&chunk[..n]);
                answer_complete_frames(connection, token, max_frame_bytes, policy, handle);
            }
            Err(err) if err.kind() == ErrorKind::WouldBlock => break,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
    flush(connection) && !(connection.closing || peer_closed)
}

/// Writes what the peer accepts of the connection's output. Returns whether it stays usable.
fn flush(connection: &mut Connection) -> bool {
    while !connection.output.is_empty() {
        match connection.stream.write(&connection.output) {
            Ok(0) => return false,
            Ok(n) => {
                connection.output.drain(..n);
            }
            Err(err) if err.kind() == ErrorKind::WouldBlock => return true,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
    !connection.closing
}

fn answer_complete_frames(
    connection: &mut Connection,
    token: Token,
    max_frame_bytes: usize,
    policy: &Policy,
    handle: &mut Handler<'_>,
) {
    while let Some(cut) = connection.input.next_frame(max_frame_bytes) {
        let response = match cut {
            Cut::Oversized => Some(too_large(max_frame_bytes)),
            Cut::Frame(line) => {
                let decoded = protocol::decode_request(&line);
                // (Let go once decoded: an import's file is not held twice while it is
                // written to the database.)
                drop(line);
                match decoded {
                    Ok(request) if connection.access == Access::Full || request.is_read_only() => {
                        handle(token, request)
                    }
                    Ok(_) => {
                        log::warn!("control: refused a request from a read-only peer");
                        Some(denied(policy))
                    }
                    Err(err) => {
                        log::warn!("control: bad request: {}", err.message);
                        Some(err.into_response())
                    }
                }
            }
        };
        if let Some(response) = response {
            connection
                .output
                .extend_from_slice(&protocol::encode_response(&response));
        }
    }
    if connection.input.overflowed(max_frame_bytes) {
        log::warn!("control: request frame over {max_frame_bytes} bytes, closing the connection");
        connection.input.clear();
        connection
            .output
            .extend_from_slice(&protocol::encode_response(&too_large(max_frame_bytes)));
        connection.closing = true;
    }
}

/// How much unread output a connection may pile up before it is no longer read from.
fn output_limit(max_frame_bytes: usize) -> usize {
    4 * max_frame_bytes
}

/// The peer's (uid, gid, pid).
fn peer(stream: &UnixStream) -> Option<(u32, u32, i32)> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let credentials = getsockopt(stream, PeerCredentials).ok()?;
    Some((credentials.uid(), credentials.gid(), credentials.pid()))
}

fn denied(policy: &Policy) -> Response {
    Response::Error {
        code: ErrorCode::PermissionDenied,
        message: format!("permission denied: {}", policy.rule()),
    }
}

fn too_large(max_frame_bytes: usize) -> Response {
    Response::Error {
        code: ErrorCode::FrameTooLarge,
        message: format!("request frame larger than {max_frame_bytes} bytes"),
    }
}
