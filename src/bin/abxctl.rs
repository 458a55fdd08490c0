use abxd::cli::AbxctlCli;
use abxd::config::Config;
use abxd::exit;
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
    let config = match Config::load_for_client(&cli.config.path(), cli.config.is_named()) {
        Ok((config, None)) => config,
        Ok((config, Some(ignored))) => {
            eprintln!(
                "abxctl: warning: {ignored}\nabxctl: (abxctl uses only [paths] and [control] \
                 of it; `abxd check-config` checks the whole file)"
            );
            config
        }
        Err(err) => {
            eprintln!("abxctl: {:#}", anyhow::Error::new(err));
            std::process::exit(exit::USAGE);
        }
    };
    if let Some(id) = &config.machine_id {
        abxd::identity::use_machine_id(id);
    }
    let code = abxd::ctl::run(&config, cli.command).unwrap_or_else(|err| {
        let code = err.exit_code();
        eprintln!("abxctl: {:#}", anyhow::Error::new(err));
        code
    });
    std::process::exit(code);
}
