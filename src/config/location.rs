//! Where the store lives, as the config names it: the embedded SQLite file (the default) or a
//! PostgreSQL database a fleet shares (`store::location` opens either).
//!
//! Invariants: `paths.database` names PostgreSQL only by a `postgres://` or `postgresql://` URL —
//! anything else is a file path, as before; what is shown of a server (logs, `abxctl status`,
//! errors) never carries its password; the password comes from the URL, else the file
//! `store.password_file` names, else `PGPASSWORD`, and what the URL leaves out (host, port, user,
//! database) from `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE` as libpq would take it.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The embedded SQLite file.
    File(PathBuf),
    /// A PostgreSQL database.
    Postgres(Server),
}

/// A PostgreSQL server and database, as the config names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The connection URL as written (it may carry a password: never shown).
    pub url: String,
    /// A file holding the password (its first line).
    pub password_file: Option<PathBuf>,
}

impl Location {
    /// What `paths.database` says: a server's URL, else a path (resolved by `resolve`).
    pub fn parse(
        text: &str,
        password_file: Option<PathBuf>,
        resolve: impl Fn(&Path) -> PathBuf,
    ) -> Location {
        if is_server_url(text) {
            Location::Postgres(Server {
                url: text.to_string(),
                password_file,
            })
        } else {
            Location::File(resolve(Path::new(text)))
        }
    }

    /// What `paths.database` (absent: `default`) and `store.password_file` say, or what is wrong
    /// with them (a password file beside a database file).
    pub fn from_config(
        database: Option<&Path>,
        password_file: Option<&Path>,
        default: PathBuf,
        resolve: impl Fn(&Path) -> PathBuf,
    ) -> Result<Location, String> {
        let location = match database {
            Some(text) => Location::parse(
                &text.to_string_lossy(),
                password_file.map(&resolve),
                &resolve,
            ),
            None => Location::File(default),
        };
        if password_file.is_some() && !location.is_shared() {
            return Err(
                "is for a PostgreSQL paths.database (postgres://…), and paths.database is \
                        a file"
                    .into(),
            );
        }
        Ok(location)
    }

    /// The SQLite file, if the store is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Location::File(path) => Some(path),
            Location::Postgres(_) => None,
        }
    }

    /// Whether hosts share this store (a server): what heartbeats and machine checks are for.
    pub fn is_shared(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }

    /// What the config file says (a server's URL as written, password and all: for the file
    /// handed to workers, never for people).
    pub fn as_config_text(&self) -> String {
        match self {
            Location::File(path) => path.display().to_string(),
            Location::Postgres(server) => server.url.clone(),
        }
    }
}

/// A path or a server without its password.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Postgres(server) => write!(f, "{}", redacted(&server.url)),
        }
    }
}

/// Where Debian's PostgreSQL listens by default.
const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

fn is_server_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// How to connect to a server: the client library's configuration and the TLS it asks for
/// (none: no TLS at all).
pub(crate) struct Client {
    pub config: postgres::Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
}

impl Client {
    pub(crate) fn connect(&self) -> Result<postgres::Client, postgres::Error> {
        match &self.tls {
            Some(tls) => self.config.connect(tls.clone()),
            None => self.config.connect(postgres::NoTls),
        }
    }
}

