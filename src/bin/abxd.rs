//! `abxd`: parse the command line, run what it asks for (`abxd::commands`), map the outcome to
//! an exit code.

use clap::Parser;

fn main() {
    abxd::own_exe::take_own_name();
    let cli = abxd::cli::AbxdCli::parse();
    let code = abxd::commands::run(cli).unwrap_or_else(|err| {
        let code = err.exit_code();
        eprintln!("abxd: {:#}", anyhow::Error::new(err));
        code
    });
    std::process::exit(code);
}
