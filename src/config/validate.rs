//! Validation: what a parsed config may not hold — zero limits and durations, out-of-range
//! weights and frame sizes, a socket path too long for its address, a machine id that cannot
//! name a cgroup, a group or user that does not exist, a crawl pattern that is no regular
//! expression — each refused naming its key.
//!
//! Invariant: a [`Config`] that passed [`Config::validate`] is valid everywhere downstream;
//! nothing re-checks these values.

use super::{Config, ConfigError, MAX_SOCKET_PATH_BYTES};

/// The id of the group named `name`, or why there is none (for `control.group`).
pub fn group_id(name: &str) -> Result<nix::unistd::Gid, String> {
    match nix::unistd::Group::from_name(name) {
        Ok(Some(found)) => Ok(found.gid),
        Ok(None) => Err(format!("no group named {name:?}")),
        Err(err) => Err(format!("cannot look up group {name:?}: {err}")),
    }
}

/// The user named `name`, or why there is none (for `hooks.user`).
pub fn user_of(name: &str) -> Result<nix::unistd::User, String> {
    match nix::unistd::User::from_name(name) {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(format!("no user named {name:?}")),
        Err(err) => Err(format!("cannot look up user {name:?}: {err}")),
    }
}

/// What is wrong with group `name` as `hooks.crawl_users` beside `hooks.user` = `user`, if
/// anything: it must exist and list members, none of them root or `user`.
fn crawl_users_problem(name: &str, user: Option<&str>) -> Option<String> {
    let Some(user) = user else {
        return Some(
            "needs hooks.user, the user who installs the binaries their hooks read".into(),
        );
    };
    let group = match nix::unistd::Group::from_name(name) {
        Ok(Some(group)) => group,
        Ok(None) => return Some(format!("no group named {name:?}")),
        Err(err) => return Some(format!("cannot look up group {name:?}: {err}")),
    };
    match group.mem.iter().find(|m| *m == "root" || *m == user) {
        _ if group.mem.is_empty() => Some(format!(
            "group {name:?} lists no member: add the users crawls' hooks run as to it"
        )),
        Some(member) => Some(format!(
            "group {name:?} lists {member:?}: its members run nothing but crawls' hooks"
        )),
        None => None,
    }
}

impl Config {
    pub(super) fn invalid(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: self.source.clone(),
            key: key.to_string(),
            message: message.into(),
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if let Some(id) = &self.machine_id {
            crate::identity::valid_machine_id(id)
                .map_err(|message| self.invalid("store.machine_id", message))?;
        }
        for (key, value) in [
            ("limits.max_crawl_workers", self.limits.max_crawl_workers),
            (
                "limits.max_snapshot_workers",
                self.limits.max_snapshot_workers,
            ),
            ("limits.max_snapshots", self.limits.snapshot_budget()),
        ] {
            if value == 0 {
                return Err(self.invalid(key, "must be at least 1, got 0"));
            }
        }
        for (key, value) in [
            ("timeouts.hook_timeout", self.timeouts.hook_timeout),
            ("timeouts.kill_grace", self.timeouts.kill_grace),
            ("timeouts.lease", self.timeouts.lease),
            ("timeouts.descendant_scan", self.timeouts.descendant_scan),
            ("timeouts.retry_backoff", self.timeouts.retry_backoff),
        ] {
            if value.is_zero() {
                return Err(self.invalid(key, "must be longer than 0s"));
            }
        }
        for (name, plugin) in &self.plugins {
            if plugin.timeout.is_some_and(|t| t.is_zero()) {
                return Err(
                    self.invalid(&format!("plugins.{name}.timeout"), "must be longer than 0s")
                );
            }
            if let Some(weight) = plugin.cpu_weight.filter(|w| !(1..=10_000).contains(w)) {
                return Err(self.invalid(
                    &format!("plugins.{name}.cpu_weight"),
                    format!("must be between 1 and 10000, got {weight}"),
                ));
            }
            for (key, value) in [
                ("memory_max", plugin.memory_max),
                ("tasks_max", plugin.tasks_max),
            ] {
                if value == Some(0) {
                    return Err(
                        self.invalid(&format!("plugins.{name}.{key}"), "must be at least 1")
                    );
                }
            }
        }
        if let Some((key, why)) = self.politeness.problem() {
            return Err(self.invalid(&key, why));
        }
        if let Some(why) = self.crawl.rules().problem() {
            // (The flag's name, as `add` says it, is the key's: `--url-denylist` is `url_denylist`;
            // `--allow-network`, given once per network, is `allow_networks`.)
            let (flag, why) = why.split_once(' ').unwrap_or((&why, ""));
            let key = match flag {
                "--allow-network" => "crawl.allow_networks".to_string(),
                flag => format!("crawl.{}", flag.trim_start_matches("--").replace('-', "_")),
            };
            return Err(self.invalid(&key, why.to_string()));
        }
        if let Some(user) = &self.hooks.user {
            user_of(user).map_err(|message| self.invalid("hooks.user", message))?;
        }
        if let Some(group) = &self.hooks.crawl_users {
            crawl_users_problem(group, self.hooks.user.as_deref()).map_or(Ok(()), |message| {
                Err(self.invalid("hooks.crawl_users", message))
            })?;
        }
        if let Some(why) = crate::portable::user_problem(&self.archivebox.user) {
            return Err(self.invalid("archivebox.user", why));
        }
        if let Some(why) = self.archivebox.serve_queue_problem() {
            return Err(self.invalid("archivebox.serve_queue", why));
        }
        if let Some(group) = &self.control.group {
            group_id(group).map_err(|message| self.invalid("control.group", message))?;
        }
        if self.limits.max_log_bytes < 4096 {
            return Err(self.invalid(
                "limits.max_log_bytes",
                format!("must be at least 4096, got {}", self.limits.max_log_bytes),
            ));
        }
        let frame = self.control.max_frame_bytes;
        if !(1024..=64 << 20).contains(&frame) {
            return Err(self.invalid(
                "control.max_frame_bytes",
                format!("must be between 1024 and 67108864, got {frame}"),
            ));
        }
        let socket_len = self.control.socket.as_os_str().len();
        if socket_len > MAX_SOCKET_PATH_BYTES {
            return Err(self.invalid(
                "control.socket",
                format!(
                    "path {} is {socket_len} bytes, longer than a Unix socket address allows \
                     ({MAX_SOCKET_PATH_BYTES}); set control.socket to a shorter path",
                    self.control.socket.display()
                ),
            ));
        }
        Ok(())
    }
}
