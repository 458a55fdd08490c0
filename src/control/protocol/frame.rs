//! Framing: one JSON document per line, with the protocol version, and a size limit that both
//! sides apply while reading (so no peer can make the other buffer without bound).
//!
//! Invariant: this is the one place that knows how a frame is delimited and encoded; the server
//! feeds bytes to a [`FrameBuffer`], the client reads with [`read_frame`].

use super::{ErrorCode, Request, Response};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read};

/// The protocol version this build speaks.
pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct RequestFrame {
    version: u32,
    request: serde_json::Value,
}

#[derive(Serialize, Deserialize)]
struct ResponseFrame {
    version: u32,
    response: Response,
}

/// Why a frame could not be decoded: the error answer to give.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    pub code: ErrorCode,
    pub message: String,
}

impl DecodeError {
    pub fn into_response(self) -> Response {
        Response::Error {
            code: self.code,
            message: self.message,
        }
    }
}

fn decode_error(code: ErrorCode, message: impl Into<String>) -> DecodeError {
    DecodeError {
        code,
        message: message.into(),
    }
}

/// Encodes a request as one frame, newline included.
pub fn encode_request(request: &Request) -> Vec<u8> {
    let frame = serde_json::json!({ "version": VERSION, "request": request });
    let mut bytes = serde_json::to_vec(&frame).expect("requests serialize");
    bytes.push(b'\n');
    bytes
}

/// Encodes an answer as one frame, newline included.
pub fn encode_response(response: &Response) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&ResponseFrame {
        version: VERSION,
        response: response.clone(),
    })
    .expect("responses serialize");
    bytes.push(b'\n');
    bytes
}

/// A frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("the peer closed the connection without a frame")]
    Closed,
    #[error("a frame is incomplete or larger than {max} bytes")]
    TooLarge { max: usize },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Reads one frame (without its newline) from a blocking reader, at most `max` bytes.
pub fn read_frame(reader: impl Read, max: usize) -> Result<Vec<u8>, FrameError> {
    let mut line = Vec::new();
    BufReader::new(reader)
        .take(max as u64 + 1)
        .read_until(b'\n', &mut line)?;
    match line.pop() {
        Some(b'\n') => Ok(line),
        None => Err(FrameError::Closed),
        Some(_) => Err(FrameError::TooLarge { max }),
    }
}

/// Bytes received on a non-blocking connection, cut into frames.
#[derive(Debug, Default)]
pub struct FrameBuffer {
    input: Vec<u8>,
    /// How much of `input` is known to hold no newline: each byte is looked at once, however
    /// many reads a large frame (a bookmarks file of 9 MB) arrives in.
    scanned: usize,
}

/// One item cut from a [`FrameBuffer`].
#[derive(Debug, PartialEq, Eq)]
pub enum Cut {
    /// A whole frame, without its newline.
    Frame(Vec<u8>),
    /// A whole frame over the limit (dropped); the connection stays usable.
    Oversized,
}

impl FrameBuffer {
    pub fn push(&mut self, bytes: &[u8]) {
        self.input.extend_from_slice(bytes);
    }

    /// The next complete frame, if one is there.
    pub fn next_frame(&mut self, max: usize) -> Option<Cut> {
        let Some(found) = self.input[self.scanned..].iter().position(|&b| b == b'\n') else {
            self.scanned = self.input.len();
            return None;
        };
        let end = self.scanned + found;
        self.scanned = 0;
        // (The frame keeps the buffer it arrived in, the bytes after it move: a frame of
        // megabytes is not copied once more.)
        let rest = self.input.split_off(end + 1);
        let mut line = std::mem::replace(&mut self.input, rest);
        line.pop();
        Some(if line.len() > max {
            Cut::Oversized
        } else {
            Cut::Frame(line)
        })
    }

    /// Whether an unfinished frame already passed the limit: the peer is told and dropped.
    pub fn overflowed(&self, max: usize) -> bool {
        self.input.len() > max
    }

    pub fn clear(&mut self) {
        self.input = Vec::new();
        self.scanned = 0;
    }
}

/// Decodes one request frame (without its newline).
pub fn decode_request(line: &[u8]) -> Result<Request, DecodeError> {
    let frame: RequestFrame = serde_json::from_slice(line).map_err(|err| {
        decode_error(
            ErrorCode::Malformed,
            format!("malformed request frame: {err}; expected {{\"version\":{VERSION},\"request\":{{\"type\":...}}}}"),
        )
    })?;
    if frame.version != VERSION {
        return Err(decode_error(
            ErrorCode::UnsupportedVersion,
            format!(
                "protocol version {} is not supported; this daemon speaks version {VERSION}",
                frame.version
            ),
        ));
    }
    let kind = frame
        .request
        .get("type")
        .and_then(|t| t.as_str())
        .map(str::to_string);
    serde_json::from_value(frame.request).map_err(|err| match kind {
        Some(kind) if err.to_string().starts_with("unknown variant") => decode_error(
            ErrorCode::UnknownRequest,
            format!("unknown request type {kind:?}"),
        ),
        _ => decode_error(ErrorCode::Malformed, format!("malformed request: {err}")),
    })
}

/// Decodes one answer frame (without its newline).
pub fn decode_response(line: &[u8]) -> Result<Response, DecodeError> {
    let frame: ResponseFrame = serde_json::from_slice(line).map_err(|err| {
        decode_error(
            ErrorCode::Malformed,
            format!("malformed answer from the daemon: {err}"),
        )
    })?;
    if frame.version != VERSION {
        return Err(decode_error(
            ErrorCode::UnsupportedVersion,
            format!(
                "the daemon speaks protocol version {}, this abxctl version {VERSION}",
                frame.version
            ),
        ));
    }
    Ok(frame.response)
}
