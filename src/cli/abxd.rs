//! `abxd`'s command line: the supervisor and its subcommands.

use super::ConfigArg;
use super::CrawlArgs;
use super::{MachineCommand, StoreCommand, WorkerCommand};
use clap::{Parser, Subcommand};

/// abxd — the process supervisor for web-archiving crawls.
///
/// Without a command, runs the supervisor in the foreground: it records every process it starts
/// in its SQLite process table, listens on its control socket for abxctl, reloads its config on
/// SIGHUP and tears its whole tree down on SIGTERM.
#[derive(Debug, Parser)]
#[command(
    name = "abxd",
    version,
    about = "process supervisor for web-archiving crawls",
    long_about,
    disable_help_subcommand = true,
    after_help = "Examples:\n  abxd                                 run the supervisor in the foreground\n  abxd run --depth 1 https://example.com/   archive a site in one go\n  abxd check-config                    check the config and print what abxd runs with"
)]
pub struct AbxdCli {
    #[command(flatten)]
    pub config: ConfigArg,
    #[command(subcommand)]
    pub command: Option<AbxdCommand>,
}

#[derive(Debug, Subcommand)]
pub enum AbxdCommand {
    /// Run the supervisor in the foreground (the default).
    #[command(
        after_help = "Examples:\n  abxd                          the supervisor in the foreground, on ./supervisor.toml\n  systemctl start abxd          the packaged service (journalctl -u abxd for its log)"
    )]
    Serve,
    /// Run every check the daemon runs on the config (keys, paths, plugins, group, socket) without
    /// starting anything, and print the settings it would run with as TOML, every path resolved.
    /// With no config file at the default place (./supervisor.toml, else
    /// /etc/abxd/supervisor.toml), abxd runs on the built-in defaults and says so.
    #[command(
        after_help = "Examples:\n  abxd check-config                          the default config\n  sudo abxd -c /etc/abxd/supervisor.toml check-config --json"
    )]
    CheckConfig {
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Archive URLs in one go: start the supervisor in the foreground, crawl, show progress,
    /// print a summary with the output paths and stop. A local file or directory is served on
    /// a loopback port for the crawl.
    #[command(
        after_help = "Examples:\n  abxd run https://example.com/                    one page, every enabled plugin\n  abxd run --depth 1 --plugins title,wget ./site   a local directory, served on loopback"
    )]
    Run {
        /// URLs, or local files / directories to serve and crawl.
        #[arg(required = true, value_name = "URL|PATH")]
        urls: Vec<String>,
        #[command(flatten)]
        crawl: Box<CrawlArgs>,
        /// Run the hooks as this user, instead of `hooks.user` (abxd as root only). Where it may
        /// not enter a directory on the way to what the run needs (a checkout in /root), the run
        /// sees that directory as only those entries, in a mount namespace of its own.
        #[arg(long, value_name = "USER")]
        hooks_user: Option<String>,
    },
    /// Provision the binaries the plugins declare (`required_binaries` in their config.json), as
    /// abx-dl's install step does: one `abxpkg … install NAME` run per binary, each a process of
    /// the table. Through the daemon when it runs; else abxd runs just for the install.
    #[command(
        after_help = "Examples:\n  abxd install                          every enabled plugin's binaries\n  abxd install --plugins chrome,wget"
    )]
    Install {
        /// Only these plugins (and those they require), instead of every enabled one.
        #[arg(long, value_delimiter = ',')]
        plugins: Option<Vec<String>>,
    },
    /// Show what recovery would do now — rows to mark lost, orphan trees to kill (with their
    /// pids), results to run again or fail, snapshots and crawls to seal or requeue — without
    /// doing it. (abxd recovers on every start, before it claims any work.)
    #[command(
        after_help = "Examples:\n  abxd recover --dry-run                what the next start would recover\n  abxd recover --dry-run --json"
    )]
    Recover {
        /// Print the plan; change nothing. (Required: recovery itself runs when abxd starts.)
        #[arg(long)]
        dry_run: bool,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Work on the store itself: check it, back it up, recover a damaged one, move it to
    /// PostgreSQL.
    #[command(
        subcommand,
        after_help = "Examples:\n  abxd store check                             is the database whole?\n  abxd store backup /var/backups/abxd.sqlite3  a consistent copy, while abxd runs\n  abxd store recover --to NEW.sqlite3          what can be read of a damaged one (abxd stopped)\n  abxd store copy --to postgres://abxd@/abxd   this host's SQLite history into PostgreSQL"
    )]
    Store(StoreCommand),
    /// The machines of a fleet sharing this config's PostgreSQL database.
    #[command(
        subcommand,
        after_help = "Examples:\n  abxd machine forget archiver-3   a host that is gone for good: its rows end, its work is recovered"
    )]
    Machine(MachineCommand),
    /// Internal: the worker processes abxd starts for a crawl or a snapshot.
    #[command(hide = true, subcommand)]
    Worker(WorkerCommand),
}
