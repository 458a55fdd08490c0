//! The little of HTTP/1.1 the web view speaks: one request per connection, read whole before it
//! is answered; an answer with its length, or a stream of Server-Sent Events.
//!
//! Invariants: a request's head is read up to [`MAX_HEAD_BYTES`] and within [`READ_TIMEOUT`],
//! else the connection is closed with 400 or 408; a request with a body is refused (the view
//! is read-only: only GET and HEAD are answered, anything else gets 405 with `Allow`); every
//! answer says `Connection: close` and carries the headers that keep a browser from guessing a
//! type or framing the page ([`Response::write_to`]).

use std::io::{BufRead, Write};
use std::time::Duration;

/// The most a request's line and headers may take.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// How long a client has to send its request's head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A request's method, as far as the view cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    /// Anything else: refused with 405.
    Other,
}

/// A request, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    /// The path, still %-encoded, without the query.
    pub path: String,
    /// The query's pairs, %-decoded.
    pub query: Vec<(String, String)>,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The value of the header `name` (lower case), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The value of the query parameter `name`, if given.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Why a request could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum BadRequest {
    /// The client sent nothing whole in time, or went away.
    Incomplete,
    /// The head is too large or not HTTP.
    Malformed(&'static str),
}

/// Reads one request's head from `reader`.
pub fn read_request(reader: &mut impl BufRead) -> Result<Request, BadRequest> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let read = std::io::Read::take(&mut *reader, (MAX_HEAD_BYTES + 1 - head.len()) as u64)
            .read_until(b'\n', &mut head)
            .map_err(|_| BadRequest::Incomplete)?;
        if head.len() > MAX_HEAD_BYTES {
            return Err(BadRequest::Malformed("request head too large"));
        }
        if read == 0 {
            return Err(BadRequest::Incomplete);
        }
        let line = &head[before..];
        if line == b"\r\n" || line == b"\n" {
            break;
        }
    }
    parse_head(&head)
}

/// Parses a request's head (its line and headers, up to the empty line).
pub fn parse_head(head: &[u8]) -> Result<Request, BadRequest> {
    let text = std::str::from_utf8(head).map_err(|_| BadRequest::Malformed("not UTF-8"))?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request_line = lines
        .next()
        .ok_or(BadRequest::Malformed("no request line"))?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(BadRequest::Malformed("bad request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(BadRequest::Malformed("not HTTP/1"));
    }
    if !target.starts_with('/') {
        return Err(BadRequest::Malformed("the target is not a path"));
    }
    let method = match method {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        _ => Method::Other,
    };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let path = path.split('#').next().unwrap_or("").to_string();
    let query = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode_query(key), decode_query(value))
        })
        .collect();
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or(BadRequest::Malformed("bad header line"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    Ok(Request {
        method,
        path,
        query,
        headers,
    })
}

/// A query component %-decoded (`+` is a space), lossily where it is not UTF-8.
fn decode_query(text: &str) -> String {
    let spaced = text.replace('+', " ");
    match crate::serve::percent_decoded(&spaced) {
        Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        None => spaced,
    }
}

/// `text` %-encoded for one segment of a URL's path (or a query value): every byte but
/// unreserved ones.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &byte in text.as_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// An answer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Headers beyond the ones every answer has.
    pub headers: Vec<(&'static str, String)>,
}

/// What every page of the view may load: its own script and style, nothing from elsewhere.
pub const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// What an archived file may do when opened through the view: nothing active (no script, an
/// origin of its own), so a hostile page archived cannot read the view.
pub const FILE_POLICY: &str = "sandbox; frame-ancestors 'none'";

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
            headers: Vec::new(),
        }
    }

    /// A plain-text answer (errors, mostly).
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        let mut body = body.into();
        if !body.ends_with('\n') {
            body.push('\n');
        }
        Response::new(status, "text/plain; charset=utf-8", body)
    }

    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }

    /// Writes the answer; for HEAD (`with_body` false), its head only.
    pub fn write_to(&self, out: &mut impl Write, with_body: bool) -> std::io::Result<()> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
             Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
             Referrer-Policy: no-referrer\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        if !self
            .headers
            .iter()
            .any(|(name, _)| *name == "Content-Security-Policy")
        {
            head.push_str(&format!("Content-Security-Policy: {PAGE_POLICY}\r\n"));
        }
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        out.write_all(head.as_bytes())?;
        if with_body {
            out.write_all(&self.body)?;
        }
        out.flush()
    }
}

/// The head of a stream of Server-Sent Events.
pub fn event_stream_head() -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\
         Cache-Control: no-store\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\n\
         Content-Security-Policy: {PAGE_POLICY}\r\n\r\n"
    )
}

/// One Server-Sent Event carrying `data` (each of its lines a `data:` line).
pub fn event(name: &str, data: &str) -> String {
    let mut out = format!("event: {name}\n");
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    out
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_head_is_parsed_with_its_query_and_headers() {
        let head = b"GET /snapshot/3?token=ab%2Bc&x=a+b HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                     Authorization: Bearer t0k\r\n\r\n";
        let request = parse_head(head).unwrap();
        assert_eq!(request.method, Method::Get);
        assert_eq!(request.path, "/snapshot/3");
        assert_eq!(request.param("token"), Some("ab+c"));
        assert_eq!(request.param("x"), Some("a b"));
        assert_eq!(request.header("authorization"), Some("Bearer t0k"));
        assert_eq!(request.header("cookie"), None);
    }

    #[test]
    fn other_methods_are_told_apart_and_garbage_is_refused() {
        let post = parse_head(b"POST / HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(post.method, Method::Other);
        assert!(parse_head(b"GET / HTTP/2\r\n\r\n").is_err());
        assert!(parse_head(b"GET http://x/ HTTP/1.1\r\n\r\n").is_err());
        assert!(parse_head(b"GET /\r\n\r\n").is_err());
        assert!(parse_head(b"GET / HTTP/1.1\r\nno colon\r\n\r\n").is_err());
    }

    #[test]
    fn a_head_is_read_to_its_empty_line_and_no_further_than_the_limit() {
        let mut input: &[u8] = b"GET / HTTP/1.1\r\nA: b\r\n\r\nrest";
        assert_eq!(read_request(&mut input).unwrap().path, "/");
        assert_eq!(input, b"rest");
        let huge = format!(
            "GET / HTTP/1.1\r\nA: {}\r\n\r\n",
            "x".repeat(MAX_HEAD_BYTES)
        );
        assert_eq!(
            read_request(&mut huge.as_bytes()),
            Err(BadRequest::Malformed("request head too large"))
        );
        assert_eq!(
            read_request(&mut &b"GET / HTTP/1.1\r\n"[..]),
            Err(BadRequest::Incomplete)
        );
    }

    #[test]
    fn percent_coding_goes_both_ways() {
        assert_eq!(percent_encode("a b/<c>.html"), "a%20b%2F%3Cc%3E.html");
        let decoded = crate::serve::percent_decoded(&percent_encode("é ../x"));
        assert_eq!(decoded.as_deref(), Some("é ../x".as_bytes()));
    }

    #[test]
    fn an_event_puts_each_line_of_its_data_on_a_line_of_its_own() {
        assert_eq!(
            event("tree", "<p>a</p>\r\n<p>b</p>"),
            "event: tree\ndata: <p>a</p>\ndata: <p>b</p>\n\n"
        );
    }
}
