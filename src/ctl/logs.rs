//! `abxctl logs ID [-f]`: a process's stdout and stderr.

use super::{CtlError, Result, FOLLOW_INTERVAL};
use crate::config::Config;
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
        for ((name, path), offset) in files.iter().zip(offsets.iter_mut()) {
            let Ok(mut file) = std::fs::File::open(path) else {
                continue;
            };
            let _ = file.seek(SeekFrom::Start(*offset));
            let mut chunk = Vec::new();
            let _ = file.read_to_end(&mut chunk);
            if !chunk.is_empty() {
                if !follow {
                    let _ = writeln!(out, "==> {name}: {path} <==");
                }
                let _ = out.write_all(&chunk);
                *offset += chunk.len() as u64;
            }
        }
        let _ = out.flush();
        let ended = !store.process(id)?.is_some_and(|r| r.status.is_live());
        if !follow || ended {
            return Ok(0);
        }
        std::thread::sleep(FOLLOW_INTERVAL);
    }
}
