//! `abxctl ps`: the process table as a tree, read from the database directly (read-only), so it
//! works while the daemon is stopped or crashed; `--watch` redraws it every second.
//!
//! Invariant: `--watch` reads the database again only when its files changed (their size or
//! time), and checks the live rows against procfs at each redraw: a process that ended shows
//! within a second, and an idle table costs a `stat` per second, not a query.

use super::Result;
use crate::config::Config;
use crate::render::{self, PsEntry};
use crate::store::{now_ms, Kind, ProcessFilter, ProcessRow, Store};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// What `ps` shows.
pub(super) struct Ps {
    pub all: bool,
    pub kind: Option<Kind>,
    pub crawl: Option<i64>,
    /// How far back `--since` reaches: from each reading of the table (it slides with --watch).
    pub since: Option<Duration>,
    pub json: bool,
    pub wide: bool,
    pub watch: bool,
}

/// How often `--watch` redraws.
const WATCH_EVERY: Duration = Duration::from_secs(1);

pub(super) fn run(config: &Config, ps: Ps) -> Result<i32> {
    let store = Store::open_read_only_at(&config.database)?;
    if !ps.watch {
        let rows = store.processes(&ps.filter())?;
        print!("{}", draw(rows, &ps, look(config)));
        return Ok(0);
    }
    let mut seen = None;
    let mut rows = Vec::new();
    loop {
        let version = config.database.file().map(files_version);
        if seen != version {
            rows = store.processes(&ps.filter())?;
            seen = version;
        }
        let screen = draw(rows.clone(), &ps, look(config));
        // Home, clear, then the table (as watch(1)); a pipe gets the tables one after another.
        let clear = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            "\x1b[H\x1b[2J"
        } else {
            "\n"
        };
        print!("{clear}{screen}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::thread::sleep(WATCH_EVERY);
    }
}

/// How the table looks: whether the daemon answers (one connection to its socket) and colour.
fn look(config: &Config) -> render::PsLook {
    render::PsLook {
        daemon_up: std::os::unix::net::UnixStream::connect(&config.control.socket).is_ok(),
        colour: render::paint::for_stdout(),
    }
}

/// The table (or JSON) of `rows` as of now.
fn draw(rows: Vec<ProcessRow>, ps: &Ps, look: render::PsLook) -> String {
    let now = now_ms();
    let entries = PsEntry::all(rows, now);
    if ps.json {
        return format!("{}\n", render::ps_json(&entries, now));
    }
    let tree = render::ps_tree(&entries, now, look);
    match terminal_width().filter(|_| !ps.wide) {
        Some(width) => render::cut_to_width(&tree, width),
        None => tree,
    }
}

/// What changes when the database does: each of its files' size and modification time.
fn files_version(database: &Path) -> Vec<Option<(u64, SystemTime)>> {
    ["", "-wal"]
        .iter()
        .map(|suffix| {
            let mut path = database.as_os_str().to_owned();
            path.push(suffix);
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.len(), meta.modified().ok()?))
        })
        .collect()
}

/// The width of the terminal standard output is, if it is one.
fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    let size = rustix::termios::tcgetwinsize(&stdout).ok()?;
    (size.ws_col > 0).then_some(size.ws_col as usize)
}

impl Ps {
    /// The rows to read, as of now.
    fn filter(&self) -> ProcessFilter {
        ProcessFilter {
            live_only: !self.all,
            kind: self.kind,
            crawl_id: self.crawl,
            since_ms: self.since.map(|age| now_ms() - age.as_millis() as i64),
        }
    }
}
