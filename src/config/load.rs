//! How a config is found and read beyond the strict parse: the built-in defaults when no file is
//! where abxd looks by default, and a client's lenient read.
//!
//! Invariants: a file that exists is always parsed strictly — defaults stand in only for a file
//! that is not there, and only at the default place (a path an operator named must exist); a
//! client (abxctl) that cannot use the whole file still finds the daemon through the parts it
//! needs (`[paths]`, `[control]`), and says what it ignored.

use super::{Config, ConfigError};
use std::path::Path;

/// Where the config came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The file.
    File,
    /// No file was at the default place: the built-in defaults, as if the file were empty.
    Defaults,
}

impl Config {
    /// The config at `path`, the default place abxd looks: the built-in defaults if no file is
    /// there (relative paths resolved against its directory, as for a file).
    pub fn load_or_defaults(path: &Path) -> Result<(Config, Found), ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok((Config::parse(path, &text)?, Found::File)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Ok((Config::parse(path, "")?, Found::Defaults))
            }
            Err(cause) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                cause,
            }),
        }
    }

    /// What a client (abxctl) runs with: the file at `path` read leniently (see
    /// [`Config::parse_for_client`]), or — when `path` is the default place (`named` false) and
    /// no file is there — the built-in defaults, as the daemon would run.
    pub fn load_for_client(
        path: &Path,
        named: bool,
    ) -> Result<(Config, Option<ConfigError>), ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Config::parse_for_client(path, &text),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && !named => {
                Ok((Config::parse(path, "")?, None))
            }
            Err(cause) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                cause,
            }),
        }
    }

    /// A client's read of `text` (the content of `path`): strict when it can be; otherwise —
    /// a key of the daemon's own wrong, e.g. a typo in `[limits]` — what `[paths]` and
    /// `[control]` say, with the error it ignored. A file that is not TOML at all, or whose
    /// `[paths]` or `[control]` is wrong, is refused.
    pub fn parse_for_client(
        path: &Path,
        text: &str,
    ) -> Result<(Config, Option<ConfigError>), ConfigError> {
        let whole = match Config::parse(path, text) {
            Ok(config) => return Ok((config, None)),
            Err(err) => err,
        };
        let Ok(table) = text.parse::<toml::Table>() else {
            return Err(whole);
        };
        let needed: toml::Table = table
            .into_iter()
            .filter(|(key, _)| key == "paths" || key == "control")
            .collect();
        let needed = toml::to_string(&needed).map_err(|_| ConfigError::Syntax {
            path: path.to_path_buf(),
            message: "cannot be read again as TOML".into(),
        })?;
        let config = Config {
            read_partly: Some(whole.to_string()),
            ..Config::parse(path, &needed)?
        };
        Ok((config, Some(whole)))
    }
}
