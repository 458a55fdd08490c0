//! `abxctl logs`: a process's stdout and stderr — a row's, or a result's latest run — whole, the
//! last lines of each (`-n`), and followed (`-f`) until the process ends.
//!
//! Invariant: what a process wrote is printed escaped (`printable`), whole lines only while it
//! runs (a character is never cut), and never more than once.

use super::{CtlError, Result, FOLLOW_INTERVAL};
use crate::config::Config;
use crate::domain::Kind;
use crate::printable;
use crate::store::{ProcessRow, Store};
use std::io::{Read, Seek, SeekFrom, Write};

/// Whose logs.
pub(super) enum Which {
    Row(i64),
    Result(i64),
}

/// Which streams.
pub(super) struct Streams {
    pub stdout: bool,
    pub stderr: bool,
}

pub(super) fn run(
    config: &Config,
    which: Which,
    streams: Streams,
    last_lines: Option<usize>,
    follow: bool,
) -> Result<i32> {
    let store = Store::open_read_only_at(&config.database)?;
    let row = match which {
        Which::Row(id) => store.processes().get(id)?.ok_or_else(|| {
            CtlError::BadInput(format!("no process row {id} (see abxctl ps --all)"))
        })?,
        Which::Result(id) => store.processes().result_run(id)?.ok_or_else(|| {
            CtlError::BadInput(format!("result {id} never ran (see abxctl show)"))
        })?,
    };
    let id = row.id;
    let files: Vec<(&str, String)> = [
        ("stdout", &row.stdout_path, streams.stdout),
        ("stderr", &row.stderr_path, streams.stderr),
    ]
    .into_iter()
    .filter(|(_, _, wanted)| *wanted)
    .filter_map(|(name, path, _)| path.clone().map(|p| (name, p)))
    .collect();
    if files.is_empty() {
        return Err(CtlError::BadInput(no_logs(&row)));
    }
    let label = follow && files.len() > 1;
    let mut offsets: Vec<u64> = files
        .iter()
        .map(|(_, path)| last_lines.map_or(0, |n| start_of_last_lines(path, n)))
        .collect();
    let mut out = std::io::stdout().lock();
    loop {
        // Asked before reading: once the process has ended, the last round prints all that is
        // left, a last line without its newline too.
        let last = !follow
            || !store
                .processes()
                .get(id)?
                .is_some_and(|r| r.status.is_live());
        for ((name, path), offset) in files.iter().zip(offsets.iter_mut()) {
            let Ok(mut file) = crate::logs::read_log(std::path::Path::new(path)) else {
                continue;
            };
            let _ = file.seek(SeekFrom::Start(*offset));
            let mut chunk = Vec::new();
            let _ = file.read_to_end(&mut chunk);
            // Whole lines only while it runs (a line still being written waits for the next
            // round), so a character is never cut; printed with control characters escaped.
            let whole = match chunk.iter().rposition(|&b| b == b'\n') {
                _ if last => chunk.len(),
                Some(end) => end + 1,
                None => 0,
            };
            if whole > 0 {
                let text = printable::text(&String::from_utf8_lossy(&chunk[..whole])).into_owned();
                if label {
                    for line in text.lines() {
                        let _ = writeln!(out, "{name:<6} | {line}");
                    }
                } else {
                    if !follow {
                        let _ = writeln!(out, "==> {name}: {path} <==");
                    }
                    let _ = out.write_all(text.as_bytes());
                }
                *offset += whole as u64;
            }
        }
        let _ = out.flush();
        if last {
            return Ok(0);
        }
        std::thread::sleep(FOLLOW_INTERVAL);
    }
}

/// Why a row has no log files to show, and where to look instead.
fn no_logs(row: &ProcessRow) -> String {
    match row.kind {
        Kind::Orchestrator => format!(
            "process row {} is abxd itself: it logs to its standard error — under systemd, \
             `journalctl -u abxd`; when run by hand, wherever its stderr went",
            row.id
        ),
        _ => format!(
            "process row {} has no log files (of the streams asked for)",
            row.id
        ),
    }
}

/// The offset in the log at `path` where its last `n` lines begin (0 if it has fewer).
fn start_of_last_lines(path: &str, n: usize) -> u64 {
    const BLOCK: u64 = 8192;
    let Ok(mut file) = crate::logs::read_log(std::path::Path::new(path)) else {
        return 0;
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if n == 0 {
        return len;
    }
    // A last line without its newline counts as a line.
    let mut newlines = 0;
    let mut end = len;
    let mut block = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let size = (end - start) as usize;
        if file.seek(SeekFrom::Start(start)).is_err()
            || file.read_exact(&mut block[..size]).is_err()
        {
            return 0;
        }
        for (i, &byte) in block[..size].iter().enumerate().rev() {
            let at = start + i as u64;
            if byte == b'\n' && at + 1 != len {
                newlines += 1;
                if newlines == n {
                    return at + 1;
                }
            }
        }
        end = start;
    }
    0
}
