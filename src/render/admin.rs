//! What abxd's own one-shot commands print (`abxd check-config`, `recover --dry-run`,
//! `machine forget`, `store copy`): text for people, or a JSON document (`render::json`).
//!
//! Invariant: pure functions of what the commands found — no I/O — so each is tested apart.

use super::json::document;
use crate::config::Config;
use crate::recovery::Forgotten;
use crate::store::Copied;

/// `abxd check-config`: the settings abxd runs with, every path resolved, as TOML or as JSON,
/// with what `hooks` says of who its hooks run as (`hook_user::check_line`).
pub fn check_config(config: &Config, json: bool, hooks: &str) -> Result<String, toml::de::Error> {
    let shown = config.shown_text();
    if !json {
        return Ok(format!(
            "# {}: ok. {}.\n# The settings abxd runs with, every path resolved:\n\n{shown}",
            config.source.display(),
            crate::printable::line(hooks)
        ));
    }
    // The shown text as JSON: the same keys and values, every path resolved.
    let settings: toml::Table = toml::from_str(&shown)?;
    Ok(format!(
        "{}\n",
        document(serde_json::json!({
            "source": config.source,
            "ok": true,
            "hooks": hooks,
            "config": settings,
        }))
    ))
}

/// `abxd recover --dry-run`: what recovery would do, a line each, or as JSON.
pub fn recovery_plan(plan: &[String], json: bool) -> String {
    if json {
        return format!("{}\n", document(serde_json::json!({ "plan": plan })));
    }
    if plan.is_empty() {
        return "nothing to recover\n".into();
    }
    plan.iter().map(|line| format!("{line}\n")).collect()
}

/// `abxd machine forget`: the machine forgotten (silent for `silent_for_ms`) and what became of
/// its work.
pub fn forgotten(forgotten: &Forgotten, silent_for_ms: i64) -> String {
    let mut out = format!(
        "forgot machine {} ({}, silent for {})\n",
        forgotten.machine.id,
        forgotten.machine.hostname,
        super::short_duration(silent_for_ms)
    );
    for line in forgotten.describe() {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

/// `abxd store copy`: what was copied from `file` to the server `shown` (its URL without a
/// password), and what to do next.
pub fn copied(copied: &Copied, file: &std::path::Path, shown: &str) -> String {
    format!(
        "copied {} from {} to {shown}; now set paths.database = {shown:?} and start abxd\n",
        copied.describe(),
        file.display()
    )
}

/// `abxd store check`: the file is whole, or what is wrong with it, a line each.
pub fn checked(file: &std::path::Path, problems: &[String]) -> String {
    if problems.is_empty() {
        return format!("database {}: ok\n", file.display());
    }
    let found = match problems.len() {
        1 => "1 problem".to_string(),
        n => format!("{n} problems"),
    };
    let mut out = format!("database {} is damaged ({found} found):\n", file.display());
    for problem in problems {
        out.push_str(&format!("  {}\n", crate::printable::line(problem)));
    }
    out.push_str(
        "With abxd stopped, `abxd store recover --to NEW` copies every row that can still be \
         read into a new database, leaving this one as it is.\n",
    );
    out
}

/// `abxd store recover`: what was read of `from` into `to`, table by table, and what to do
/// next.
pub fn recovered(
    recovered: &crate::store::Recovered,
    from: &std::path::Path,
    to: &std::path::Path,
) -> String {
    let mut out = format!("recovered {} into {}:\n", from.display(), to.display());
    for read in &recovered.tables {
        out.push_str(&format!("  {}: {} rows", read.table, read.copied));
        if read.lost > 0 {
            out.push_str(&format!(
                "; {} could not be read (their pages are damaged)",
                read.lost
            ));
        }
        if read.cut_short {
            out.push_str("; the rows after these could not be reached (how many is not known)");
        }
        out.push('\n');
    }
    if recovered.dangling > 0 {
        out.push_str(&format!(
            "{} rows name a row that was lost (`sqlite3 {} 'PRAGMA foreign_key_check'` lists \
             them)\n",
            recovered.dangling,
            to.display()
        ));
    }
    out.push_str(&format!(
        "{} is left as it was. Put {} in its place (or set paths.database to it) and start abxd: \
         its recovery finds what was running.\n",
        from.display(),
        to.display()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recovery_plan_reads_as_lines_or_json() {
        assert_eq!(recovery_plan(&[], false), "nothing to recover\n");
        let plan = vec!["crawl 1: requeued".to_string()];
        assert_eq!(recovery_plan(&plan, false), "crawl 1: requeued\n");
        let json: serde_json::Value = serde_json::from_str(&recovery_plan(&plan, true)).unwrap();
        assert_eq!(json["plan"][0], "crawl 1: requeued");
    }

    #[test]
    fn check_config_shows_the_resolved_settings_as_toml_or_json() {
        let config = Config::parse(std::path::Path::new("/etc/abxd/supervisor.toml"), "").unwrap();
        let hooks = "hooks run as abxd-hook";
        let text = check_config(&config, false, hooks).unwrap();
        assert!(
            text.starts_with("# /etc/abxd/supervisor.toml: ok. hooks run as abxd-hook.\n"),
            "{text}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&check_config(&config, true, hooks).unwrap()).unwrap();
        assert_eq!(json["ok"], true);
        assert_eq!(json["hooks"], hooks);
        assert_eq!(json["config"]["paths"]["data_dir"], "/etc/abxd/data");
    }
}
