//! The client side of the control socket (used by abxctl): one request, one answer.
//!
//! Invariant: a client never waits forever — connecting to a socket nobody listens on fails at
//! once with [`ClientError::NotRunning`], and a daemon that does not answer in
//! [`ANSWER_TIMEOUT`] is reported as such. Framing is the protocol's (`protocol::read_frame`).

use super::protocol::{self, FrameError, Request, Response};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("abxd is not running: nothing listens on {socket} ({reason})")]
    NotRunning { socket: PathBuf, reason: String },
    #[error("may not talk to abxd on {socket}: {rule}")]
    Refused { socket: PathBuf, rule: String },
    #[error("talking to abxd on {socket}: {cause}")]
    Io {
        socket: PathBuf,
        cause: std::io::Error,
    },
    #[error("abxd on {socket} closed the connection without answering")]
    NoAnswer { socket: PathBuf },
    #[error("{0}")]
    Protocol(String),
}

pub struct Client {
    socket: PathBuf,
    max_frame_bytes: usize,
}

impl Client {
    pub fn new(socket: &Path, max_frame_bytes: usize) -> Client {
        Client {
            socket: socket.to_path_buf(),
            max_frame_bytes,
        }
    }

    pub fn request(&self, request: &Request) -> Result<Response, ClientError> {
        let io_err = |cause| ClientError::Io {
            socket: self.socket.clone(),
            cause,
        };
        let mut stream = UnixStream::connect(&self.socket).map_err(|err| {
            use std::io::ErrorKind::*;
            match err.kind() {
                NotFound | ConnectionRefused => ClientError::NotRunning {
                    socket: self.socket.clone(),
                    reason: err.to_string(),
                },
                PermissionDenied => ClientError::Refused {
                    socket: self.socket.clone(),
                    rule: who_may_talk(&self.socket),
                },
                _ => io_err(err),
            }
        })?;
        stream
            .set_read_timeout(Some(ANSWER_TIMEOUT))
            .map_err(io_err)?;
        stream
            .write_all(&protocol::encode_request(request))
            .map_err(io_err)?;
        let frame =
            protocol::read_frame(stream, self.max_frame_bytes).map_err(|err| match err {
                FrameError::Closed => ClientError::NoAnswer {
                    socket: self.socket.clone(),
                },
                FrameError::TooLarge { max } => ClientError::Protocol(format!(
                    "the answer from abxd is incomplete or larger than {max} bytes"
                )),
                FrameError::Io(cause) => io_err(cause),
            })?;
        protocol::decode_response(&frame).map_err(|err| ClientError::Protocol(err.message))
    }
}

/// Who may talk through `socket`, by its group (or, where the caller may not look at it, its
/// directory's): root and that group's members (how to join it), or — group root — root and the
/// socket's owner (how to let others).
fn who_may_talk(socket: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let group = (std::fs::metadata(socket).ok())
        .or_else(|| std::fs::metadata(socket.parent()?).ok())
        .map(|meta| meta.gid());
    let name = group.and_then(|gid| {
        nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
            .ok()
            .flatten()
            .map(|group| group.name)
    });
    match (group, name) {
        (Some(0), _) => "only root and the socket's owner may (control.group in \
             supervisor.toml(5) names a group whose members may too)"
            .into(),
        (Some(_), Some(name)) => format!(
            "only root and the members of group {name} may (`adduser USER {name}`, then log in \
             again)"
        ),
        (Some(gid), None) => format!("only root and the members of group {gid} may"),
        (None, _) => "only root and the members of the group control.group names may".into(),
    }
}
