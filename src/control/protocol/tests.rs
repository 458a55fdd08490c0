//! The protocol's tests: round trips, error codes, and a decoder that survives any bytes.

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
        Request::Add(crate::domain::CrawlSpec {
            urls: vec!["http://example.com/".into()],
            depth: 1,
            plugins: Some(vec!["title".into()]),
            rules: crate::domain::CrawlRules {
                url_denylist: vec![r"\.pdf$".into()],
                max_urls: Some(10),
                ..Default::default()
            },
            input: None,
            options: crate::domain::CrawlOptions {
                tags: vec!["news".into()],
                ..Default::default()
            },
            index_only: false,
            env: Default::default(),
        }),
        Request::Cancel { crawl_id: 3 },
        Request::Retry {
            crawl_id: 3,
            which: crate::domain::RetryScope::Failed,
            hook: Some("on_Snapshot__10_ok.sh".into()),
        },
        Request::Kill {
            row: Some(4),
            pid: None,
            signal: Some(Signal::TERM),
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

#[test]
fn a_frame_buffer_cuts_frames_and_refuses_oversized_ones() {
    let mut buffer = FrameBuffer::default();
    buffer.push(b"{\"a\":1}\n{\"b\"");
    assert_eq!(
        buffer.next_frame(16),
        Some(frame::Cut::Frame(b"{\"a\":1}".to_vec()))
    );
    assert_eq!(buffer.next_frame(16), None);
    buffer.push(b":2}\n");
    assert_eq!(buffer.next_frame(3), Some(frame::Cut::Oversized));
    // A frame in many reads, another after it in the last: each cut whole, in order.
    for part in [&b"{\"c\""[..], b":", b"3}"] {
        buffer.push(part);
        assert_eq!(buffer.next_frame(16), None);
    }
    buffer.push(b"\n{\"d\":4}\n");
    let cut = |line: &[u8]| Some(frame::Cut::Frame(line.to_vec()));
    assert_eq!(buffer.next_frame(16), cut(b"{\"c\":3}"));
    assert_eq!(buffer.next_frame(16), cut(b"{\"d\":4}"));
    assert_eq!(buffer.next_frame(16), None);
    buffer.push(&[b'x'; 20]);
    assert!(buffer.overflowed(16));
}

#[test]
fn read_frame_tells_a_closed_peer_from_an_oversized_frame() {
    assert_eq!(read_frame(&b"{}\n"[..], 8).unwrap(), b"{}");
    assert!(matches!(read_frame(&b""[..], 8), Err(FrameError::Closed)));
    assert!(matches!(
        read_frame(&b"0123456789\n"[..], 4),
        Err(FrameError::TooLarge { max: 4 })
    ));
}
