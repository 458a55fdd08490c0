//! The ArchiveBox collection's own settings (`ArchiveBox.conf` in `[archivebox] data_dir`), read
//! as ArchiveBox 0.9 reads them: an INI file whose sections are only headings — every key of
//! every section is one flat setting, its name upper-cased — so that hooks get the collection's
//! `TIMEOUT`, `CHROME_*`, `USER_AGENT`, `COOKIES_FILE` and plugin toggles as they would under
//! ArchiveBox (see `plugins::env` for where they stand among abxd's own sources).
//!
//! Invariants: the file is ArchiveBox's — read, never written, and read anew with each config
//! (a worker's, a reload's); a collection without one has no settings; one abxd cannot read or
//! make sense of leaves the settings empty and says why (`unreadable`), never stops abxd.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's name in the collection's data dir.
pub const FILE: &str = "ArchiveBox.conf";

/// What the collection's `ArchiveBox.conf` sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectionSettings {
    /// The file read (none: no collection is configured).
    pub path: Option<PathBuf>,
    /// Each setting, by upper-case name.
    pub values: BTreeMap<String, String>,
    /// Why the file could not be used, when it could not.
    pub unreadable: Option<String>,
}

impl CollectionSettings {
    /// The settings of the collection at `data_dir` (none configured: none).
    pub fn read(data_dir: Option<&Path>) -> CollectionSettings {
        let Some(path) = data_dir.map(|dir| dir.join(FILE)) else {
            return CollectionSettings::default();
        };
        let (values, unreadable) = match std::fs::read_to_string(&path) {
            Ok(text) => match parse(&text) {
                Ok(values) => (values, None),
                Err(why) => (BTreeMap::new(), Some(format!("{}: {why}", path.display()))),
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => (BTreeMap::new(), None),
            Err(err) => (BTreeMap::new(), Some(format!("{}: {err}", path.display()))),
        };
        CollectionSettings {
            path: Some(path),
            values,
            unreadable,
        }
    }

    /// The value the collection sets for `key`, if it does.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

/// An `ArchiveBox.conf`'s settings, as Python's `configparser` reads it for ArchiveBox: `[SECTION]`
/// headings, `KEY = value` or `KEY: value` lines, `#` and `;` comment lines, an indented line
/// continuing the value above it; keys upper-cased, values trimmed (never unquoted); a later key
/// wins. A line that is none of those is an error naming it.
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut values = BTreeMap::new();
    let mut last: Option<String> = None;
    let mut in_section = false;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if let Some(value) = last.as_ref().and_then(|key| values.get_mut(key)) {
                let value: &mut String = value;
                value.push('\n');
                value.push_str(trimmed);
                continue;
            }
        }
        if trimmed.starts_with('[') && trimmed.ends_with(']') {
            (in_section, last) = (true, None);
            continue;
        }
        let split = trimmed.find(['=', ':']);
        let Some((key, value)) = split.map(|at| (&trimmed[..at], &trimmed[at + 1..])) else {
            return Err(format!("line {}: not KEY = value: {trimmed:?}", number + 1));
        };
        if !in_section {
            return Err(format!(
                "line {}: a setting before any [SECTION]",
                number + 1
            ));
        }
        let key = key.trim().to_uppercase();
        values.insert(key.clone(), value.trim().to_string());
        last = Some(key);
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_is_one_flat_set_of_upper_case_keys() {
        let text = "\
# Written by ArchiveBox
[SERVER_CONFIG]
SECRET_KEY = abc

[ARCHIVING_CONFIG]
timeout = 120
USER_AGENT = Mozilla/5.0 (X11) = quoted 'as is'
; a comment
CHROME_ARGS = --a
    --b
[PLUGINS]
WGET_ENABLED: False
TIMEOUT = 90
";
        let values = parse(text).unwrap();
        assert_eq!(values["TIMEOUT"], "90", "a later key wins");
        assert_eq!(values["USER_AGENT"], "Mozilla/5.0 (X11) = quoted 'as is'");
        assert_eq!(values["CHROME_ARGS"], "--a\n--b");
        assert_eq!(values["WGET_ENABLED"], "False");
        assert_eq!(values["SECRET_KEY"], "abc");
    }

    #[test]
    fn a_file_that_is_not_archiveboxs_is_named_and_none_is_none() {
        assert!(parse("TIMEOUT = 1\n")
            .unwrap_err()
            .contains("before any [SECTION]"));
        assert!(parse("[A]\njust words\n").unwrap_err().contains("line 2"));
        let dir = tempfile::tempdir().unwrap();
        let none = CollectionSettings::read(Some(dir.path()));
        assert!(none.values.is_empty() && none.unreadable.is_none());
        std::fs::write(dir.path().join(FILE), "oops\n").unwrap();
        let bad = CollectionSettings::read(Some(dir.path()));
        assert!(bad.unreadable.unwrap().contains(FILE));
        assert_eq!(
            CollectionSettings::read(None),
            CollectionSettings::default()
        );
    }
}
