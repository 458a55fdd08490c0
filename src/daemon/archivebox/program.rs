//! The program of a turn's ArchiveBox side: `serve_queue.py` (built into abxd, so that it always
//! matches it), run by the Python that runs the collection's `archivebox`, with the turn's
//! facts at its end — one file abxd writes and opens as its standard input, so nothing of
//! abxd's is left for the collection's owner to read.
//!
//! Invariant: pure but for reading the `archivebox` script's first line; the facts ride in the
//! program as hex, which no JSON can break out of.

use std::path::PathBuf;

/// The program of a turn, run by ArchiveBox's Python.
const PROGRAM: &str = include_str!("serve_queue.py");

/// The program with `facts` for it to act on.
pub(super) fn with_facts(facts: &serde_json::Value) -> String {
    let encoded = hex(facts.to_string().as_bytes());
    format!("{PROGRAM}\nrun(\"{encoded}\")\n")
}

/// The Python that runs `archivebox` (its script's `#!` line), or why there is none.
pub(super) fn archivebox_python(command: &std::path::Path) -> std::io::Result<PathBuf> {
    let program = if command.components().count() > 1 {
        command.to_path_buf()
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        (std::env::split_paths(&path).map(|dir| dir.join(command)))
            .find(|candidate| candidate.is_file())
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{} is not on the PATH", command.display()),
                )
            })?
    };
    let text = std::fs::read(&program)?;
    let first = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(first);
    python_of_shebang(&line).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not ArchiveBox's Python script", program.display()),
        )
    })
}

/// The interpreter a `#!` line names, if it names a Python.
fn python_of_shebang(line: &str) -> Option<PathBuf> {
    let words: Vec<&str> = line.strip_prefix("#!")?.split_whitespace().collect();
    let python = match words.as_slice() {
        [env, python, ..] if env.ends_with("/env") => *python,
        [python, ..] => *python,
        [] => return None,
    };
    let name = std::path::Path::new(python).file_name()?.to_string_lossy();
    name.starts_with("python").then(|| PathBuf::from(python))
}

/// `bytes` as lower-case hex: how the facts ride in the program's text (`bytes.fromhex`).
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_facts_ride_as_hex() {
        assert_eq!(hex(b""), "");
        assert_eq!(hex(&[0x00, 0x7f, 0xff]), "007fff");
        let program = with_facts(&serde_json::json!({"a": 1}));
        assert!(program.ends_with(&format!("run(\"{}\")\n", hex(br#"{"a":1}"#))));
    }

    #[test]
    fn the_python_is_the_one_the_script_names() {
        let venv = "#!/opt/ab/bin/python3.13";
        assert_eq!(
            python_of_shebang(venv),
            Some("/opt/ab/bin/python3.13".into())
        );
        let env = "#!/usr/bin/env python3";
        assert_eq!(python_of_shebang(env), Some("python3".into()));
        assert_eq!(python_of_shebang("#!/bin/sh"), None);
        assert_eq!(python_of_shebang("\u{7f}ELF"), None);
    }
}
