//! SIGHUP: reload the config file.
//!
//! Invariants: a file that does not load or does not suit the daemon is refused whole, and the
//! running config is kept; keys that only take effect on restart (`paths.data_dir`,
//! `paths.database`, `control.socket`, `store.machine_id`, `web.listen`,
//! `archivebox.serve_queue`, and `archivebox.data_dir` while a queue is served: abxd's row in
//! the collection's runner gate is its daemon's, for its life) keep their running values — in
//! the daemon *and* in the config handed to new workers, so no worker ever opens another
//! database than its daemon; every other change is applied at once: log level, supervisor
//! timing, `store.synchronous_commit`, the socket's frame limit and its access policy (group and
//! mode of the socket file included).

use super::Daemon;
use crate::config::{Config, ConfigError};
use crate::control::access::Policy;
use crate::supervisor::Timing;

/// The keys a reload cannot change.
const RESTART_ONLY: [&str; 6] = [
    "paths.data_dir",
    "paths.database",
    "control.socket",
    "store.machine_id",
    "web.listen",
    "archivebox.serve_queue",
];

/// The keys a reload cannot change while `running` serves an ArchiveBox collection's queue.
fn restart_only_while_serving(running: &Config) -> &'static [&'static str] {
    match running.archivebox.serve_queue {
        true => &["archivebox.data_dir"],
        false => &[],
    }
}

/// The config to run with after loading `new` over `running`: `new`, with the restart-only
/// keys kept as they run.
fn merged(running: &Config, new: Config) -> Config {
    let mut merged = new;
    merged.data_dir = running.data_dir.clone();
    merged.database = running.database.clone();
    merged.control.socket = running.control.socket.clone();
    merged.machine_id = running.machine_id.clone();
    merged.web = running.web.clone();
    merged.archivebox.serve_queue = running.archivebox.serve_queue;
    if running.archivebox.serve_queue {
        merged.archivebox.data_dir = running.archivebox.data_dir.clone();
    }
    merged
}

/// Loads the file `running` came from and checks it as the daemon would at start.
fn load(running: &Config) -> Result<(Config, Policy), ConfigError> {
    let new = Config::load(&running.source)?;
    new.check_for_daemon()?;
    crate::plugins::check_settings(&new)?;
    let policy =
        Policy::new(new.control.group.as_deref(), new.control.public_read).map_err(|message| {
            ConfigError::Invalid {
                path: new.source.clone(),
                key: "control.group".into(),
                message,
            }
        })?;
    Ok((new, policy))
}

impl Daemon {
    pub(super) fn reload(&mut self) {
        let (new, policy) = match load(&self.state.config) {
            Ok(loaded) => loaded,
            Err(err) => {
                log::error!("reload refused, keeping the running config: {err}");
                return;
            }
        };
        let changes = new.changes_from(&self.state.config);
        for key in RESTART_ONLY
            .iter()
            .chain(restart_only_while_serving(&self.state.config))
        {
            if changes.iter().any(|c| c.starts_with(&format!("{key}:"))) {
                log::warn!("reload: {key} changes only on restart; keeping the running value");
            }
        }
        if changes.is_empty() {
            log::info!("reload: no changes");
        }
        for change in &changes {
            log::info!("reload: {change}");
        }
        let config = merged(&self.state.config, new);
        crate::logging::set_level(config.log.level);
        self.server
            .set_max_frame_bytes(config.control.max_frame_bytes);
        if let Err(err) = self.server.set_policy(policy) {
            log::error!("reload: cannot apply the socket's group or mode: {err}");
        }
        self.supervisor.set_timing(Timing::from_config(&config));
        self.state
            .store
            .set_synchronous_commit(config.synchronous_commit);
        self.state.config = config;
        self.state.settle_hook_user();
        self.state.wake = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn restart_only_keys_keep_their_running_values_everywhere() {
        let path = Path::new("/etc/abxd/supervisor.toml");
        let running = Config::parse(path, "").unwrap();
        let new = Config::parse(
            path,
            "[paths]\ndatabase = \"/elsewhere/x.sqlite3\"\ndata_dir = \"/elsewhere\"\n\
             [control]\nsocket = \"/elsewhere/s\"\npublic_read = true\n\
             [limits]\nmax_crawl_workers = 9\n",
        )
        .unwrap();
        let merged = merged(&running, new);
        assert_eq!(merged.database, running.database);
        assert_eq!(merged.data_dir, running.data_dir);
        assert_eq!(merged.control.socket, running.control.socket);
        assert!(merged.control.public_read);
        assert_eq!(merged.limits.max_crawl_workers, 9);
        // What workers are handed says the same.
        let handed = Config::parse(path, &merged.running_text()).unwrap();
        assert_eq!(handed.database, running.database);
        assert_eq!(handed.limits.max_crawl_workers, 9);
    }

    #[test]
    fn a_served_queue_and_its_collection_change_only_on_restart() {
        let path = Path::new("/etc/abxd/supervisor.toml");
        let serving = Config::parse(
            path,
            "[archivebox]\ndata_dir = \"/srv/archivebox\"\nserve_queue = true\n",
        )
        .unwrap();
        let off = Config::parse(path, "[archivebox]\ndata_dir = \"/srv/other\"\n").unwrap();
        let kept = merged(&serving, off.clone());
        assert!(kept.archivebox.serve_queue);
        assert_eq!(kept.archivebox.data_dir, serving.archivebox.data_dir);
        // Not serving, a reload turns no serving on; the collection exports go to follows it.
        let plain = Config::parse(path, "").unwrap();
        let not_turned_on = merged(&plain, serving.clone());
        assert!(!not_turned_on.archivebox.serve_queue);
        assert_eq!(
            not_turned_on.archivebox.data_dir,
            serving.archivebox.data_dir
        );
        assert_eq!(
            restart_only_while_serving(&serving),
            ["archivebox.data_dir"]
        );
        assert!(restart_only_while_serving(&off).is_empty());
    }
}
