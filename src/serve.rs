//! A loopback static file server, so `abxd run PATH` can crawl a local page over real HTTP.
//!
//! Invariants: it listens on 127.0.0.1 only, on a port the kernel picks; it serves files below
//! its root and nothing else (no `..`, no symlink out of the root); it runs on one thread of its
//! own and never touches the supervisor's state. The web view serves a snapshot's files by the
//! same rule ([`resolve`]).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};

/// Starts serving `root` and returns its address.
pub fn serve_dir(root: &Path) -> std::io::Result<SocketAddr> {
    let root = root.canonicalize()?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::Builder::new()
        .name("serve".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Err(err) = answer(stream, &root) {
                    log::debug!("serve: {err}");
                }
            }
        })?;
    Ok(addr)
}

pub fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css",
        "js" => "text/javascript",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "svg" => "image/svg+xml",
        "txt" | "log" | "jsonl" => "text/plain; charset=utf-8",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        _ => "application/octet-stream",
    }
}

/// The file a request path names, if it lies below `root`. Each segment is %-decoded (a page
/// links `My%20Page.html` for `My Page.html`); a segment that decodes to `..`, or to anything
/// holding a `/` or a NUL, names nothing.
pub fn resolve(root: &Path, request_path: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let path = request_path.split(['?', '#']).next()?;
    let mut file = root.to_path_buf();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        let part = percent_decoded(part)?;
        if part == b".." || part.contains(&b'/') || part.contains(&0) {
            return None;
        }
        file.push(std::ffi::OsStr::from_bytes(&part));
    }
    if file.is_dir() {
        file.push("index.html");
    }
    let file = file.canonicalize().ok()?;
    file.starts_with(root).then_some(file)
}

/// `text` with each `%XX` replaced by the byte it stands for; `None` for a `%` not followed by
/// two hex digits.
pub fn percent_decoded(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

fn answer(stream: TcpStream, root: &Path) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Drain the headers.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let mut stream = stream;
    let found = resolve(root, path).and_then(|f| std::fs::read(&f).ok().map(|body| (f, body)));
    match (method, found) {
        ("GET" | "HEAD", Some((file, body))) => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                content_type(&file),
                body.len()
            )?;
            if method == "GET" {
                stream.write_all(&body)?;
            }
        }
        ("GET" | "HEAD", None) => {
            stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )?;
        }
        _ => {
            stream.write_all(
                b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )?;
        }
    }
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::{percent_decoded, resolve};

    #[test]
    fn paths_are_percent_decoded_and_never_leave_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("My Page.html"), "x").unwrap();
        std::fs::write(root.join("100%.txt"), "x").unwrap();
        assert_eq!(
            resolve(&root, "/My%20Page.html"),
            Some(root.join("My Page.html"))
        );
        assert_eq!(resolve(&root, "/100%25.txt"), Some(root.join("100%.txt")));
        for hostile in ["/%2e%2e/etc/passwd", "/..%2Fetc", "/a%00b", "/%zz", "/%2"] {
            assert_eq!(resolve(&root, hostile), None, "{hostile}");
        }
        assert_eq!(percent_decoded("a%C3%A9b"), Some("aéb".as_bytes().to_vec()));
    }
}
