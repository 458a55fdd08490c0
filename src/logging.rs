//! Logging: env_logger to stderr, its level from the config unless `RUST_LOG` says otherwise.
//!
//! Invariant: when `RUST_LOG` is set it wins, at start and across reloads; otherwise the config's
//! `log.level` is the level, and a reload changes it in place.

use log::LevelFilter;

fn env_overrides() -> bool {
    std::env::var_os("RUST_LOG").is_some()
}

/// Installs the logger. Safe to call once per process; later calls do nothing.
pub fn init(level: LevelFilter) {
    let mut builder = env_logger::Builder::new();
    builder.format_timestamp_millis();
    if env_overrides() {
        builder.parse_env("RUST_LOG");
    } else {
        builder.filter_level(LevelFilter::Trace);
    }
    if builder.try_init().is_ok() {
        set_level(level);
    }
}

/// Applies a (reloaded) config level, unless `RUST_LOG` overrides it.
pub fn set_level(level: LevelFilter) {
    if !env_overrides() {
        log::set_max_level(level);
    }
}
