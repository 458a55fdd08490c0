//! The web view's token: what a request over TCP must carry (`Authorization: Bearer`, the
//! `token` query parameter of the link `abxctl web-url` prints, or the cookie a page sets).
//!
//! Invariants: the token is 32 random bytes from the kernel, written once to `web-token` in the
//! data dir, created exclusively with mode 0600 (never through a symbolic link) and kept across
//! restarts, so a bookmarked link stays good; a request is compared against it in time that
//! does not depend on where they differ.

use super::http::Request;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The token file's name in the data dir.
pub const FILE_NAME: &str = "web-token";

/// The token file of `data_dir`.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// The token of `data_dir`: the one written before, or a new one written now.
pub fn load_or_create(data_dir: &Path) -> std::io::Result<String> {
    let path = path(data_dir);
    match read(&path) {
        Ok(token) => return Ok(token),
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err),
        Err(_) => {}
    }
    let mut bytes = [0u8; 32];
    let mut filled = 0;
    while filled < bytes.len() {
        filled +=
            rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty())?;
    }
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc_no_follow())
        .open(&path)?;
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    Ok(token)
}

/// Reads the token at `path` (its first line), refusing a symbolic link or an empty file.
pub fn read(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc_no_follow())
        .open(path)?;
    let mut text = String::new();
    (&mut file).take(1024).read_to_string(&mut text)?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.len() < 32 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} holds no token", path.display()),
        ));
    }
    Ok(token)
}

fn libc_no_follow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// The cookie a page sets for the view on `port`, so that what it links (its script, an
/// archived page's images) is let in without the token in each URL.
pub fn cookie_name(port: u16) -> String {
    format!("abxd_web_{port}")
}

/// Whether `request` carries `token`: as a bearer, a query parameter or the cookie named
/// `cookie`.
pub fn carries(request: &Request, token: &str, cookie: &str) -> bool {
    let bearer = request
        .header("authorization")
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    let cookies = request
        .headers
        .iter()
        .filter(|(name, _)| name == "cookie")
        .flat_map(|(_, value)| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == cookie)
        .map(|(_, value)| value);
    bearer
        .into_iter()
        .chain(request.param("token"))
        .chain(cookies)
        .any(|offered| same(offered.as_bytes(), token.as_bytes()))
}

/// Whether `a` and `b` are equal, looking at every byte whatever the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::http::parse_head;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_token_is_made_once_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let token = load_or_create(dir.path()).unwrap();
        assert_eq!(token.len(), 64);
        let mode = std::fs::metadata(path(dir.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(load_or_create(dir.path()).unwrap(), token);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(load_or_create(other.path()).unwrap(), token);
    }

    #[test]
    fn a_token_file_that_is_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("elsewhere"), "x".repeat(64)).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), path(dir.path())).unwrap();
        assert!(load_or_create(dir.path()).is_err());
    }

    #[test]
    fn a_request_carries_the_token_as_bearer_query_or_cookie_and_nothing_else() {
        let token = "a".repeat(64);
        let with = |head: String| parse_head(head.as_bytes()).unwrap();
        let cookie = cookie_name(8631);
        for head in [
            format!("GET / HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\r\n"),
            format!("GET /?token={token} HTTP/1.1\r\n\r\n"),
            format!("GET / HTTP/1.1\r\nCookie: x=1; abxd_web_8631={token}\r\n\r\n"),
        ] {
            assert!(carries(&with(head.clone()), &token, &cookie), "{head}");
        }
        for head in [
            "GET / HTTP/1.1\r\n\r\n".to_string(),
            format!("GET /?token={} HTTP/1.1\r\n\r\n", "b".repeat(64)),
            format!("GET /?token={} HTTP/1.1\r\n\r\n", &token[1..]),
            format!("GET / HTTP/1.1\r\nCookie: abxd_web_9999={token}\r\n\r\n"),
            format!("GET / HTTP/1.1\r\nAuthorization: Basic {token}\r\n\r\n"),
        ] {
            assert!(!carries(&with(head.clone()), &token, &cookie), "{head}");
        }
    }
}
