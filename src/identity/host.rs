//! This host as a shared store knows it: its machine id, its name, its boot.
//!
//! Invariant: each is settled once per process (the machine id at its first use, from the config,
//! `ABXD_MACHINE_ID`, `/etc/machine-id` or the hostname; the boot id read once), so every row and
//! marker a process writes names the same host and boot.

use std::sync::OnceLock;

/// Overrides the machine id: for hosts that share `/etc/machine-id` (containers started from one
/// image, or the fleet test's hosts on one machine).
pub const MACHINE_ID_ENV: &str = "ABXD_MACHINE_ID";

static MACHINE_ID: OnceLock<String> = OnceLock::new();

/// This host's stable id in a shared store: the one `use_machine_id` set (`[store] machine_id`),
/// else `ABXD_MACHINE_ID`, else `/etc/machine-id`, else its hostname; settled at the first use.
pub fn machine_id() -> &'static str {
    MACHINE_ID.get_or_init(|| {
        let configured = std::env::var(MACHINE_ID_ENV).ok();
        let from_file = || std::fs::read_to_string("/etc/machine-id").ok();
        configured
            .or_else(from_file)
            .map(|id| id.trim().to_string())
            .filter(|id| valid_machine_id(id).is_ok())
            .unwrap_or_else(hostname)
    })
}

/// Makes `id` this process's machine id (from its config, before anything asked for it).
/// Returns the id in force, which is another if one was settled already.
pub fn use_machine_id(id: &str) -> &'static str {
    MACHINE_ID.get_or_init(|| id.to_string())
}

/// Whether `id` can name a machine: 1 to 64 letters, digits, `.`, `_` or `-` (it is part of
/// marker namespaces and cgroup names).
pub fn valid_machine_id(id: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if id.is_empty() || id.len() > 64 || !id.chars().all(allowed) {
        return Err(format!(
            "{id:?} is not a machine id: 1 to 64 letters, digits, '.', '_' or '-'"
        ));
    }
    Ok(())
}

/// This host's name (`/proc/sys/kernel/hostname`), or "unknown".
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// For tests only: makes this process believe it runs in another boot, to exercise recovery
/// after a reboot without rebooting.
pub const BOOT_ID_OVERRIDE_ENV: &str = "ABXD_TEST_BOOT_ID";

/// The current boot id (`/proc/sys/kernel/random/boot_id`), read once.
pub fn boot_id() -> &'static str {
    static BOOT_ID: OnceLock<String> = OnceLock::new();
    BOOT_ID.get_or_init(|| {
        if let Ok(id) = std::env::var(BOOT_ID_OVERRIDE_ENV) {
            return id;
        }
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|err| {
                log::error!(
                    "cannot read the boot id: {err}; identities will not survive a restart"
                );
                String::from("unknown")
            })
    })
}
