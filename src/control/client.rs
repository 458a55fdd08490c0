//! The client side of the control socket (used by abxctl): one request, one answer.
//!
//! Invariant: a client never waits forever — connecting to a socket nobody listens on fails at
//! once with [`ClientError::NotRunning`], and a daemon that does not answer in
//! [`ANSWER_TIMEOUT`] is reported as such.

use super::protocol::{self, Request, Response};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("abxd is not running: nothing listens on {socket} ({reason})")]
    NotRunning { socket: PathBuf, reason: String },
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
                _ => io_err(err),
            }
        })?;
        stream
            .set_read_timeout(Some(ANSWER_TIMEOUT))
            .map_err(io_err)?;
        stream
            .write_all(&protocol::encode_request(request))
            .map_err(io_err)?;
        let mut line = Vec::new();
        BufReader::new(stream)
            .take(self.max_frame_bytes as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(io_err)?;
        if line.last() != Some(&b'\n') {
            return Err(if line.is_empty() {
                ClientError::NoAnswer {
                    socket: self.socket.clone(),
                }
            } else {
                ClientError::Protocol(format!(
                    "the answer from abxd is incomplete or larger than {} bytes",
                    self.max_frame_bytes
                ))
            });
        }
        line.pop();
        protocol::decode_response(&line).map_err(|err| ClientError::Protocol(err.message))
    }
}
