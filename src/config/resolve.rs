//! Resolution: from a file (or the text a daemon hands its workers) to a [`Config`] — parsed
//! strictly, every relative path resolved against the directory that holds the file, then
//! validated (`validate`), so a config means the same thing from any cwd.
//!
//! Invariant: the only ways to make a [`Config`] are here, and each ends in `validate`.

use super::file::{parse_file, FileConfig};
use super::{
    ArchiveBox, CollectionSettings, Config, ConfigError, Control, Location, CONFIG_TEXT_ENV,
};
use std::path::{Path, PathBuf};

impl Config {
    /// The config a worker runs with: the text its daemon handed it, resolved as if read from
    /// `path`; or the file, for a worker started by other means.
    pub fn for_worker(path: &Path) -> Result<Config, ConfigError> {
        match std::env::var(CONFIG_TEXT_ENV) {
            Ok(text) => Config::parse(path, &text),
            Err(_) => Config::load(path),
        }
    }

    /// Reads, parses, validates and resolves the config file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|cause| ConfigError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        Config::parse(path, &text)
    }

    /// Parses `text` as if it were the content of `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let file: FileConfig = parse_file(path, text)?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let base = std::path::absolute(&base).unwrap_or(base);
        let resolve = |p: &Path| -> PathBuf {
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                base.join(p)
            }
        };
        let data_dir = resolve(&file.paths.data_dir);
        let database = Location::from_config(
            file.paths.database.as_deref(),
            file.store.password_file.as_deref(),
            data_dir.join("abxd.sqlite3"),
            resolve,
        )
        .map_err(|message| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: "store.password_file".into(),
            message,
        })?;
        let web = match &file.web.listen {
            Some(text) => Some(super::web::parse_listen(text, resolve).map_err(|message| {
                ConfigError::Invalid {
                    path: path.to_path_buf(),
                    key: "web.listen".into(),
                    message,
                }
            })?),
            None => None,
        };
        let config = Config {
            source: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            database,
            machine_id: file.store.machine_id,
            synchronous_commit: file.store.synchronous_commit.unwrap_or(true),
            plugins_dirs: match &file.paths.plugins_dirs {
                Some(dirs) => dirs.iter().map(|p| resolve(p)).collect(),
                None => super::discover::plugins_dirs(&base, |key| std::env::var(key).ok()),
            },
            control: Control {
                socket: file
                    .control
                    .socket
                    .as_deref()
                    .map(resolve)
                    .unwrap_or_else(|| data_dir.join("abxd.sock")),
                max_frame_bytes: file.control.max_frame_bytes,
                allow_debug_spawn: file.control.allow_debug_spawn,
                group: file.control.group,
                public_read: file.control.public_read,
            },
            data_dir,
            limits: file.limits,
            timeouts: file.timeouts,
            log: file.log,
            retention: file.retention,
            politeness: file.politeness,
            crawl: file.crawl,
            hooks: file.hooks,
            install: file.install,
            archivebox: ArchiveBox {
                data_dir: file.archivebox.data_dir.as_deref().map(resolve),
                ..file.archivebox
            },
            collection: CollectionSettings::default(),
            plugins: file.plugins,
            read_partly: None,
            web,
        };
        config.validate()?;
        let collection = CollectionSettings::read(config.archivebox.data_dir.as_deref());
        Ok(Config {
            collection,
            ..config
        })
    }
}
