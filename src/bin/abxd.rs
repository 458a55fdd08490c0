use abxd::cli::{AbxdCli, AbxdCommand, MachineCommand, StoreCommand, WorkerCommand};
use abxd::config::{Config, ConfigError, Found};
use abxd::daemon::{Daemon, DaemonError};
use abxd::exit;
use abxd::render::json::document;
use abxd::run::RunError;
use anyhow::Result;
use clap::Parser;

fn main() {
    abxd::own_exe::take_own_name();
    let cli = AbxdCli::parse();
    let code = run(cli).unwrap_or_else(|err| {
        eprintln!("abxd: {err:#}");
        exit_code_of(&err)
    });
    std::process::exit(code);
}

fn run(cli: AbxdCli) -> Result<i32> {
    let path = cli.config.path();
    let config = match cli.command {
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
    };
    // (Before anything asks which machine this is: the config's id, if it names one.)
    if let Some(id) = &config.machine_id {
        abxd::identity::use_machine_id(id);
    }
    match cli.command.unwrap_or(AbxdCommand::Serve) {
        AbxdCommand::CheckConfig { json } => {
            print_like_a_filter();
            config.check_environment()?;
            abxd::plugins::check_settings(&config)?;
            if json {
                // The shown text as JSON: the same keys and values, every path resolved.
                let settings: toml::Table = toml::from_str(&config.shown_text())?;
                println!(
                    "{}",
                    document(serde_json::json!({
                        "source": config.source,
                        "ok": true,
                        "config": settings,
                    }))
                );
            } else {
                println!(
                    "# {}: ok. The settings abxd runs with, every path resolved:\n",
                    config.source.display()
                );
                print!("{}", config.shown_text());
            }
            Ok(0)
        }
        AbxdCommand::Serve => {
            abxd::logging::init(config.log.level);
            Ok(Daemon::start(config)?.run()?)
        }
        AbxdCommand::Run { urls, crawl } => {
            // Progress goes to stdout; only warnings and errors go to the log unless asked.
            abxd::logging::init(config.log.level.min(log::LevelFilter::Warn));
            Ok(abxd::run::run(config, &urls, &crawl)?)
        }
        AbxdCommand::Install { plugins } => {
            abxd::logging::init(config.log.level.min(log::LevelFilter::Warn));
            Ok(abxd::install::run(config, plugins.as_deref())?)
        }
        AbxdCommand::Recover { dry_run: false, .. } => Err(UsageError(
            "recovery runs each time abxd starts; `abxd recover --dry-run` shows what it would do",
        ))?,
        AbxdCommand::Recover {
            dry_run: true,
            json,
        } => {
            print_like_a_filter();
            let plan = abxd::recovery::dry_run(&config)?;
            if json {
                println!("{}", document(serde_json::json!({ "plan": plan })));
            } else if plan.is_empty() {
                println!("nothing to recover");
            }
            for line in plan.iter().filter(|_| !json) {
                println!("{line}");
            }
            Ok(0)
        }
        AbxdCommand::Store(StoreCommand::Copy { to }) => {
            print_like_a_filter();
            copy_store(&config, &to)
        }
        AbxdCommand::Machine(MachineCommand::Forget { id }) => {
            print_like_a_filter();
            let mut store = abxd::store::Store::open_existing_at(&config.database)?;
            let forgotten = abxd::recovery::forget_machine(&mut store, &config, &id)?;
            let silent_for = store.shared_now() - forgotten.machine.heartbeat_at;
            println!(
                "forgot machine {} ({}, silent for {})",
                forgotten.machine.id,
                forgotten.machine.hostname,
                abxd::render::short_duration(silent_for)
            );
            for line in forgotten.describe() {
                println!("  {line}");
            }
            Ok(0)
        }
        AbxdCommand::Worker(worker) => {
            abxd::logging::init(config.log.level);
            Ok(match worker {
                WorkerCommand::Crawl { id } => abxd::worker::run_crawl_worker(config, id)?,
                WorkerCommand::Snapshot { id } => abxd::worker::run_snapshot_worker(config, id)?,
            })
        }
    }
}

/// `abxd store copy --to URL`: this config's SQLite file into the empty database `url` names,
/// with the data dir locked (abxd stopped) for the whole copy.
fn copy_store(config: &Config, url: &str) -> Result<i32> {
    use abxd::store::{Location, Store};
    let Some(file) = config.database.file() else {
        Err(UsageError(
            "paths.database is a PostgreSQL database already: abxd store copy copies an SQLite \
             file",
        ))?
    };
    let Location::Postgres(server) = Location::parse(url, None, |p| p.to_path_buf()) else {
        Err(UsageError(
            "--to takes a PostgreSQL URL (postgres://USER@HOST/DBNAME)",
        ))?
    };
    let _lock = abxd::lock::DataDirLock::acquire(&config.data_dir)?;
    let source = Store::open_read_only(file)?;
    let target = Store::open_postgres(&server.url)?;
    let copied = source.copy_into(&target)?;
    let shown = abxd::store::sql::redacted(url);
    println!(
        "copied {} from {} to {shown}; now set paths.database = {shown:?} and start abxd",
        copied.describe(),
        file.display()
    );
    Ok(0)
}

/// A wrong config file or command line is the user's to fix (2); anything else is abxd's (1).
fn exit_code_of(err: &anyhow::Error) -> i32 {
    let usage = err.downcast_ref::<ConfigError>().is_some()
        || matches!(
            err.downcast_ref::<DaemonError>(),
            Some(DaemonError::Config(_))
        )
        || matches!(
            err.downcast_ref::<RunError>(),
            Some(RunError::BadInput(_) | RunError::Daemon(DaemonError::Config(_)))
        )
        || err.downcast_ref::<UsageError>().is_some()
        || matches!(
            err.downcast_ref::<abxd::recovery::ForgetError>(),
            Some(
                abxd::recovery::ForgetError::ThisMachine(_)
                    | abxd::recovery::ForgetError::Unknown(_)
            )
        );
    if usage {
        exit::USAGE
    } else {
        exit::FAILURE
    }
}

/// A command line that asks for something that makes no sense.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(&'static str);

/// For the commands that only print (`check-config`, `recover --dry-run`): a closed pipe ends
/// them quietly, as it ends any Unix filter. (Not for the daemon and `abxd run`: SIGPIPE stays
/// ignored there, and a supervisor never dies of its output.)
fn print_like_a_filter() {
    // SAFETY: abxd is single-threaded until the daemon starts, which these commands never do.
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        );
    }
}
