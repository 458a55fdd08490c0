//! `abxd run`: the main job in one command — supervisor in the foreground, one crawl, progress,
//! a summary, and a clean stop.
//!
//! Invariant: it is the same daemon as `abxd` (same lock, same store, same tree), with a crawl
//! added before the loop starts and a stop when that crawl is sealed; local paths are served by
//! [`crate::serve`] on loopback and crawled over HTTP.

use crate::cli::CrawlArgs;
use crate::config::Config;
use crate::daemon::{Daemon, DaemonError};
use crate::domain::WorkStatus;
use crate::exit;
use crate::render::{self, say, Follow};
use crate::signal::Signal;
use crate::store::{Store, StoreError};
use std::path::Path;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    BadInput(String),
    #[error("cannot serve {path}: {cause}")]
    Serve { path: String, cause: std::io::Error },
}

/// How often progress is printed while the crawl runs.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// Turns each argument into a URL: URLs pass through; an existing local file or directory is
/// served on loopback and replaced by its address.
fn urls_for(args: &[String]) -> Result<Vec<String>, RunError> {
    let mut urls = Vec::new();
    for arg in args {
        if arg.contains("://") {
            crate::ctl::validate_url(arg).map_err(|e| RunError::BadInput(e.to_string()))?;
            urls.push(arg.clone());
            continue;
        }
        let path = Path::new(arg);
        if !path.exists() {
            return Err(RunError::BadInput(format!(
                "{arg:?} is neither a URL nor an existing file or directory"
            )));
        }
        let (root, page) = if path.is_dir() {
            (path.to_path_buf(), String::new())
        } else {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            (
                parent.unwrap_or(Path::new(".")).to_path_buf(),
                name.to_string(),
            )
        };
        let addr = crate::serve::serve_dir(&root).map_err(|cause| RunError::Serve {
            path: root.display().to_string(),
            cause,
        })?;
        say(format_args!("serving {} on http://{addr}/", root.display()));
        urls.push(format!("http://{addr}/{page}"));
    }
    Ok(urls)
}

/// Opens a passage (see `passage`) for the hook user through each directory it may not enter
/// on the way to what this run needs: the data dir, the database, the plugins, the config, abxd
/// itself, the working directory and the local paths it serves.
fn open_passages(config: &Config, args: &[String]) -> Result<(), RunError> {
    let Ok(Some(user)) = crate::hook_user::named(config) else {
        // (No user to switch to, or none that exists: `for_crawls` says why.)
        return Ok(());
    };
    let mut needed = vec![config.data_dir.clone(), config.source.clone()];
    needed.extend(config.plugins_dirs.iter().cloned());
    if let crate::config::Location::File(file) = &config.database {
        needed.push(file.clone());
    }
    let here = std::env::current_dir().ok();
    needed.extend(std::env::current_exe().ok());
    needed.extend(here.clone());
    let local = args.iter().filter(|arg| !arg.contains("://"));
    needed.extend(local.filter_map(|arg| std::fs::canonicalize(arg).ok()));
    // (The data dir is made now, to be kept; what does not exist otherwise needs no passage.)
    std::fs::create_dir_all(&config.data_dir).map_err(|cause| {
        RunError::BadInput(format!(
            "cannot make the data dir {}: {cause}",
            config.data_dir.display()
        ))
    })?;
    let needed: Vec<_> = (needed.into_iter())
        .filter(|path| path.is_absolute() && path.exists())
        .collect();
    for passage in crate::passage::plan(&user, &needed) {
        passage.open().map_err(|cause| {
            RunError::BadInput(format!(
                "user {} cannot enter {}, and no passage could be opened for it ({cause}): put \
                 what the run needs where {} can read it, or set hooks.user = \"root\"",
                user.name,
                passage.through.display(),
                user.name
            ))
        })?;
        say(format_args!("hooks run as {}: {passage}", user.name));
    }
    // (The working directory was taken before the passage hid it: taken again through it.)
    if let Some(here) = here {
        let _ = std::env::set_current_dir(here);
    }
    Ok(())
}

