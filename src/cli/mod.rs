//! The command lines of both binaries, defined once with clap (the man pages and completions are
//! generated from these definitions).

use crate::domain::Kind;
use crate::signal::Signal;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod abxd;
mod crawl;
mod groups;
mod schedule;
pub use abxd::{AbxdCli, AbxdCommand};
pub use crawl::CrawlArgs;
pub use groups::{MachineCommand, StoreCommand, WorkerCommand};
pub use schedule::{Every, ScheduleCommand};

/// Where to find the config; shared by both binaries.
#[derive(Debug, Args)]
pub struct ConfigArg {
    /// The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]
    #[arg(long, short = 'c', global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

impl ConfigArg {
    /// Whether the operator named the config (`--config` or `ABXD_CONFIG`): then it must exist.
    pub fn is_named(&self) -> bool {
        self.config.is_some() || std::env::var_os("ABXD_CONFIG").is_some()
    }

    pub fn path(&self) -> PathBuf {
        self.config
            .clone()
            .unwrap_or_else(crate::config::default_config_path)
    }
}

/// abxctl — watch and control abxd.
#[derive(Debug, Parser)]
#[command(
    name = "abxctl",
    version,
    about = "watch and control the abxd process supervisor",
    long_about,
    after_help = "Examples:\n  abxctl add --wait https://example.com/   queue a crawl and follow it to its end\n  abxctl ps                                what runs now, as a tree\n  abxctl show 3                            crawl 3's results, and why any failed\n  abxctl help ps                           the options of one command"
)]
pub struct AbxctlCli {
    #[command(flatten)]
    pub config: ConfigArg,
    #[command(subcommand)]
    pub command: AbxctlCommand,
}

