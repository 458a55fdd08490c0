//! `abxctl plugins --env PLUGIN`, for people: each variable a plugin's hooks get from its
//! config, its value (never a secret's) and where it came from.

use super::table::Table;
use crate::control::protocol::PluginEnvReport;
use crate::printable;

/// The report as a table, with the collection's settings it read (or why not); `running`: the
/// daemon resolved it in its own environment (else abxctl did, in its own).
pub fn plugin_env_table(report: &PluginEnvReport, running: bool) -> String {
    let whose = if running { "abxd's" } else { "this" };
    let mut out = format!(
        "{}'s hooks get from its config (and inherit the rest of {whose} environment):\n",
        report.plugin
    );
    let mut table = Table::new(["VARIABLE", "VALUE", "FROM"]);
    for value in &report.values {
        let shown =
            (value.value.as_deref()).map_or("(a secret: not shown)".into(), printable::line);
        table.add_row([value.key.as_str(), &shown, &value.from]);
    }
    table.render_into(&mut out, "  ");
    if let Some(path) = &report.collection {
        out.push_str(&format!(
            "the collection's settings: {}\n",
            printable::line(path)
        ));
    }
    if let Some(problem) = &report.collection_problem {
        out.push_str(&format!("not used: {}\n", printable::line(problem)));
    }
    if !running {
        out.push_str("abxd is not running: resolved in abxctl's environment, not the daemon's\n");
    }
    out
}