impl Server {
    /// How to connect: the URL, completed from the password file and the standard environment
    /// variables, with the TLS they ask for (see `tls`); or what is wrong with them.
    pub(crate) fn client(&self) -> Result<Client, String> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let (url, tls) = super::tls::Tls::take_from(&self.url, env)?;
        let mut config: postgres::Config = url
            .parse()
            .map_err(|err| format!("not a PostgreSQL URL: {err}"))?;
        config.ssl_mode(tls.client_mode());
        if config.get_hosts().is_empty() {
            // (libpq's default: the local server's socket directory, as Debian builds it.)
            let default = if Path::new(DEFAULT_SOCKET_DIR).is_dir() {
                DEFAULT_SOCKET_DIR
            } else {
                "localhost"
            };
            for host in env("PGHOST").as_deref().unwrap_or(default).split(',') {
                if host.starts_with('/') {
                    config.host_path(host);
                } else {
                    config.host(host);
                }
            }
        }
        if config.get_ports().is_empty() {
            if let Some(port) = env("PGPORT") {
                let port = port
                    .parse()
                    .map_err(|_| format!("PGPORT {port:?} is not a port number"))?;
                config.port(port);
            }
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(|| env("USER"))
                .or_else(own_user_name)
                .ok_or("no user in the URL, PGUSER or the environment")?;
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            if let Some(dbname) = env("PGDATABASE") {
                config.dbname(&dbname);
            }
        }
        if config.get_password().is_none() {
            if let Some(file) = &self.password_file {
                let text = std::fs::read_to_string(file).map_err(|err| {
                    format!("cannot read the password file {}: {err}", file.display())
                })?;
                config.password(text.lines().next().unwrap_or_default());
            } else if let Some(password) = env(super::PASSWORD_ENV) {
                config.password(&password);
            }
        }
        // (The server's notices — "table does not exist, skipping" — are not the operator's.)
        let options = match config.get_options() {
            Some(given) => format!("{given} -c client_min_messages=warning"),
            None => "-c client_min_messages=warning".to_string(),
        };
        config.options(&options);
        // (libpq ignores `sslmode` on a Unix socket, where the server never offers TLS.)
        let local = |host: &postgres::config::Host| matches!(host, postgres::config::Host::Unix(_));
        let local_only = config.get_hosts().iter().all(local);
        if local_only {
            config.ssl_mode(postgres::config::SslMode::Disable);
        }
        let tls = match tls.wanted() && !local_only {
            true => Some(tls.connector()?),
            false => None,
        };
        Ok(Client { config, tls })
    }
}

/// The name of the user this process runs as.
fn own_user_name() -> Option<String> {
    let uid = nix::unistd::getuid();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|user| user.name)
}

/// `url` (libpq's URL or key-value form) without its password: what may be printed or logged.
pub fn redacted(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let authority = match authority.rsplit_once('@') {
            Some((user, host)) => {
                let user = user.split_once(':').map_or(user, |(name, _)| name);
                format!("{user}@{host}")
            }
            None => authority.to_string(),
        };
        let tail = tail
            .split('&')
            .filter(|part| !part.contains("password="))
            .collect::<Vec<_>>()
            .join("&");
        return format!("{scheme}://{authority}{tail}");
    }
    url.split_ascii_whitespace()
        .filter(|pair| !pair.starts_with("password="))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Location {
        Location::parse(text, None, |p| Path::new("/etc/abxd").join(p))
    }

    #[test]
    fn a_url_names_a_server_and_anything_else_a_file() {
        assert!(matches!(
            parse("postgres://abxd@db/abxd"),
            Location::Postgres(_)
        ));
        assert!(matches!(
            parse("postgresql://db/abxd"),
            Location::Postgres(_)
        ));
        assert_eq!(
            parse("data/abxd.sqlite3"),
            Location::File(PathBuf::from("/etc/abxd/data/abxd.sqlite3"))
        );
        // (A file that happens to be called so is still a file.)
        assert_eq!(
            parse("postgres.sqlite3"),
            Location::File(PathBuf::from("/etc/abxd/postgres.sqlite3"))
        );
    }

    #[test]
    fn a_server_is_shown_without_its_password() {
        let location = parse("postgres://abxd:s3cret@db:5432/abxd?sslmode=disable");
        let shown = location.to_string();
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(shown, "postgres://abxd@db:5432/abxd?sslmode=disable");
        assert!(location.as_config_text().contains("s3cret"));
    }

    #[test]
    fn the_password_file_fills_in_what_the_url_leaves_out() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "from-file\nignored\n").unwrap();
        let server = Server {
            url: "postgres://abxd@db/abxd".into(),
            password_file: Some(file.clone()),
        };
        let config = server.client().unwrap().config;
        assert_eq!(config.get_password(), Some(&b"from-file"[..]));
        assert_eq!(config.get_user(), Some("abxd"));
        assert_eq!(config.get_dbname(), Some("abxd"));
        // The URL's own password wins.
        let server = Server {
            url: "postgres://abxd:in-url@db/abxd".into(),
            password_file: Some(file),
        };
        assert_eq!(
            server.client().unwrap().config.get_password(),
            Some(&b"in-url"[..])
        );
        let missing = Server {
            url: "postgres://abxd@db/abxd".into(),
            password_file: Some(dir.path().join("absent")),
        };
        let err = missing.client().err().unwrap();
        assert!(err.contains("cannot read the password file"), "{err}");
    }
}
