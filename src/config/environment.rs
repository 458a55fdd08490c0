//! What a config needs of the machine (checked by the daemon when it starts and reloads, and by
//! `abxd check-config`): every plugins dir exists; the data dir is a directory abxd can write
//! and nobody else can.
//!
//! Invariant: the check `check-config` runs is the daemon's, less what only a start does (create
//! the data dir): a file `check-config` passes is one the daemon starts with, on this machine.

use super::{Config, ConfigError};
use crate::trust::ownership_problem;
use std::os::unix::fs::MetadataExt;

impl Config {
    /// What only the daemon needs of its environment, checked when it starts and when it
    /// reloads: every plugins dir exists, and the data dir exists (it is created), is writable
    /// and is abxd's alone.
    pub fn check_for_daemon(&self) -> Result<(), ConfigError> {
        self.check_plugins_dirs()?;
        std::fs::create_dir_all(&self.data_dir).map_err(|err| self.unwritable(err))?;
        self.check_data_dir(rustix::process::geteuid().as_raw())
    }

    /// The daemon's check without its side effects (`abxd check-config`): a data dir that does
    /// not exist yet must be one abxd can create. Run by root, it checks the data dir for the
    /// user who owns it (the service's user, as the package sets it up: `sudo abxd
    /// check-config` checks what the service will meet).
    pub fn check_environment(&self) -> Result<(), ConfigError> {
        self.check_plugins_dirs()?;
        if self.data_dir.exists() {
            let me = rustix::process::geteuid().as_raw();
            let owner = std::fs::metadata(&self.data_dir).map_or(me, |m| m.uid());
            return self.check_data_dir(if me == 0 { owner } else { me });
        }
        let parent = self.data_dir.ancestors().skip(1).find(|p| p.exists());
        let creatable = parent.is_some_and(|p| {
            p.is_dir() && rustix::fs::access(p, rustix::fs::Access::WRITE_OK).is_ok()
        });
        if creatable {
            Ok(())
        } else {
            let dir = self.data_dir.display();
            let why = format!("{dir} does not exist, and abxd could not create it");
            Err(self.invalid("paths.data_dir", why))
        }
    }

    fn check_plugins_dirs(&self) -> Result<(), ConfigError> {
        match self.plugins_dirs.iter().find(|dir| !dir.is_dir()) {
            Some(dir) => Err(self.invalid(
                "paths.plugins_dirs",
                format!("{} is not a directory", dir.display()),
            )),
            None => Ok(()),
        }
    }

    /// The data dir (which exists) is writable by abxd, running as `me`, and by nobody else.
    fn check_data_dir(&self, me: u32) -> Result<(), ConfigError> {
        tempfile::tempfile_in(&self.data_dir).map_err(|err| self.unwritable(err))?;
        let meta = std::fs::metadata(&self.data_dir).map_err(|err| self.unwritable(err))?;
        match ownership_problem(meta.uid(), meta.mode(), me) {
            Some(problem) => {
                let dir = self.data_dir.display();
                Err(self.invalid("paths.data_dir", format!("{dir} {problem}")))
            }
            None => Ok(()),
        }
    }

    fn unwritable(&self, err: std::io::Error) -> ConfigError {
        let dir = self.data_dir.display();
        self.invalid(
            "paths.data_dir",
            format!("{dir} is not a writable directory: {err}"),
        )
    }
}
