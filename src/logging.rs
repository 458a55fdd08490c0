//! Logging: env_logger to stderr, its level from the config unless `RUST_LOG` says otherwise.
//!
//! Invariants: when `RUST_LOG` is set it wins, at start and across reloads; otherwise the
//! config's `log.level` is the level, and a reload changes it in place. Under systemd (stderr is
//! the journal: `JOURNAL_STREAM` names it) a line carries no timestamp of its own — the journal
//! stamps each one — and begins with its priority as `sd-daemon(3)` defines the prefix (`<3>`
//! an error … `<7>` debug), so `journalctl -p err` finds the errors.

use log::LevelFilter;

fn env_overrides() -> bool {
    std::env::var_os("RUST_LOG").is_some()
}

/// Installs the logger. Safe to call once per process; later calls do nothing.
pub fn init(level: LevelFilter) {
    let mut builder = env_logger::Builder::new();
    if stderr_is_the_journal() {
        builder.format(|out, record| {
            use std::io::Write;
            writeln!(
                out,
                "{}[{} {}] {}",
                journal_prefix(record.level()),
                record.level(),
                record.target(),
                record.args()
            )
        });
    } else {
        builder.format_timestamp_millis();
    }
    if env_overrides() {
        builder.parse_env("RUST_LOG");
    } else {
        builder.filter_level(LevelFilter::Trace);
    }
    if builder.try_init().is_ok() {
        set_level(level);
    }
}

/// The priority prefix of a line at `level` for the journal (`sd-daemon(3)`: `SD_ERR` …
/// `SD_DEBUG`).
fn journal_prefix(level: log::Level) -> &'static str {
    match level {
        log::Level::Error => "<3>",
        log::Level::Warn => "<4>",
        log::Level::Info => "<6>",
        log::Level::Debug | log::Level::Trace => "<7>",
    }
}

/// Whether standard error is the journal's stream: `JOURNAL_STREAM` names its device and inode
/// (a worker inherits the variable, but its stderr is a log file: it keeps its timestamps).
fn stderr_is_the_journal() -> bool {
    let Some(stream) = std::env::var("JOURNAL_STREAM").ok() else {
        return false;
    };
    let Some((dev, ino)) = stream.split_once(':') else {
        return false;
    };
    let Ok(stat) = rustix::fs::fstat(std::io::stderr()) else {
        return false;
    };
    dev.parse() == Ok(stat.st_dev) && ino.parse() == Ok(stat.st_ino)
}

/// Applies a (reloaded) config level, unless `RUST_LOG` overrides it.
pub fn set_level(level: LevelFilter) {
    if !env_overrides() {
        log::set_max_level(level);
    }
}

#[cfg(test)]
mod tests {
    use super::journal_prefix;
    use log::Level;

    #[test]
    fn each_level_has_the_journals_priority() {
        let prefixes: Vec<&str> = [
            Level::Error,
            Level::Warn,
            Level::Info,
            Level::Debug,
            Level::Trace,
        ]
        .into_iter()
        .map(journal_prefix)
        .collect();
        assert_eq!(prefixes, ["<3>", "<4>", "<6>", "<7>", "<7>"]);
    }
}
