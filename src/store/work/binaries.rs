//! The binaries the plugins declare, as each host resolved them: found — where, which version,
//! by which provider — or not, with why and the variable that names another one.
//!
//! Invariants: one row per host and binary, the latest resolution's (a binary found on one host
//! says nothing of another's); a plugin runs on a host only where each of its binaries has a row
//! of that host without a failure. Rows from before hosts were told apart (`machine_id` '') count
//! as every host's, as they did then.

use crate::store::engine::sql::{args, columns, Row, SqlError};
use crate::store::Results;
use crate::store::{now_ms, StoreError};

/// A binary as a host resolved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    pub name: String,
    /// The plugin it was resolved for (the first, if several declare it).
    pub plugin: String,
    /// The variable that names another one (`NODE_BINARY`); empty for rows from before.
    pub override_key: String,
    pub abspath: Option<String>,
    pub version: Option<String>,
    pub provider: Option<String>,
    /// Why it could not be had; `None` when it was found.
    pub failure: Option<String>,
    pub resolved_at: i64,
}

impl Binary {
    pub fn found(&self) -> bool {
        self.failure.is_none()
    }
}

columns! {
    /// A binary's columns, as [`from_row`] reads them.
    enum BinaryColumn { name, plugin, override_key, abspath, version, provider, failure, resolved_at }
}

/// The SELECT list of a binary (named to be written inline in `format!`).
const COLUMNS: &str = BinaryColumn::LIST;

/// Reads a row selected with [`COLUMNS`].
fn from_row(row: &Row) -> Result<Binary, SqlError> {
    use BinaryColumn as C;
    Ok(Binary {
        name: row.get(C::name)?,
        plugin: row.get(C::plugin)?,
        override_key: row.get(C::override_key)?,
        abspath: row.get(C::abspath)?,
        version: row.get(C::version)?,
        provider: row.get(C::provider)?,
        failure: row.get(C::failure)?,
        resolved_at: row.get(C::resolved_at)?,
    })
}

impl Results<'_> {
    /// Records how this host resolved `binary` (its `resolved_at` is now).
    pub fn record_binary(&self, binary: &Binary) -> Result<(), StoreError> {
        let machine = crate::identity::machine_id();
        let now = now_ms();
        self.store.write(|tx| {
            tx.execute(
                "INSERT INTO binaries (machine_id, name, plugin, override_key, abspath, version, \
                 provider, failure, resolved_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
                 ON CONFLICT (machine_id, name) DO UPDATE SET plugin = ?3, override_key = ?4, \
                 abspath = ?5, version = ?6, provider = ?7, failure = ?8, resolved_at = ?9",
                &args![
                    machine,
                    &binary.name,
                    &binary.plugin,
                    &binary.override_key,
                    binary.abspath.as_deref(),
                    binary.version.as_deref(),
                    binary.provider.as_deref(),
                    binary.failure.as_deref(),
                    now
                ],
            )?;
            Ok(())
        })
    }

    /// This host's binaries, by name (a row of this host before one from before).
    pub fn binaries(&self) -> Result<Vec<Binary>, StoreError> {
        let mut rows = self.store.db().query_map(
            &format!(
                "SELECT {COLUMNS} FROM binaries WHERE machine_id IN (?1, '') \
                 ORDER BY name, machine_id DESC"
            ),
            &args![crate::identity::machine_id()],
            from_row,
        )?;
        rows.dedup_by(|later, first| later.name == first.name);
        Ok(rows)
    }

    /// The names of the binaries this host found.
    pub fn installed_binaries(&self) -> Result<std::collections::BTreeSet<String>, StoreError> {
        let binaries = self.binaries()?;
        Ok((binaries.into_iter())
            .filter(Binary::found)
            .map(|b| b.name)
            .collect())
    }
}
