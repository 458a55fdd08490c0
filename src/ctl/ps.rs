//! `abxctl ps`: the process table as a tree, read from the database directly (read-only), so it
//! works while the daemon is stopped or crashed; `--watch` redraws it every second.
//!
//! Invariant: `--watch` reads the database again only when its files changed (their size or
//! time), and checks the live rows against procfs at each redraw: a process that ended shows
//! within a second, and an idle table costs a `stat` per second, not a query.

use super::Result;
use crate::config::Config;
use crate::domain::Kind;
use crate::render::{self, PsEntry};
use crate::store::{now_ms, Machine, ProcessFilter, ProcessRow, Store};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// What `ps` shows.
pub(super) struct Ps {
    pub all: bool,
    pub kind: Option<Kind>,
    pub crawl: Option<i64>,
    /// Only this machine's processes (a hostname or a machine id).
    pub machine: Option<String>,
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
    let machine_id = match &ps.machine {
        Some(name) => Some(machine_named(&store, name)?),
        None => None,
    };
    let read = |store: &Store| -> Result<(Vec<ProcessRow>, Vec<Machine>)> {
        Ok((
            store.processes().list(&ps.filter(machine_id.clone()))?,
            store.machines().all()?,
        ))
    };
    let lease = config.timeouts.lease;
    if !ps.watch {
        let (rows, machines) = read(&store)?;
        let silent_before = store.shared_now() - lease.as_millis() as i64;
        print!(
            "{}",
            draw(rows, &machines, &ps, look(config), silent_before)
        );
        return Ok(0);
    }
    let mut seen = None;
    let (mut rows, mut machines) = (Vec::new(), Vec::new());
    loop {
        let version = config.database.file().map(files_version);
        // (On PostgreSQL there is no file to watch: every turn reads.)
        if version.is_none() || seen != version {
            (rows, machines) = read(&store)?;
            seen = version;
        }
        let silent_before = store.shared_now() - lease.as_millis() as i64;
        let screen = draw(rows.clone(), &machines, &ps, look(config), silent_before);
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

/// The id of the machine `name` names (its id, or a registered hostname), or what there is.
fn machine_named(store: &Store, name: &str) -> Result<String> {
    let machines = store.machines().all()?;
    let found = machines
        .iter()
        .find(|m| m.id == name)
        .or_else(|| machines.iter().find(|m| m.hostname == name));
    match found {
        Some(machine) => Ok(machine.id.clone()),
        None => {
            let known: Vec<&str> = machines.iter().map(|m| m.hostname.as_str()).collect();
            Err(super::CtlError::BadInput(format!(
                "no machine named {name}; machines: {}",
                if known.is_empty() {
                    "none registered".to_string()
                } else {
                    known.join(", ")
                }
            )))
        }
    }
}

/// How the table looks: whether the daemon answers (one connection to its socket) and colour.
fn look(config: &Config) -> render::PsLook {
    render::PsLook {
        daemon_up: std::os::unix::net::UnixStream::connect(&config.control.socket).is_ok(),
        colour: render::paint::for_stdout(),
    }
}

/// The table (or JSON) of `rows` as of now; another machine's live rows are unknown once its
/// last heartbeat is before `silent_before` (the store's shared clock, ms).
fn draw(
    rows: Vec<ProcessRow>,
    machines: &[Machine],
    ps: &Ps,
    look: render::PsLook,
    silent_before: i64,
) -> String {
    let now = now_ms();
    let mut entries = PsEntry::all(rows, now);
    PsEntry::name_machines(&mut entries, machines, silent_before);
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
    fn filter(&self, machine_id: Option<String>) -> ProcessFilter {
        ProcessFilter {
            live_only: !self.all,
            kind: self.kind,
            crawl_id: self.crawl,
            since_ms: self.since.map(|age| now_ms() - age.as_millis() as i64),
            machine_id,
        }
    }
}
