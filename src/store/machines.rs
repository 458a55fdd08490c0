//! Machines: the hosts whose daemons write to this store, each registered by its daemon at
//! start and, on a shared store, kept fresh by a heartbeat.
//!
//! Invariants: a machine's row is keyed by its stable id (`identity::machine_id`) and rewritten
//! whole at each daemon start (a new boot, version or hostname replaces the old); only its own
//! daemon writes it; a heartbeat moves `heartbeat_at` forward, never back.

use super::sql::args;
use super::{now_ms, Store, StoreError};

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
    /// This host, as its daemon registers it now.
    pub fn this_host() -> Machine {
        let now = now_ms();
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

impl Store {
    /// Registers `machine` (replacing what an earlier start of it registered).
    pub fn register_machine(&mut self, machine: &Machine) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO machines (id, hostname, boot_id, version, started_at, heartbeat_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (id) DO UPDATE SET hostname = ?2, boot_id = ?3, version = ?4, \
                 started_at = ?5, heartbeat_at = ?6",
                &args![
                    &machine.id,
                    &machine.hostname,
                    &machine.boot_id,
                    &machine.version,
                    machine.started_at,
                    machine.heartbeat_at
                ],
            )?;
            Ok(())
        })
    }

    /// Says that machine `id` is alive now.
    pub fn heartbeat(&mut self, id: &str) -> Result<(), StoreError> {
        let now = now_ms();
        self.write(|tx| {
            tx.execute(
                "UPDATE machines SET heartbeat_at = ?2 WHERE id = ?1 AND heartbeat_at < ?2",
                &args![id, now],
            )?;
            Ok(())
        })
    }

    /// Every registered machine, by id.
    pub fn machines(&self) -> Result<Vec<Machine>, StoreError> {
        Ok(self.db().query_map(
            "SELECT id, hostname, boot_id, version, started_at, heartbeat_at FROM machines \
             ORDER BY id",
            &[],
            |r| {
                Ok(Machine {
                    id: r.get(0)?,
                    hostname: r.get(1)?,
                    boot_id: r.get(2)?,
                    version: r.get(3)?,
                    started_at: r.get(4)?,
                    heartbeat_at: r.get(5)?,
                })
            },
        )?)
    }
}
