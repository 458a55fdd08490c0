//! `abxd store`: check the SQLite file, back it up, recover a damaged one, copy it into
//! PostgreSQL.
//!
//! Invariants: `check` and `backup` only read, and may run beside the daemon; `recover` and
//! `copy` take the data dir's lock (abxd stopped) and never change the file they read.

use super::CommandError;
use crate::cli::StoreCommand;
use crate::config::Config;
use crate::render::admin;
use crate::store::{Location, Store};
use std::path::Path;

/// Runs `command` on `config`'s store; returns the exit code.
pub(super) fn run(config: &Config, command: StoreCommand) -> Result<i32, CommandError> {
    match command {
        StoreCommand::Copy { to } => copy(config, &to),
        StoreCommand::Check => {
            let file = sqlite_file(
                config,
                "paths.database is a PostgreSQL database: abxd store check checks an SQLite \
                 file (PostgreSQL checks its own: amcheck, pg_checksums)",
            )?;
            let problems = crate::store::check_file(file)?;
            print!("{}", admin::checked(file, &problems));
            Ok(if problems.is_empty() {
                0
            } else {
                crate::exit::FAILURE
            })
        }
        StoreCommand::Recover { to } => {
            let file = sqlite_file(
                config,
                "paths.database is a PostgreSQL database: abxd store recover reads an SQLite file",
            )?;
            let _lock = crate::lock::DataDirLock::acquire(&config.data_dir)?;
            let recovered = crate::store::recover(file, &to)?;
            print!("{}", admin::recovered(&recovered, file, &to));
            Ok(0)
        }
        StoreCommand::Backup { to } => {
            let file = sqlite_file(
                config,
                "paths.database is a PostgreSQL database: back it up with pg_dump",
            )?;
            if to.symlink_metadata().is_ok() {
                return Err(CommandError::Usage(
                    "abxd store backup writes a new file: PATH exists already",
                ));
            }
            Store::open_read_only(file)?.file().save_copy(&to)?;
            println!("backed up {} to {}", file.display(), to.display());
            Ok(0)
        }
    }
}

/// The SQLite file of `config`, or `otherwise` (why a PostgreSQL database will not do).
fn sqlite_file<'a>(config: &'a Config, otherwise: &'static str) -> Result<&'a Path, CommandError> {
    config.database.file().ok_or(CommandError::Usage(otherwise))
}

fn copy(config: &Config, url: &str) -> Result<i32, CommandError> {
    let file = sqlite_file(
        config,
        "paths.database is a PostgreSQL database already: abxd store copy copies an SQLite file",
    )?;
    let Location::Postgres(server) = Location::parse(url, None, |p| p.to_path_buf()) else {
        return Err(CommandError::Usage(
            "--to takes a PostgreSQL URL (postgres://USER@HOST/DBNAME)",
        ));
    };
    let _lock = crate::lock::DataDirLock::acquire(&config.data_dir)?;
    let source = Store::open_read_only(file)?;
    let target = Store::open_postgres(&server.url)?;
    let copied = crate::store::copy(&source, &target)?;
    let shown = crate::store::sql::redacted(url);
    print!("{}", admin::copied(&copied, file, &shown));
    Ok(0)
}
