//! `[web]`: where the daemon serves its read-only web view and Prometheus metrics, if anywhere.
//!
//! Invariant: a resolved [`Listen`] is either a loopback address with a port of its own (over TCP
//! every request must carry the token: without TLS, a token crossing a network is not a secret)
//! or an absolute Unix socket path short enough for its address; anything else is refused at
//! load time, naming `web.listen`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Where the web view listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A loopback address and port: requests carry the token.
    Tcp(SocketAddr),
    /// A Unix socket: who may connect is decided by the file's mode and group.
    Unix(PathBuf),
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(addr) => write!(f, "{addr}"),
            Listen::Unix(path) => write!(f, "{}", path.display()),
        }
    }
}

/// `web.listen` as the file says it, resolved against the config's directory (`resolve`), or
/// what is wrong with it.
pub(super) fn parse_listen(
    text: &str,
    resolve: impl Fn(&Path) -> PathBuf,
) -> Result<Listen, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        if !addr.ip().is_loopback() {
            return Err(format!(
                "{addr} is not a loopback address: the web view has no TLS, so it listens on \
                 127.0.0.1, ::1 or a Unix socket only (put a proxy with TLS in front of it)"
            ));
        }
        if addr.port() == 0 {
            return Err(format!(
                "{addr} has no port: name one, so that `abxctl web-url` can say where it is"
            ));
        }
        return Ok(Listen::Tcp(addr));
    }
    if text.contains('/') {
        let path = resolve(Path::new(text));
        let len = path.as_os_str().len();
        if len > super::MAX_SOCKET_PATH_BYTES {
            return Err(format!(
                "path {} is {len} bytes, longer than a Unix socket address allows ({})",
                path.display(),
                super::MAX_SOCKET_PATH_BYTES
            ));
        }
        return Ok(Listen::Unix(path));
    }
    Err(format!(
        "{text:?} is neither an address (\"127.0.0.1:8631\") nor a socket path (\"/run/abxd/web.sock\")"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Listen, String> {
        parse_listen(text, |p| Path::new("/etc/abxd").join(p))
    }

    #[test]
    fn loopback_addresses_and_socket_paths_are_taken() {
        assert_eq!(
            parse("127.0.0.1:8631"),
            Ok(Listen::Tcp("127.0.0.1:8631".parse().unwrap()))
        );
        assert_eq!(
            parse("[::1]:8631"),
            Ok(Listen::Tcp("[::1]:8631".parse().unwrap()))
        );
        assert_eq!(
            parse("run/web.sock"),
            Ok(Listen::Unix(PathBuf::from("/etc/abxd/run/web.sock")))
        );
        assert_eq!(
            parse("/run/abxd/web.sock"),
            Ok(Listen::Unix(PathBuf::from("/run/abxd/web.sock")))
        );
    }

    #[test]
    fn other_addresses_ports_and_words_are_refused_saying_why() {
        assert!(parse("0.0.0.0:8631")
            .unwrap_err()
            .contains("not a loopback"));
        assert!(parse("192.168.1.2:80")
            .unwrap_err()
            .contains("not a loopback"));
        assert!(parse("127.0.0.1:0").unwrap_err().contains("no port"));
        assert!(parse("localhost").unwrap_err().contains("neither"));
        let long = format!("/{}", "x".repeat(200));
        assert!(parse(&long).unwrap_err().contains("longer than"));
    }
}
