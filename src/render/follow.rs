//! Following a crawl on screen (`abxctl add --wait`, `abxd run`): on a terminal, a live status
//! line (indicatif) — hooks done of those known, time since it began, the hooks running — with
//! a line above it for each result that starts or ends; in a pipe, those lines alone.
//!
//! Invariant: what a pipe gets is the same lines a terminal shows above its status line, without
//! colour; the status line is cleared before anything else is printed after it.

use super::paint;
use super::progress::{Progress, Standing};
use crate::store::{Store, StoreError};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

pub struct Follow {
    progress: Progress,
    /// The status line, on a terminal.
    bar: Option<ProgressBar>,
    colour: bool,
}

impl Follow {
    /// A follower for standard output: a status line if it is a terminal.
    pub fn new() -> Follow {
        let bar = std::io::stdout().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            let style = ProgressStyle::with_template("{spinner} {elapsed:>4} {wide_msg}")
                .expect("a valid template");
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Follow {
            progress: Progress::default(),
            bar,
            colour: paint::for_stdout(),
        }
    }

    /// Prints what changed in crawl `crawl_id` since the last call, and where it stands.
    pub fn update(&mut self, store: &Store, crawl_id: i64) -> Result<(), StoreError> {
        let (lines, standing) = self.progress.update(store, crawl_id, self.colour)?;
        match &self.bar {
            Some(bar) => {
                for line in lines {
                    bar.println(line);
                }
                bar.set_message(status_line(&standing));
            }
            None => lines.iter().for_each(say),
        }
        Ok(())
    }

    /// Clears the status line (before the summary is printed).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Default for Follow {
    fn default() -> Self {
        Follow::new()
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The status line's words: `3/10 hooks done · running: on_Snapshot__50_wget.py, …`.
pub fn status_line(standing: &Standing) -> String {
    let running = match standing.running.as_slice() {
        [] => String::new(),
        hooks => format!(" · running: {}", hooks.join(", ")),
    };
    format!("{}/{} hooks done{running}", standing.done, standing.total)
}

/// Prints a line; a closed standard output is not a reason to stop (what cannot be printed is
/// dropped): `abxd run … | head` goes on supervising.
pub fn say(line: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::{status_line, Standing};

    #[test]
    fn the_status_line_counts_and_names_what_runs() {
        let standing = Standing {
            done: 3,
            total: 10,
            running: vec!["on_Snapshot__50_wget.py".into()],
        };
        assert_eq!(
            status_line(&standing),
            "3/10 hooks done · running: on_Snapshot__50_wget.py"
        );
        assert_eq!(status_line(&Standing::default()), "0/0 hooks done");
    }
}
