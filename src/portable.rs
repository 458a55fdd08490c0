//! ArchiveBox 0.9's portable snapshot directories: where a snapshot lies in an ArchiveBox
//! collection, `archive/users/<user>/snapshots/<YYYYMMDD>/<domain>/<id>/`, as ArchiveBox itself
//! computes it when it imports one (`archivebox update --rescan` refuses a directory anywhere
//! else).
//!
//! Invariants: the path depends only on the snapshot's user, its creation moment (its UTC date,
//! as the `bookmarked_at` of the Snapshot record abxd writes), its URL and its UUIDv7; every
//! component is one plain name (no `/`, never `.` or `..`), so the path stays in the collection.

use std::path::PathBuf;

/// Why `user` cannot name an ArchiveBox user's directory, if it cannot.
pub fn user_problem(user: &str) -> Option<String> {
    let plain = !user.is_empty()
        && user != "."
        && user != ".."
        && user.len() <= 150
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@.+-_".contains(c));
    (!plain).then(|| {
        format!(
            "{user:?} is not an ArchiveBox user name (letters, digits and @.+-_ only, at most 150, \
             as Django allows)"
        )
    })
}

/// The snapshot's directory, relative to the collection's data dir.
pub fn snapshot_dir(user: &str, created_at_ms: i64, url: &str, uuid: &str) -> PathBuf {
    let date = jiff::Timestamp::from_millisecond(created_at_ms)
        .map(|t| t.strftime("%Y%m%d").to_string())
        .unwrap_or_else(|_| "unknown".into());
    PathBuf::from("archive/users")
        .join(plain(user))
        .join("snapshots")
        .join(date)
        .join(plain(&domain(url)))
        .join(plain(uuid))
}

/// The `<domain>` of `url` as ArchiveBox names it: the host, `_port` after it when the URL has
/// one (colons of an IPv6 address then `_` too), `localhost` for `file:` URLs, else the scheme.
pub fn domain(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url) else {
        return "unknown".into();
    };
    match parsed.scheme() {
        "http" | "https" => {
            let host = match parsed.host() {
                Some(url::Host::Ipv6(address)) => address.to_string(),
                Some(host) => host.to_string(),
                None => return "unknown".into(),
            };
            match parsed.port() {
                Some(port) => format!("{host}_{port}").replace(':', "_"),
                None => host,
            }
        }
        "file" => "localhost".into(),
        scheme => scheme.into(),
    }
}

/// `name` as one plain path component: a `/` or a name of `.`/`..` cannot leave the collection.
fn plain(name: &str) -> String {
    match name.replace('/', "_") {
        dots if dots.is_empty() || dots == "." || dots == ".." => "unknown".into(),
        name => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_the_ones_archivebox_computes() {
        // The reference index ArchiveBox 0.9.73 wrote: its snapshot of http://127.0.0.1:8765/.
        assert_eq!(
            snapshot_dir(
                "system",
                1_795_631_222_666,
                "http://127.0.0.1:8765/",
                "06b072876aab7c5f80003982a386b4dd"
            ),
            PathBuf::from(
                "archive/users/system/snapshots/20261125/127.0.0.1_8765/\
                 06b072876aab7c5f80003982a386b4dd"
            )
        );
        assert_eq!(domain("https://Sub.Example.com/a"), "sub.example.com");
        assert_eq!(domain("https://example.com:5797/"), "example.com_5797");
        assert_eq!(domain("http://[::1]:8080/"), "__1_8080");
        assert_eq!(domain("file:///etc/hosts"), "localhost");
        assert_eq!(domain("data:text/html,x"), "data");
        assert_eq!(plain(".."), "unknown");
    }

    #[test]
    fn user_names_are_djangos() {
        assert!(user_problem("system").is_none());
        assert!(user_problem("a.b@c+d-e_f").is_none());
        for bad in ["", ".", "..", "a/b", "a b", &"x".repeat(151)] {
            assert!(user_problem(bad).is_some(), "{bad:?}");
        }
    }
}
