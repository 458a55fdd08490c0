//! `abxctl schedule`: crawls made again on a period or at the minutes of a cron expression.

use super::CrawlArgs;
use clap::Subcommand;

// (Parsed once per run: the size of a variant costs nothing worth boxing clap's flattened args.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Crawl URL… again every DURATION, or at the minutes of a cron expression (in the host's
    /// time zone): each occurrence is a crawl of its own, linked to the schedule. An occurrence
    /// whose previous crawl still runs is skipped, saying so; one that came while abxd was down
    /// fires once when it starts (not once per occurrence missed).
    #[command(
        after_help = "Examples:\n  abxctl schedule add --every 1d --depth 1 https://example.com/feed.xml   a feed, daily\n  abxctl schedule add --cron '0 3 * * mon-fri' https://example.com/       weekdays at 03:00\n  abxctl schedule add --every 1d --from ~/bookmarks.html                  a browser's bookmarks, daily"
    )]
    Add {
        #[arg(required_unless_present = "from", value_name = "URL")]
        urls: Vec<String>,
        /// Import FILE at each occurrence instead (browser bookmarks, a feed, JSONL, text, as
        /// `add --from`): read anew each time by the parser hooks, as the hooks' user — who must
        /// be able to read it.
        #[arg(long, value_name = "FILE", conflicts_with = "urls")]
        from: Option<std::path::PathBuf>,
        /// How often ("1d", "6h", "30m"; at least a second), counted from now.
        #[arg(long, value_name = "DURATION", value_parser = period, required_unless_present = "cron", conflicts_with = "cron")]
        every: Option<std::time::Duration>,
        /// When: a crontab(5) expression ("0 3 * * *": every day at 03:00; "@hourly").
        #[arg(long, value_name = "EXPR", value_parser = cron)]
        cron: Option<String>,
        #[command(flatten)]
        crawl: CrawlArgs,
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// List the schedules: when each fires next, and what its last occurrence did.
    List {
        /// Print the documented JSON shape (docs/json.md) instead.
        #[arg(long)]
        json: bool,
    },
    /// Remove a schedule (its crawls stay).
    Remove {
        id: i64,
        #[arg(long)]
        json: bool,
    },
    /// Fire a schedule no more until it is resumed.
    Pause {
        id: i64,
        #[arg(long)]
        json: bool,
    },
    /// Let a paused schedule fire again, from its next occurrence after now.
    Resume {
        id: i64,
        #[arg(long)]
        json: bool,
    },
}

fn period(text: &str) -> Result<std::time::Duration, String> {
    let period = humantime::parse_duration(text.trim()).map_err(|err| {
        format!("invalid duration {text:?}: {err} (write it like \"1d\", \"6h\" or \"30m\")")
    })?;
    if period < std::time::Duration::from_secs(1) {
        return Err(format!("{text:?} is shorter than a second"));
    }
    Ok(period)
}

fn cron(text: &str) -> Result<String, String> {
    text.parse::<crate::domain::Cron>()
        .map(|cron| cron.to_string())
}
