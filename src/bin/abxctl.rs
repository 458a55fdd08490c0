use abxd::cli::AbxctlCli;
use abxd::config::Config;
use anyhow::Result;
use clap::Parser;

fn main() {
    let cli = AbxctlCli::parse();
    let code = run(cli).unwrap_or_else(|err| {
        eprintln!("abxctl: {err:#}");
        1
    });
    std::process::exit(code);
}

fn run(cli: AbxctlCli) -> Result<i32> {
    let config = Config::load(&cli.config.path())?;
    Ok(abxd::ctl::run(&config, cli.command)?)
}
