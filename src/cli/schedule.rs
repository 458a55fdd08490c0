//! `abxctl schedule`: crawls made again on a period or at the minutes of a cron expression.

use super::CrawlArgs;
use clap::Subcommand;

// (Parsed once per run: the size of a variant costs nothing worth boxing clap's flattened args.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Crawl URL… again every DURATION, or at the minutes of a cron expression (read in the time
    /// zone it is added in — $TZ, else the host's — whichever host fires it): each occurrence is a crawl of its own, linked to the schedule. An occurrence
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
        /// How often: a period ("1d", "6h", "30m"; at least a second) counted from now — or, as
        /// ArchiveBox's --every, "daily", "weekly", "monthly" (and "minute", "hour", "year") or a
        /// cron expression, as --cron.
        #[arg(long, value_name = "DURATION", value_parser = every, required_unless_present = "cron", conflicts_with = "cron")]
        every: Option<Every>,
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
    /// Pause a schedule: it makes no crawl until it is resumed (its crawls already made go on).
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

/// How often `schedule add --every` says: a period, or the minutes of a cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Every {
    Period(std::time::Duration),
    Cron(String),
}

/// ArchiveBox's names for a schedule (`crawls/schedule_util.py`), as the cron expressions it
/// takes them for.
const ARCHIVEBOX_ALIASES: &[(&[&str], &str)] = &[
    (&["minute", "minutely"], "* * * * *"),
    (&["hour", "hourly"], "0 * * * *"),
    (&["day", "daily"], "0 0 * * *"),
    (&["week", "weekly"], "0 0 * * 0"),
    (&["month", "monthly"], "0 0 1 * *"),
    (&["year", "yearly"], "0 0 1 1 *"),
];

fn every(text: &str) -> Result<Every, String> {
    let named = text.trim().to_lowercase();
    if let Some((_, expression)) =
        (ARCHIVEBOX_ALIASES.iter()).find(|(names, _)| names.contains(&named.as_str()))
    {
        return cron(expression).map(Every::Cron);
    }
    match humantime::parse_duration(text.trim()) {
        Ok(period) if period < std::time::Duration::from_secs(1) => {
            Err(format!("{text:?} is shorter than a second"))
        }
        Ok(period) => Ok(Every::Period(period)),
        // (ArchiveBox's --every takes a cron expression too.)
        Err(_) if text.split_whitespace().count() == 5 || text.trim().starts_with('@') => {
            cron(text).map(Every::Cron)
        }
        Err(err) => Err(format!(
            "invalid period {text:?}: {err} (write it like \"1d\", \"6h\" or \"30m\", or \
             \"daily\", \"weekly\", \"monthly\", or a cron expression)"
        )),
    }
}

fn cron(text: &str) -> Result<String, String> {
    text.parse::<crate::domain::Cron>()
        .map(|cron| cron.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_takes_a_period_archiveboxs_names_or_a_cron_expression() {
        let day = std::time::Duration::from_secs(86_400);
        assert_eq!(every("1d"), Ok(Every::Period(day)));
        assert_eq!(every("daily"), Ok(Every::Cron("0 0 * * *".into())));
        assert_eq!(every("Weekly"), Ok(Every::Cron("0 0 * * 0".into())));
        assert_eq!(every("0 */6 * * *"), Ok(Every::Cron("0 */6 * * *".into())));
        assert!(every("500ms")
            .unwrap_err()
            .contains("shorter than a second"));
        assert!(every("sometimes").unwrap_err().contains("\"daily\""));
    }
}
