use abxd::cli::{AbxdCli, AbxdCommand, WorkerCommand};
use abxd::config::Config;
use abxd::daemon::Daemon;
use anyhow::Result;
use clap::Parser;

fn main() {
    abxd::own_exe::take_own_name();
    let cli = AbxdCli::parse();
    let code = run(cli).unwrap_or_else(|err| {
        eprintln!("abxd: {err:#}");
        1
    });
    std::process::exit(code);
}

fn run(cli: AbxdCli) -> Result<i32> {
    let config = match cli.command {
        Some(AbxdCommand::Worker(_)) => Config::for_worker(&cli.config.path())?,
        _ => Config::load(&cli.config.path())?,
    };
    match cli.command.unwrap_or(AbxdCommand::Serve) {
        AbxdCommand::CheckConfig => {
            abxd::plugins::check_settings(&config)?;
            println!("{}: ok", config.source.display());
            println!("{config:#?}");
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
        AbxdCommand::Recover { dry_run: false } => {
            anyhow::bail!("recovery runs each time abxd starts; `abxd recover --dry-run` shows what it would do")
        }
        AbxdCommand::Recover { dry_run: true } => {
            let plan = abxd::recovery::dry_run(&config)?;
            if plan.is_empty() {
                println!("nothing to recover");
            }
            for line in plan {
                println!("{line}");
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
