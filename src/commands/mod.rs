//! abxd's subcommands, run for `src/bin/abxd.rs`: the daemon (`serve`), `run`, `install` and the
//! workers, and the one-shot commands that only print (`check-config`, `recover --dry-run`,
//! `store …` (`store`), `machine forget`), whose output `render::admin` writes.
//!
//! Invariant: every failure is a [`CommandError`] whose [`CommandError::exit_code`] says whose it
//! is to fix: the user's (a config file, a command line: 2) or abxd's (1).

mod store;

use crate::cli::{AbxdCli, AbxdCommand, MachineCommand, WorkerCommand};
use crate::config::{Config, ConfigError, Found};
use crate::daemon::{Daemon, DaemonError};
use crate::exit;
use crate::install::InstallError;
use crate::lock::LockError;
use crate::recovery::ForgetError;
use crate::render::admin;
use crate::run::RunError;
use crate::store::{Store, StoreError};
use crate::worker::WorkerError;

/// Why a subcommand failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Install(#[from] InstallError),
    #[error(transparent)]
    Worker(#[from] WorkerError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Forget(#[from] ForgetError),
    #[error(transparent)]
    Web(#[from] crate::web::WebError),
    /// A command line that asks for something that makes no sense.
    #[error("{0}")]
    Usage(&'static str),
    #[error("cannot show the config as JSON: {0}")]
    Shown(#[from] toml::de::Error),
}

impl CommandError {
    /// A wrong config file or command line is the user's to fix (2); anything else is abxd's (1).
    pub fn exit_code(&self) -> i32 {
        let usage = matches!(
            self,
            CommandError::Config(_)
                | CommandError::Daemon(DaemonError::Config(_))
                | CommandError::Run(
                    RunError::BadInput(_) | RunError::Daemon(DaemonError::Config(_))
                )
                | CommandError::Usage(_)
                | CommandError::Forget(ForgetError::ThisMachine(_) | ForgetError::Unknown(_))
        );
        if usage {
            exit::USAGE
        } else {
            exit::FAILURE
        }
    }
}

/// Runs what `cli` asks for; returns the exit code.
pub fn run(cli: AbxdCli) -> Result<i32, CommandError> {
    let config = load_config(&cli)?;
    // (Before anything asks which machine this is: the config's id, if it names one.)
    if let Some(id) = &config.machine_id {
        crate::identity::use_machine_id(id);
    }
    let quiet = config.log.level.min(log::LevelFilter::Warn);
    match cli.command.unwrap_or(AbxdCommand::Serve) {
        AbxdCommand::CheckConfig { json } => {
            print_like_a_filter();
            config.check_environment()?;
            crate::plugins::check_settings(&config)?;
            let hooks = crate::hook_user::check_line(&config);
            print!("{}", admin::check_config(&config, json, &hooks)?);
            Ok(0)
        }
        AbxdCommand::Serve => {
            crate::logging::init(config.log.level);
            let daemon = Daemon::start(config)?;
            crate::web::start(daemon.config())?;
            Ok(daemon.run()?)
        }
        AbxdCommand::Run {
            urls,
            crawl,
            hooks_user,
        } => {
            // Progress goes to stdout; only warnings and errors go to the log unless asked.
            crate::logging::init(quiet);
            let mut config = config;
            if hooks_user.is_some() {
                // (One run, one crawl: its hooks as that user, whatever the config names.)
                config.hooks.user = hooks_user;
                config.hooks.crawl_users = None;
            }
            Ok(crate::run::run(config, &urls, &crawl)?)
        }
        AbxdCommand::Install { plugins } => {
            crate::logging::init(quiet);
            Ok(crate::install::run(config, plugins.as_deref())?)
        }
        AbxdCommand::Recover { dry_run: false, .. } => Err(CommandError::Usage(
            "recovery runs each time abxd starts; `abxd recover --dry-run` shows what it would do",
        )),
        AbxdCommand::Recover {
            dry_run: true,
            json,
        } => {
            print_like_a_filter();
            let plan = crate::recovery::dry_run(&config)?;
            print!("{}", admin::recovery_plan(&plan, json));
            Ok(0)
        }
        AbxdCommand::Store(command) => {
            print_like_a_filter();
            store::run(&config, command)
        }
        AbxdCommand::Machine(MachineCommand::Forget { id }) => {
            print_like_a_filter();
            let store = Store::open_existing_at(&config.database)?;
            let forgotten = crate::recovery::forget_machine(&store, &config, &id)?;
            let silent_for = store.shared_now() - forgotten.machine.heartbeat_at;
            print!("{}", admin::forgotten(&forgotten, silent_for));
            Ok(0)
        }
        AbxdCommand::Worker(worker) => {
            crate::logging::init(config.log.level);
            Ok(match worker {
                WorkerCommand::Crawl { id } => crate::worker::run_crawl_worker(config, id)?,
                WorkerCommand::Snapshot { id } => crate::worker::run_snapshot_worker(config, id)?,
                WorkerCommand::Export {
                    crawl,
                    to,
                    user,
                    replace,
                    as_it_goes,
                } => {
                    use crate::export::Placing;
                    let placing = match (replace, as_it_goes) {
                        (true, _) => Placing::Replacing,
                        (false, true) => Placing::AsItGoes,
                        (false, false) => Placing::Whole,
                    };
                    crate::export::run_export_worker(&config, crawl, &to, (&user, placing))
                }
            })
        }
    }
}

/// The config `cli` names: a worker's is what its daemon handed it; without `--config`, a missing
/// default file means the built-in defaults (said on stderr).
fn load_config(cli: &AbxdCli) -> Result<Config, ConfigError> {
    let path = cli.config.path();
    Ok(match cli.command {
        Some(AbxdCommand::Worker(_)) => Config::for_worker(&path)?,
        _ if cli.config.is_named() => Config::load(&path)?,
        _ => match Config::load_or_defaults(&path)? {
            (config, Found::File) => config,
            (config, Found::Defaults) => {
                eprintln!(
                    "abxd: no config file at {}: running on the built-in defaults \
                     (data in {}; supervisor.toml(5) lists every key)",
                    config.source.display(),
                    config.data_dir.display()
                );
                config
            }
        },
    })
}

/// `abxd store copy --to URL`: this config's SQLite file into the empty database `url` names,
/// with the data dir locked (abxd stopped) for the whole copy.
/// For the commands that only print (`check-config`, `recover --dry-run`): a closed pipe ends
/// them quietly, as it ends any Unix filter. (Not for the daemon and `abxd run`: SIGPIPE stays
/// ignored there, and a supervisor never dies of its output.)
fn print_like_a_filter() {
    // SAFETY: abxd is single-threaded until the daemon starts, which these commands never do
    // (signal(2) changes a process-wide disposition; no other thread can race it here).
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        );
    }
}