#[derive(Debug, Subcommand)]
pub enum AbxctlCommand {
    /// Whether the daemon is up: its pid, uptime and live processes by kind. Exits 3 when no
    /// daemon is listening.
    #[command(
        after_help = "Examples:\n  abxctl status                 is abxd up, since when, what runs\n  abxctl status || echo down    exits 3 when abxd is not running"
    )]
    Status {
        /// Print the daemon's answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The process table as a tree. Reads the database directly (read-only), so it works while
    /// the daemon is stopped or crashed.
    #[command(
        after_help = "Examples:\n  abxctl ps                    live processes\n  abxctl ps -a --crawl 3       every process crawl 3 ran\n  abxctl ps --since 10m --watch   what started in the last 10 minutes, redrawn every second"
    )]
    Ps {
        /// Show ended processes too, not only live ones.
        #[arg(long, short = 'a')]
        all: bool,
        /// Only processes of this kind.
        #[arg(long, value_parser = kind_parser(), value_name = "KIND")]
        kind: Option<Kind>,
        /// Machine-readable output: {"version":1,"now_ms":…,"processes":[…]}.
        #[arg(long)]
        json: bool,
        /// Whole command lines. Without it, lines are cut to the terminal's width when the
        /// output is a terminal (never when it is piped).
        #[arg(long, short = 'w')]
        wide: bool,
        /// Only processes of this crawl.
        #[arg(long, value_name = "ID")]
        crawl: Option<i64>,
        /// Only processes of this machine (its hostname or machine id), where several hosts
        /// share one database.
        #[arg(long, value_name = "NAME")]
        machine: Option<String>,
        /// Only processes started (or, never started, created) within this long ago: 10m, 2h.
        #[arg(long, value_name = "AGE", value_parser = humantime::parse_duration)]
        since: Option<std::time::Duration>,
        /// Redraw every second, as watch(1) does, until interrupted; the database is read again
        /// only when it changed.
        #[arg(long, conflicts_with = "json")]
        watch: bool,
    },
    /// Enqueue a crawl of URL… (also while the daemon is down: it runs when the daemon starts).
    #[command(
        after_help = "Examples:\n  abxctl add https://example.com/                  every enabled plugin\n  abxctl add --plugins title,wget --depth 1 URL     two plugins, and the pages it links\n  abxctl add --wait URL; echo $?                    0 ok, 4 a hook failed, 5 cancelled\n  abxctl add --depth 1 --from bookmarks.html        every page a browser export lists\n  curl -s https://example.com/feed.xml | abxctl add -   a feed's entries"
    )]
    Add {
        /// The URLs to crawl; `-` imports what standard input holds, as --from does a file.
        #[arg(required_unless_present = "from", value_name = "URL")]
        urls: Vec<String>,
        /// Import FILE instead of URLs: browser bookmarks (Netscape HTML), an RSS or Atom feed,
        /// JSONL or plain text, parsed by the plugins that accept imports (parse_*_urls), each URL
        /// found a seed of the crawl (through its rules). Waits for the parse, and fails naming
        /// the file when nothing in it parsed.
        #[arg(long, value_name = "FILE", conflicts_with = "urls")]
        from: Option<std::path::PathBuf>,
        #[command(flatten)]
        crawl: CrawlArgs,
        /// Follow the crawl until it is sealed and print its results (what `archivebox add`
        /// does without --bg).
        #[arg(long, conflicts_with_all = ["bg", "index_only"])]
        wait: bool,
        /// Queue the crawl and return at once (the default; ArchiveBox's --bg).
        #[arg(long)]
        bg: bool,
        /// Record the crawl without running it: it is added paused, and runs once resumed
        /// (`abxctl resume CRAWL`).
        #[arg(long)]
        index_only: bool,
        /// Print the documented JSON shape (docs/json.md) instead: the crawl's id, and with
        /// --wait, no progress but the crawl as `show --json` prints it.
        #[arg(long)]
        json: bool,
    },
    /// Crawls made again on a period or at the minutes of a cron expression.
    #[command(
        subcommand,
        after_help = "Examples:\n  abxctl schedule add --every 1d --depth 1 https://example.com/feed.xml\n  abxctl schedule list"
    )]
    Schedule(ScheduleCommand),
    /// Follow a crawl until it is sealed: a line for each result that starts or ends, then its
    /// report. Ctrl-C stops the following, not the crawl.
    #[command(
        after_help = "Examples:\n  abxctl follow                the newest crawl that is not sealed\n  abxctl follow 12 --json      crawl 12, a JSON document a line (docs/json.md)"
    )]
    Follow {
        /// The crawl id (default: the newest crawl that is not sealed).
        id: Option<i64>,
        /// A JSON document a line instead: each result that starts or ends, then the seal.
        #[arg(long)]
        json: bool,
    },
    /// List crawls with their status and counts.
    #[command(
        after_help = "Examples:\n  abxctl crawls\n  abxctl crawls --status failed --limit 10\n  abxctl crawls --json | jq '.crawls[] | select(.results.failed > 0) | .id'"
    )]
    Crawls {
        /// Only the crawls that are queued, started, paused or sealed — or, sealed, that
        /// finished, were cancelled or failed.
        #[arg(long, value_name = "STATUS")]
        status: Option<crate::domain::CrawlState>,
        /// Only the newest N of them.
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Sites (host keys: a registrable domain, or an address) with snapshots running or queued,
    /// or cooling down after a 429 or 503: when each may start another, and why it waits
    /// ([politeness] in supervisor.toml(5)).
    #[command(
        after_help = "Examples:\n  abxctl hosts\n  abxctl hosts --json | jq '.hosts[] | select(.cooldown_ms != null)'"
    )]
    Hosts {
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Every snapshot of a URL, in any crawl: its crawl, its status, when it was archived and
    /// where its files are.
    #[command(
        after_help = "Examples:\n  abxctl find https://example.com/\n  abxctl find https://example.com/ --json | jq -r '.snapshots[-1].dir'"
    )]
    Find {
        /// The URL, as it was crawled (a #fragment is not part of it).
        url: String,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// The plugins of the plugins dirs: whether each runs, what it requires, its hooks by phase
    /// in run order, the hooks of other events (listed, not crawled) and files that cannot run.
    #[command(
        after_help = "Examples:\n  abxctl plugins                what a crawl would run, in order\n  abxctl plugins --env wget     what wget's hooks get, and from where\n  abxctl plugins --json"
    )]
    Plugins {
        /// Show instead what the hooks of PLUGIN get from its config — each variable, its
        /// value and where it came from: abxd's environment, supervisor.toml, the collection's
        /// ArchiveBox.conf, or the plugin's default (as the daemon resolves them when it runs).
        #[arg(long, value_name = "PLUGIN")]
        env: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// The plugins' binaries as this host resolved them: path, version and provider — or why
    /// not, and the variable that names another one (`NODE_BINARY`, …). Reads the database.
    #[command(
        after_help = "Examples:\n  abxctl binaries\n  abxctl binaries --json | jq '.binaries[] | select(.found | not)'"
    )]
    Binaries {
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// A crawl's snapshots and the result of every hook: status, time, output size.
    #[command(
        after_help = "Examples:\n  abxctl show 3                    crawl 3, each failed hook with its exit and stderr\n  abxctl show 3 --page 2           its snapshots 51-100\n  abxctl show 3 --status failed    only its snapshots with a failed result\n  abxctl show 3 --json             the same for a program (docs/json.md); --after ID pages on"
    )]
    Show {
        /// The crawl id.
        id: i64,
        /// Page N of its snapshots (from 1); a crawl with more than a page is summed up first.
        #[arg(long, value_name = "N", conflicts_with = "after", value_parser = clap::value_parser!(u64).range(1..))]
        page: Option<u64>,
        /// Snapshots on a page.
        #[arg(long, value_name = "N", default_value_t = crate::render::DEFAULT_PAGE, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        limit: u32,
        /// Only its snapshots that are queued, started or sealed — or that have a failed result.
        #[arg(long, value_name = "STATUS")]
        status: Option<crate::domain::SnapshotState>,
        /// The page after snapshot ID (what `--json` gives as `page.next_after`).
        #[arg(long, value_name = "ID")]
        after: Option<i64>,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// A process's stdout and stderr: a row's (see `abxctl ps`), or a result's latest run (see
    /// `abxctl show`).
    #[command(
        after_help = "Examples:\n  abxctl logs 42                the stdout and stderr of process row 42\n  abxctl logs --result 7 -n 20  the last 20 lines of each stream of result 7's latest run\n  abxctl logs 42 --stderr -f    its stderr, then what it appends until it ends"
    )]
    Logs {
        /// The process row id (see `abxctl ps`).
        #[arg(required_unless_present = "result", conflicts_with = "result")]
        id: Option<i64>,
        /// The latest run of this result instead (the ids `abxctl show` prints).
        #[arg(long, value_name = "ID")]
        result: Option<i64>,
        /// Only the last N lines of each stream (then, with -f, what follows).
        #[arg(long, short = 'n', value_name = "N")]
        lines: Option<usize>,
        /// Only standard output.
        #[arg(long, conflicts_with = "stderr")]
        stdout: bool,
        /// Only standard error.
        #[arg(long)]
        stderr: bool,
        /// Keep printing what is appended until the process has ended, each line labelled with
        /// its stream when both are shown.
        #[arg(long, short = 'f')]
        follow: bool,
    },
    /// Tear down a live process of the table and everything below it: the first signal now,
    /// SIGKILL at the deadline. Prints what happened to each process. Refuses anything that is not
    /// a live process of abxd's table.
    #[command(
        after_help = "Examples:\n  abxctl kill 42                   row 42 and everything below it\n  abxctl kill --pid 1234 -s INT --grace 10s"
    )]
    Kill {
        /// The process row id (see `abxctl ps`).
        #[arg(required_unless_present = "pid", conflicts_with = "pid")]
        id: Option<i64>,
        /// Name the process by its pid instead of its row id.
        #[arg(long)]
        pid: Option<i32>,
        /// The first signal: a name (TERM, SIGINT, KILL, …) or a number.
        #[arg(long, short = 's', default_value = "TERM")]
        signal: Signal,
        /// Time between the first signal and SIGKILL [default: timeouts.kill_grace].
        #[arg(long, value_parser = humantime::parse_duration)]
        grace: Option<std::time::Duration>,
        /// Return once the teardown has begun, without waiting for it to finish.
        #[arg(long)]
        no_wait: bool,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Stop a crawl for good: seal it as cancelled, its open results cancelled, and tear its
    /// processes down (with abxd not running: in the database).
    #[command(
        after_help = "Examples:\n  abxctl cancel 3                  stop crawl 3 for good (abxctl retry 3 runs it again)"
    )]
    Cancel {
        /// The crawl id.
        crawl_id: i64,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Start no more hooks of a crawl and claim none of its snapshots until it is resumed;
    /// hooks already running go on (with abxd not running: in the database).
    #[command(
        after_help = "Examples:\n  abxctl pause 3                   no new hook of crawl 3 starts\n  abxctl resume 3"
    )]
    Pause {
        /// The crawl id.
        crawl_id: i64,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Let a paused crawl go on.
    #[command(after_help = "Examples:\n  abxctl resume 3")]
    Resume {
        /// The crawl id.
        crawl_id: i64,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Print the link to abxd's web view (`[web] listen`), with its token: open it in a
    /// browser. The token is read from the data dir, so this needs the right to read it.
    #[command(
        after_help = "Examples:\n  abxctl web-url                          the link, token included\n  curl -H \"Authorization: Bearer $(abxctl web-url --token)\" http://127.0.0.1:8631/metrics"
    )]
    WebUrl {
        /// Print only the token (for `Authorization: Bearer`, e.g. Prometheus'
        /// `authorization.credentials_file`).
        #[arg(long)]
        token: bool,
    },
    /// Delete the process rows of finished work (final rows of sealed crawls, or of none) that
    /// ended long enough ago, and give the space back. abxd does it by itself after each crawl
    /// it seals, by `[retention] keep_days`; crawls, snapshots and results are never pruned.
    #[command(
        after_help = "Examples:\n  abxctl prune --dry-run           how many rows retention.keep_days would prune\n  abxctl prune --older-than 7d     prune rows that ended over a week ago"
    )]
    Prune {
        /// How long ago a row must have ended (e.g. 7d, 12h) [default: retention.keep_days].
        #[arg(long, value_name = "AGE", value_parser = humantime::parse_duration)]
        older_than: Option<std::time::Duration>,
        /// Count the rows; delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Run a sealed crawl's failed and cancelled results again (their interruption count
    /// reset), through abxd or, with it not running, in the database for its next start.
    #[command(
        after_help = "The run starts again the sessions the results need (the crawl's and snapshots' background hooks, as Chrome and its tabs, and what set them up): abxd-hooks(7).\n\nExamples:\n  abxctl retry 12              failed and cancelled results of crawl 12\n  abxctl retry 12 --all        also noresults and skipped ones\n  abxctl retry 12 --hook on_Snapshot__50_wget.py"
    )]
    Retry {
        /// The crawl id.
        crawl_id: i64,
        /// Failed and cancelled results (the default).
        #[arg(long, conflicts_with = "all")]
        failed: bool,
        /// Every result that did not succeed: also noresults and skipped.
        #[arg(long)]
        all: bool,
        /// Only the results of this hook (its file name) — and a session of the crawl that
        /// failed, such as Chrome's launch, without which it would fail again.
        #[arg(long, value_name = "NAME")]
        hook: Option<String>,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Export crawls into an ArchiveBox 0.9 collection, as ArchiveBox's portable snapshot
    /// directories (archive/users/USER/snapshots/DATE/DOMAIN/ID/), then run ArchiveBox's own
    /// import there (`archivebox update --rescan`, as the collection's owner): every crawl, or
    /// those named; one not sealed yet is exported once it is. A crawl exported before is copied
    /// again only where a snapshot is missing.
    #[command(
        after_help = "Examples:\n  abxctl export --archivebox /srv/archivebox --wait       every crawl, and wait for ArchiveBox's import\n  abxctl export --archivebox ~/archivebox 3 4 --user alice"
    )]
    Export {
        /// The ArchiveBox collection's data dir (where `archivebox init` ran).
        #[arg(long, value_name = "DIR", required = true)]
        archivebox: std::path::PathBuf,
        /// The ArchiveBox user the snapshots are filed under [default: archivebox.user].
        #[arg(long, value_name = "NAME")]
        user: Option<String>,
        /// The crawls to export [default: every crawl].
        #[arg(value_name = "CRAWL_ID")]
        crawls: Vec<i64>,
        /// Wait until ArchiveBox imported them (or the export failed); exits 1 if one failed.
        #[arg(long)]
        wait: bool,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Debugging aid: run CMD as a child of the daemon (needs control.allow_debug_spawn = true).
    #[command(hide = true)]
    Spawn {
        /// Working directory [default: the data dir].
        #[arg(long)]
        cwd: Option<String>,
        /// Deadline recorded on the row, e.g. 30s.
        #[arg(long, value_parser = humantime::parse_duration)]
        timeout: Option<std::time::Duration>,
        /// The command and its arguments.
        #[arg(required = true, last = true)]
        argv: Vec<String>,
    },
}

/// A process kind, its names listed in `--help` and offered by shell completion.
fn kind_parser() -> impl clap::builder::TypedValueParser<Value = Kind> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Kind::ALL.iter().map(|kind| kind.as_str()))
        .map(|name| name.parse::<Kind>().expect("a name Kind::ALL lists"))
}
