//! The verbs, each written once — and `plugin_env`, a read answered alike both ways: what `add`, `schedule`, `retry`, `pause`,
//! `resume`, `cancel`, `prune` and `export` judge and write, called by the daemon's handler when
//! it runs, by `abxctl` itself when it does not, and (`add`) by `abxd run`.
//!
//! Invariants: a verb judges its request before it writes anything, and a refusal names what is
//! wrong ([`Refusal`]); a verb that makes a crawl or a schedule judges and writes in two steps
//! (`admit`, then the write), so the daemon can try a write the busy database refused again
//! without judging anew; `[crawl]`'s defaults are merged into a crawl's spec here, at admission,
//! and nowhere else.

pub mod crawl;
pub mod plugin_env;
pub mod schedule;
pub mod work;

use crate::config::Config;
use crate::control::protocol::ErrorCode;
use crate::domain::CrawlSpec;
use crate::store::StoreError;

/// Why a verb refused its request: what a client is told, with the code the daemon answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl Refusal {
    /// A request that makes no sense as asked.
    pub fn malformed(message: impl Into<String>) -> Refusal {
        Refusal {
            code: ErrorCode::Malformed,
            message: message.into(),
        }
    }

    /// A request that cannot be done to what it names as that is now.
    fn not_allowed(message: impl Into<String>) -> Refusal {
        Refusal {
            code: ErrorCode::NotAllowed,
            message: message.into(),
        }
    }

    fn not_found(message: impl Into<String>) -> Refusal {
        Refusal {
            code: ErrorCode::NotFound,
            message: message.into(),
        }
    }
}

/// What a verb that judges as it writes ends with, if not done: refused, or the store failed.
#[derive(Debug, thiserror::Error)]
pub enum VerbError {
    #[error("{}", .0.message)]
    Refused(Refusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// `spec` with `[crawl]`'s defaults merged in: the one place a crawl gets them. Refused under a
/// config that was read only in part (a client's, with an error elsewhere in the file), whose
/// `[crawl]`, plugins and collection are not what the daemon would use.
fn with_defaults(config: &Config, spec: CrawlSpec) -> Result<CrawlSpec, Refusal> {
    if let Some(why) = &config.read_partly {
        return Err(Refusal::malformed(format!(
            "{why}: abxctl read only [paths] and [control] of {}, and writes no work with abxd \
             down under a config the daemon would refuse (fix it: `abxd check-config`)",
            config.source.display()
        )));
    }
    Ok(spec.over(&config.crawl.rules()))
}

/// Refuses a plugin list naming plugins that `plugins_dirs` do not hold.
fn check_plugins(plugins_dirs: &[std::path::PathBuf], spec: &CrawlSpec) -> Result<(), Refusal> {
    let parser = spec.options.parser_plugin();
    if spec.plugins.is_none() && parser.is_none() {
        return Ok(());
    }
    let catalog = crate::plugins::Catalog::load(plugins_dirs);
    if let Some(names) = &spec.plugins {
        (catalog.check_names(names)).map_err(|unknown| Refusal::not_found(unknown.to_string()))?;
    }
    match parser {
        Some(parser) if !catalog.import_parsers().contains(&parser) => {
            let known = catalog.import_parsers();
            Err(Refusal::not_found(format!(
                "--parser: no plugin {parser} that accepts imports runs here; {}",
                match known.is_empty() {
                    true => "none does (see abxctl plugins)".to_string(),
                    false => format!("parsers: {}", known.join(", ")),
                }
            )))
        }
        _ => Ok(()),
    }
}

/// Refuses a persona that is not there to archive as (`--persona`), naming where it was looked
/// for.
fn check_persona(config: &Config, spec: &CrawlSpec) -> Result<(), Refusal> {
    let Some(name) = &spec.options.persona else {
        return Ok(());
    };
    let dir = config.personas_root().join(name);
    match dir.is_dir() {
        true => Ok(()),
        false => Err(Refusal::not_found(format!(
            "--persona {name}: no such persona ({} is not a directory: make it, or import a \
             browser profile into it with `archivebox persona`)",
            dir.display()
        ))),
    }
}

/// Refuses seeds the URL rule refuses (naming the first).
fn check_seeds(urls: &[String]) -> Result<(), Refusal> {
    match urls
        .iter()
        .find_map(|url| crate::url_rule::seed_problem(url))
    {
        Some(why) => Err(Refusal::malformed(why)),
        None => Ok(()),
    }
}
