use abxd::cli::{AbxdCli, AbxdCommand};
use abxd::config::Config;
use abxd::daemon::Daemon;
use anyhow::Result;
use clap::Parser;

fn main() {
    let cli = AbxdCli::parse();
    let code = run(cli).unwrap_or_else(|err| {
        eprintln!("abxd: {err:#}");
        1
    });
    std::process::exit(code);
}

fn run(cli: AbxdCli) -> Result<i32> {
    let config = Config::load(&cli.config.path())?;
    match cli.command.unwrap_or(AbxdCommand::Serve) {
        AbxdCommand::CheckConfig => {
            println!("{}: ok", config.source.display());
            println!("{config:#?}");
            Ok(0)
        }
        AbxdCommand::Serve => {
            abxd::logging::init(config.log.level);
            Ok(Daemon::start(config)?.run()?)
        }
    }
}
