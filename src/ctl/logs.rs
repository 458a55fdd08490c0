//! `abxctl logs ID [-f]`: a process's stdout and stderr.

use super::{CtlError, Result, FOLLOW_INTERVAL};
use crate::config::Config;
use crate::printable;
use crate::store::Store;
use std::io::{Read, Seek, SeekFrom, Write};

pub(super) fn run(config: &Config, id: i64, follow: bool) -> Result<i32> {
    let store = Store::open_read_only(&config.database)?;
    let row = store
        .process(id)?
        .ok_or_else(|| CtlError::BadInput(format!("no process row {id} (see abxctl ps --all)")))?;
    let files: Vec<(&str, String)> = [("stdout", &row.stdout_path), ("stderr", &row.stderr_path)]
        .into_iter()
        .filter_map(|(name, path)| path.clone().map(|p| (name, p)))
        .collect();
    if files.is_empty() {
        return Err(CtlError::BadInput(format!(
            "process row {id} has no log files"
        )));
    }
    let mut offsets = vec![0u64; files.len()];
    let mut out = std::io::stdout();
    loop {
        // Asked before reading: once the process has ended, the last round prints all that is
        // left, a last line without its newline too.
        let last = !follow || !store.process(id)?.is_some_and(|r| r.status.is_live());
        for ((name, path), offset) in files.iter().zip(offsets.iter_mut()) {
            let Ok(mut file) = crate::spawn::read_log(std::path::Path::new(path)) else {
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
                if !follow {
                    let _ = writeln!(out, "==> {name}: {path} <==");
                }
                let lines = String::from_utf8_lossy(&chunk[..whole]);
                let _ = out.write_all(printable::text(&lines).as_bytes());
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
