//! The Prometheus text format's pieces every `/metrics` family is written with: a family's
//! `HELP` and `TYPE` lines, and a label value escaped.

use std::fmt::Write;

/// `text` as a label value: `\`, `"` and newlines escaped.
pub fn label(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A family's `HELP` and `TYPE` lines.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}
