//! A machine: a host whose daemon writes to the store, as it registers itself.
//!
//! Invariant: a plain value; its id is the host's stable id (`identity::machine_id`).

/// A registered machine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Machine {
    pub id: String,
    pub hostname: String,
    pub boot_id: String,
    /// The version of the abxd that registered it.
    pub version: String,
    /// When its daemon started, and when it last said it was alive (unix ms).
    pub started_at: i64,
    pub heartbeat_at: i64,
}

impl Machine {
    /// This host, as its daemon registers it at `now` (the store's shared clock).
    pub fn this_host(now: i64) -> Machine {
        Machine {
            id: crate::identity::machine_id().to_string(),
            hostname: crate::identity::hostname(),
            boot_id: crate::identity::boot_id().to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: now,
            heartbeat_at: now,
        }
    }
}