pub fn run(mut config: Config, args: &[String], crawl: &CrawlArgs) -> Result<i32, RunError> {
    // (Before any thread starts: a thread keeps the mount namespace it was started in.)
    open_passages(&config, args)?;
    // A crawl that could not start is refused before anything runs (who hooks run as, which
    // plugins, its rules).
    crate::hook_user::for_crawls(&config).map_err(RunError::BadInput)?;
    let urls = urls_for(args)?;
    let mut spec = crawl.spec(urls.clone());
    // (Pages abxd serves itself on loopback are no site to be polite to: unless the flags say
    // otherwise, their snapshots start as fast and as many at once as the crawl's workers allow.)
    if args.iter().all(|arg| !arg.contains("://")) {
        let workers = (spec.rules.max_concurrent_snapshots)
            .unwrap_or(u64::from(config.limits.max_snapshot_workers));
        spec.rules.delay_ms.get_or_insert(0);
        spec.rules.max_per_host.get_or_insert(workers);
    }
    // (Its one crawl may run as many at once as `--crawl-max-concurrent-snapshots` asks, even
    // beyond the host's `max_snapshots`.)
    if let Some(asked) = spec.rules.max_concurrent_snapshots {
        let asked = u32::try_from(asked).unwrap_or(u32::MAX);
        let budget = config.limits.snapshot_budget().max(asked);
        config.limits.max_snapshots = Some(budget);
    }
    let admitted = crate::verbs::crawl::admit(&config, spec)
        .map_err(|refusal| RunError::BadInput(refusal.message))?;
    let mut daemon = Daemon::start(config)?;
    if let Some(why) = daemon.egress_refusal(&admitted) {
        return Err(RunError::BadInput(format!("crawl not run: {why}")));
    }
    let data_dir = daemon.config().data_dir.clone();
    let database = daemon.config().database.clone();
    let crawl_id = daemon.add_own_crawl(&admitted)?;
    say(format_args!(
        "crawl {crawl_id}: {}",
        crate::printable::line(&urls.join(" "))
    ));
    let mut follow = Follow::new();
    let shutdown = daemon.run_until(Some(PROGRESS_INTERVAL), |store| {
        if let Err(err) = follow.update(store, crawl_id) {
            log::error!("progress: {err}");
        }
        // (Sealed, and — with `[archivebox]` — in ArchiveBox's index or failed to get there.)
        let sealed =
            matches!(store.crawls().get(crawl_id), Ok(Some(c)) if c.status == WorkStatus::Sealed);
        sealed
            && store
                .exports()
                .of_crawl(crawl_id)
                .is_ok_and(|e| e.iter().all(|e| e.status.is_final()))
    })?;
    follow.finish();
    let sealed = Store::open_read_only_at(&database)?
        .crawls()
        .get(crawl_id)?
        .filter(|c| c.status == WorkStatus::Sealed);
    let code = match (sealed, shutdown.signal) {
        (Some(crawl), _) => exit::of_crawl(
            &crawl,
            &Store::open_read_only_at(&database)?
                .results()
                .of_crawl(crawl_id)?,
        ),
        // Ctrl-C stops the one job this command is: its crawl goes with it.
        (None, Some(Signal::INT)) => {
            Store::open_at(&database)?.crawls().cancel(crawl_id)?;
            say(format_args!("\ninterrupted: crawl {crawl_id} cancelled"));
            exit::INTERRUPTED
        }
        (None, signal) => {
            say(format_args!(
                "\nstopped{}: crawl {crawl_id} left unfinished; abxd resumes it when it starts \
                 (abxctl cancel {crawl_id} drops it)",
                signal.map(|s| format!(" by {s}")).unwrap_or_default()
            ));
            if signal == Some(Signal::TERM) {
                exit::TERMINATED
            } else {
                exit::FAILURE
            }
        }
    };
    let store = Store::open_read_only_at(&database)?;
    say("");
    say(render::crawl_report(
        &store,
        &data_dir,
        crawl_id,
        &Default::default(),
        render::paint::for_stdout(),
    )?
    .unwrap_or_default()
    .trim_end());
    Ok(code)
}
