//! `abxctl plugins`: what the plugins dirs hold, as a crawl would run it.

use super::Result;
use crate::config::Config;
use crate::plugins::{env, Catalog, Phase};
use crate::printable;
use serde_json::json;

pub(super) fn run(config: &Config, json: bool) -> Result<i32> {
    let catalog = Catalog::load(&config.plugins_dirs);
    let selected = catalog
        .select(config, None)
        .expect("every plugin of the catalog exists");
    if json {
        let plugins: Vec<_> = catalog
            .plugins
            .values()
            .map(|plugin| {
                let hooks: Vec<_> = plugin
                    .hooks
                    .iter()
                    .map(|h| {
                        json!({
                            "file": h.file_name,
                            "event": h.event,
                            "order": h.order,
                            "background": h.background,
                            "crawled": h.phase().is_some(),
                        })
                    })
                    .collect();
                json!({
                    "name": plugin.name,
                    "dir": plugin.dir,
                    "enabled": env::enabled(plugin, &catalog, config),
                    "runs": selected.contains(&plugin.name),
                    "required_plugins": plugin.manifest.required_plugins,
                    "hooks": hooks,
                })
            })
            .collect();
        let rejected: Vec<_> = catalog
            .rejected
            .iter()
            .map(|r| json!({"plugin": r.plugin, "path": r.path, "reason": r.reason}))
            .collect();
        let out = json!({"version": 1, "plugins": plugins, "rejected": rejected});
        println!("{out}");
        return Ok(0);
    }
    if catalog.plugins.is_empty() {
        let dirs: Vec<String> = config
            .plugins_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        println!("no plugins in {}", dirs.join(", "));
        return Ok(0);
    }
    for plugin in catalog.plugins.values() {
        let state = if selected.contains(&plugin.name) {
            "runs"
        } else if !env::enabled(plugin, &catalog, config) {
            "disabled"
        } else {
            "does not run: a plugin it requires is missing or disabled"
        };
        let requires = if plugin.manifest.required_plugins.is_empty() {
            String::new()
        } else {
            format!(", requires {}", plugin.manifest.required_plugins.join(", "))
        };
        let line = format!(
            "{} ({state}{requires})  {}",
            plugin.name,
            plugin.dir.display()
        );
        println!("{}", printable::line(&line));
        for hook in &plugin.hooks {
            let phase = match hook.phase() {
                Some(Phase::Crawl) => "crawl",
                Some(Phase::Snapshot) => "snapshot",
                None => "not run",
            };
            let background = if hook.background { "  background" } else { "" };
            let file = printable::line(&hook.file_name);
            println!("  {phase:<9}{:>3}  {file}{background}", hook.order);
        }
        for rejected in catalog.rejected.iter().filter(|r| r.plugin == plugin.name) {
            let file = rejected.file_name();
            let line = format!("  rejected      {file}: {}", rejected.reason);
            println!("{}", printable::line(&line));
        }
    }
    Ok(0)
}
