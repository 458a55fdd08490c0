//! The binaries this host resolved (`abxctl binaries`, and each plugin's in `abxctl plugins`):
//! where each was found, which version, by which provider — or why it was not, with the variable
//! an ArchiveBox user sets to name another one.
//!
//! Invariant: a binary that was not found is never shown without its reason and its override.

use super::table::Table;
use crate::printable;
use crate::store::Binary;
use serde_json::{json, Value};

/// One line for a binary that was not found: why, and what to set.
pub fn not_found(binary: &Binary) -> String {
    let failure = binary.failure.as_deref().unwrap_or_default();
    if binary.override_key.is_empty() {
        return format!("not found: {failure}");
    }
    format!(
        "not found: {failure}; set {} to one that is",
        binary.override_key
    )
}

/// The table `abxctl binaries` prints.
pub fn binaries_table(binaries: &[Binary]) -> String {
    if binaries.is_empty() {
        return "no binaries resolved on this host yet (a crawl or `abxd install` resolves them)\n"
            .into();
    }
    let mut table = Table::new(["NAME", "PLUGIN", "VERSION", "PROVIDER", "PATH"]);
    for binary in binaries {
        let dash = || "-".to_string();
        let (version, provider, path) = if binary.found() {
            (
                binary.version.clone().unwrap_or_else(dash),
                binary.provider.clone().unwrap_or_else(dash),
                binary.abspath.clone().unwrap_or_else(dash),
            )
        } else {
            (dash(), dash(), not_found(binary))
        };
        table.add_row([
            printable::line(&binary.name).into_owned(),
            printable::line(&binary.plugin).into_owned(),
            printable::line(&version).into_owned(),
            printable::line(&provider).into_owned(),
            printable::line(&path).into_owned(),
        ]);
    }
    let mut out = String::new();
    table.render_into(&mut out, "");
    out
}

/// A binary as `--json` shows it (docs/json.md).
pub fn binary_json(binary: &Binary) -> Value {
    json!({
        "name": binary.name,
        "plugin": binary.plugin,
        "found": binary.found(),
        "version": binary.version,
        "provider": binary.provider,
        "abspath": binary.abspath,
        "failure": binary.failure,
        "override_key": (!binary.override_key.is_empty()).then_some(&binary.override_key),
        "resolved_at": binary.resolved_at,
    })
}

/// `abxctl binaries --json`.
pub fn binaries_json(binaries: &[Binary]) -> String {
    let binaries: Vec<Value> = binaries.iter().map(binary_json).collect();
    super::json::document(json!({ "binaries": binaries }))
}
