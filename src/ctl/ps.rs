//! `abxctl ps`: the process table as a tree, read from the database directly (read-only), so it
//! works while the daemon is stopped or crashed.

use super::Result;
use crate::config::Config;
use crate::render::{self, PsEntry};
use crate::store::{now_ms, Kind, ProcessFilter, Store};

pub(super) fn run(
    config: &Config,
    all: bool,
    kind: Option<Kind>,
    json: bool,
    wide: bool,
) -> Result<i32> {
    let store = Store::open_read_only(&config.database)?;
    let filter = ProcessFilter {
        live_only: !all,
        kind,
    };
    let now = now_ms();
    let entries = PsEntry::all(store.processes(&filter)?, now);
    if json {
        println!("{}", render::ps_json(&entries, now));
    } else {
        let tree = render::ps_tree(&entries, now);
        match terminal_width().filter(|_| !wide) {
            Some(width) => print!("{}", render::cut_to_width(&tree, width)),
            None => print!("{tree}"),
        }
    }
    Ok(0)
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
