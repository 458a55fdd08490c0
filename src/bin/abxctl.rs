use abxd::cli::AbxctlCli;
use abxd::config::Config;
use anyhow::Result;
use clap::Parser;

fn main() {
    // A closed pipe (`abxctl ps | head -1`) ends abxctl quietly, as it ends any Unix filter:
    // Rust ignores SIGPIPE, and a print to a closed stdout would panic. (abxctl writes to its
    // socket only before it prints, so nothing else is affected.)
    // SAFETY: called first thing, before any other thread exists.
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        );
    }
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
