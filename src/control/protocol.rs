//! The control protocol: newline-delimited JSON frames, versioned, size-limited.
//!
//! A request frame is `{"version":1,"request":{"type":"status"}}`; an answer frame is
//! `{"version":1,"response":{"type":"status",...}}` or `{"version":1,"response":{"type":"error",
//! "code":"...","message":"..."}}`. Invariant: decoding never panics and every malformed frame
//! maps to an [`ErrorCode`] the peer is told about.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The protocol version this build speaks.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Is the daemon up, since when, and what runs.
    Status,
    /// New work was enqueued: look for due crawls now.
    Wake,
    /// Enqueue a crawl (the daemon writes it, so whoever may act may add work without write
    /// access to the database).
    Add {
        urls: Vec<String>,
        #[serde(default)]
        depth: u32,
        /// The plugins to run; all enabled ones when absent.
        #[serde(default)]
        plugins: Option<Vec<String>>,
    },
    /// Tear down a live process of the table and its subtree. `row` or `pid` names it.
    Kill {
        #[serde(default)]
        row: Option<i64>,
        #[serde(default)]
        pid: Option<i32>,
        /// The first signal (a number); SIGTERM when absent.
        #[serde(default)]
        signal: Option<i32>,
        /// Time between the first signal and SIGKILL; `timeouts.kill_grace` when absent.
        #[serde(default)]
        grace_ms: Option<u64>,
        /// Answer when the teardown is finished, with what happened to each process.
        #[serde(default)]
        wait: bool,
    },
    /// Stop a crawl for good: seal it as cancelled and tear its processes down.
    Cancel { crawl_id: i64 },
    /// Debug only (`control.allow_debug_spawn`): run a command as a child of the orchestrator.
    Spawn {
        argv: Vec<String>,
        #[serde(default)]
        cwd: Option<String>,
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
}

impl Request {
    /// Whether the request only reads (may be allowed to more peers than those that act).
    pub fn is_read_only(&self) -> bool {
        matches!(self, Request::Status)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    Status(StatusInfo),
    Spawned {
        id: i64,
        pid: i32,
    },
    Woken,
    /// The crawl was enqueued.
    Added {
        crawl_id: i64,
    },
    /// A teardown began; it was not asked to wait.
    TeardownStarted {
        row: i64,
    },
    /// A teardown finished.
    TornDown(crate::teardown::Report),
    Error {
        code: ErrorCode,
        message: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    Malformed,
    UnsupportedVersion,
    UnknownRequest,
    FrameTooLarge,
    NotAllowed,
    NotFound,
    PermissionDenied,
    TooManyConnections,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusInfo {
    pub pid: u32,
    pub version: String,
    pub started_at_ms: i64,
    pub uptime_ms: i64,
    pub database: String,
    pub socket: String,
    /// Rows that claim a live process, by kind.
    pub live: BTreeMap<String, u64>,
    /// Orphan trees of a previous incarnation are still being torn down; no work is claimed yet.
    #[serde(default)]
    pub recovering: bool,
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(bytes: &[u8]) -> ErrorCode {
        decode_request(bytes).unwrap_err().code
    }

    #[test]
    fn request_round_trips() {
        let request = Request::Spawn {
            argv: vec!["sleep".into(), "1".into()],
            cwd: None,
            timeout_ms: Some(5),
        };
        let bytes = encode_request(&request);
        assert_eq!(bytes.last(), Some(&b'\n'));
        assert_eq!(decode_request(&bytes[..bytes.len() - 1]).unwrap(), request);
    }

    #[test]
    fn bad_frames_get_distinct_codes() {
        assert_eq!(code_of(b"{not json"), ErrorCode::Malformed);
        assert_eq!(code_of(b"[]"), ErrorCode::Malformed);
        assert_eq!(
            code_of(br#"{"version":99,"request":{"type":"status"}}"#),
            ErrorCode::UnsupportedVersion
        );
        assert_eq!(
            code_of(br#"{"version":1,"request":{"type":"reboot"}}"#),
            ErrorCode::UnknownRequest
        );
        assert_eq!(
            code_of(br#"{"version":1,"request":{"type":"spawn","argv":3}}"#),
            ErrorCode::Malformed
        );
    }

    #[test]
    fn response_round_trips() {
        let response = Response::Error {
            code: ErrorCode::NotAllowed,
            message: "no".into(),
        };
        let bytes = encode_response(&response);
        assert_eq!(
            decode_response(&bytes[..bytes.len() - 1]).unwrap(),
            response
        );
    }

    /// A small deterministic generator (xorshift64*), so a failure can be replayed by seed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Property: whatever the bytes — random, or a valid frame mutated, cut or grown — the
    /// decoder returns a request or an error answer; it never panics, and what it accepts
    /// encodes back to a frame it accepts again.
    #[test]
    fn the_decoder_survives_any_bytes() {
        let seed = 0x5eed_abcd_u64;
        let mut rng = Rng(seed);
        let valid: Vec<Vec<u8>> = [
            Request::Status,
            Request::Wake,
            Request::Add {
                urls: vec!["http://example.com/".into()],
                depth: 1,
                plugins: Some(vec!["title".into()]),
            },
            Request::Cancel { crawl_id: 3 },
            Request::Kill {
                row: Some(4),
                pid: None,
                signal: Some(15),
                grace_ms: Some(10),
                wait: true,
            },
            Request::Spawn {
                argv: vec!["true".into()],
                cwd: None,
                timeout_ms: None,
            },
        ]
        .iter()
        .map(|r| {
            let mut bytes = encode_request(r);
            bytes.pop();
            bytes
        })
        .collect();
        const ALPHABET: &[u8] = b"{}[]\":,0123456789-.eE truefalsnul\\\xff\x00versionrequesttype";
        for case in 0..100_000 {
            let mut bytes = valid[rng.below(valid.len())].clone();
            match rng.below(5) {
                0 => {
                    bytes = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
                }
                1 => {
                    for _ in 0..=rng.below(4) {
                        let at = rng.below(bytes.len());
                        bytes[at] = ALPHABET[rng.below(ALPHABET.len())];
                    }
                }
                2 => bytes.truncate(rng.below(bytes.len() + 1)),
                3 => {
                    let at = rng.below(bytes.len() + 1);
                    let extra: Vec<u8> = (0..rng.below(8))
                        .map(|_| ALPHABET[rng.below(ALPHABET.len())])
                        .collect();
                    bytes.splice(at..at, extra);
                }
                _ => {}
            }
            let outcome = std::panic::catch_unwind(|| decode_request(&bytes));
            let decoded = outcome.unwrap_or_else(|_| {
                panic!("seed {seed:#x}, case {case}: decoder panicked on {bytes:?}")
            });
            if let Ok(request) = decoded {
                let again = encode_request(&request);
                assert_eq!(decode_request(&again[..again.len() - 1]), Ok(request));
            }
        }
    }
}
