//! Whether an SQLite database file is whole: the cheap look the daemon takes before it starts
//! on one (its header, then SQLite's `quick_check` within a time budget), and the whole
//! `integrity_check` of `abxd store check`.
//!
//! Invariants: only reads; a file found damaged is refused with what is wrong and how to
//! recover ([`StoreError::Damaged`]), before anything writes to it — the daemon never starts a
//! crawl on a damaged database, and never "repairs" one in place. The look's decisions (what a
//! header says) are apart from the I/O that reads it.

use crate::store::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long the daemon's start may spend on SQLite's `quick_check`; a larger file than it can
/// check in that time is checked as far as it goes (the header is always read whole), and
/// `abxd store check` checks it all.
pub const QUICK_CHECK_BUDGET: Duration = Duration::from_secs(2);

/// The first bytes of every SQLite 3 database.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// What is wrong with a database file whose first 100 bytes are `header` and whose length is
/// `len`, by its header alone (none: nothing it shows). An empty file is an empty database.
pub fn header_problem(header: &[u8], len: u64) -> Option<String> {
    if len == 0 {
        return None;
    }
    if header.len() < 100 {
        return Some(format!(
            "it is too short to be an SQLite database ({len} bytes, less than its 100-byte header)"
        ));
    }
    if &header[..16] != MAGIC {
        return Some(
            "it is not an SQLite database (it does not begin with SQLite's header)".into(),
        );
    }
    let be16 = |at: usize| u16::from_be_bytes([header[at], header[at + 1]]);
    let be32 = |at: usize| u32::from_be_bytes(header[at..at + 4].try_into().unwrap());
    let page_size: u64 = match be16(16) {
        1 => 65_536,
        size if size.is_power_of_two() && size >= 512 => u64::from(size),
        size => {
            return Some(format!(
                "its header is damaged (a page size of {size} bytes)"
            ))
        }
    };
    // The page count the header holds is valid while its "version valid for" equals its change
    // counter (SQLite's file format, 1.3.7).
    let (pages, valid) = (u64::from(be32(28)), be32(92) == be32(24));
    let expected = pages * page_size;
    if valid && pages > 0 && len < expected {
        return Some(format!(
            "it is truncated: its header counts {pages} pages of {page_size} bytes \
             ({expected} bytes), and the file has {len}"
        ));
    }
    None
}

/// [`header_problem`] of the file at `path`.
pub fn file_header_problem(path: &Path) -> Result<Option<String>, std::io::Error> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut header = Vec::with_capacity(100);
    (&mut file).take(100).read_to_end(&mut header)?;
    Ok(header_problem(&header, len))
}

/// The daemon's look at the database at `path` before it opens it for writing: nothing there
/// (or an empty file) is a database to make; otherwise its header, then SQLite's quick check
/// within [`QUICK_CHECK_BUDGET`], on a read-only connection — which never checkpoints a
/// write-ahead log into the file, so a log that does not belong to it (another database's) is
/// judged before it is ever written in.
pub fn look(path: &Path) -> Result<(), StoreError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > 0 => {}
        _ => return Ok(()),
    }
    if let Some(problem) = file_header_problem(path).map_err(unreadable(path))? {
        return Err(damaged(path, problem));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let open_err = opening(path);
    let conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
    conn.busy_timeout(QUICK_CHECK_BUDGET).map_err(open_err)?;
    match quick_check(&conn, QUICK_CHECK_BUDGET).map_err(open_err)? {
        Some(problem) => Err(damaged(
            path,
            format!("SQLite's quick check found: {problem}"),
        )),
        None => Ok(()),
    }
}

/// What SQLite's `quick_check` finds wrong in `conn`'s database, as far as it gets within
/// `budget` (none: nothing, or nothing yet when the budget ran out).
pub fn quick_check(conn: &Connection, budget: Duration) -> rusqlite::Result<Option<String>> {
    let deadline = Instant::now() + budget;
    conn.progress_handler(10_000, Some(move || Instant::now() > deadline));
    let found = first_problem(conn, "PRAGMA quick_check(20)");
    conn.progress_handler(10_000, None::<fn() -> bool>);
    match found {
        // (Pages so damaged that the check itself stops on them.)
        Err(err) if is_damage(&err) => Ok(Some(said(&err))),
        Err(rusqlite::Error::SqliteFailure(err, _))
            if err.code == rusqlite::ErrorCode::OperationInterrupted =>
        {
            log::info!(
                "the database's quick check did not end within {} s: the rest is left to `abxd \
                 store check`",
                budget.as_secs_f64()
            );
            Ok(None)
        }
        found => found,
    }
}

/// Every problem SQLite's `integrity_check` finds in `conn`'s database (empty: none).
pub fn integrity_check(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let said = pragma_lines(conn, "PRAGMA integrity_check(1000)")?;
    Ok(said.into_iter().filter(|line| line != "ok").collect())
}

/// Everything wrong with the SQLite database at `path` (empty: it is whole): what its header
/// shows, else what SQLite's `integrity_check` finds. Reads only.
pub fn check_file(path: &Path) -> Result<Vec<String>, StoreError> {
    if super::file::not_a_link(path)?.is_none() {
        return Err(StoreError::Missing {
            path: path.to_path_buf(),
        });
    }
    if let Some(problem) = file_header_problem(path).map_err(unreadable(path))? {
        return Ok(vec![problem]);
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let checked = Connection::open_with_flags(path, flags).and_then(|conn| integrity_check(&conn));
    match checked {
        Ok(problems) => Ok(problems),
        Err(err) if is_damage(&err) => Ok(vec![said(&err)]),
        Err(cause) => Err(StoreError::Open {
            path: path.to_path_buf(),
            cause,
        }),
    }
}

/// The problems `sql` (a check pragma) says, one a line, joined; none if it says `ok`.
fn first_problem(conn: &Connection, sql: &str) -> rusqlite::Result<Option<String>> {
    let said = pragma_lines(conn, sql)?;
    Ok((said != ["ok"]).then(|| said.join("; ")))
}

/// The lines a check pragma `sql` says.
fn pragma_lines(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare(sql)?;
    let lines = statement.query_map([], |row| row.get(0))?;
    lines.collect()
}

/// Whether `err` is SQLite saying the file is damaged or no database: what a look at a file
/// turns into [`StoreError::Damaged`], not a plain error.
pub fn is_damage(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// The refusal of the damaged database at `path`: `what` is wrong with it.
pub fn damaged(path: &Path, what: impl Into<String>) -> StoreError {
    StoreError::Damaged {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

/// What an SQLite error met opening `path` is: damage, said as such, or another failure.
pub fn opening(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + Copy + '_ {
    move |cause| match is_damage(&cause) {
        true => damaged(path, said(&cause)),
        false => StoreError::Open {
            path: path.to_path_buf(),
            cause,
        },
    }
}

/// A file at `path` that could not be read to be looked at.
pub fn unreadable(path: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |cause| StoreError::Copy(format!("cannot read {}: {cause}", path.display()))
}

/// What SQLite said, without rusqlite's own words ("Error code 11: …").
pub fn said(err: &rusqlite::Error) -> String {
    match err {
        rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
        rusqlite::Error::SqliteFailure(err, None) => {
            rusqlite::ffi::code_to_str(err.extended_code).to_string()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(page_size: u16, pages: u32, counter: u32, valid_for: u32) -> Vec<u8> {
        let mut header = vec![0u8; 100];
        header[..16].copy_from_slice(MAGIC);
        header[16..18].copy_from_slice(&page_size.to_be_bytes());
        header[24..28].copy_from_slice(&counter.to_be_bytes());
        header[28..32].copy_from_slice(&pages.to_be_bytes());
        header[92..96].copy_from_slice(&valid_for.to_be_bytes());
        header
    }

    #[test]
    fn a_header_names_what_is_wrong_with_its_file() {
        // Whole, or empty.
        assert_eq!(header_problem(&header(4096, 3, 7, 7), 3 * 4096), None);
        assert_eq!(header_problem(&header(4096, 3, 7, 7), 5 * 4096), None);
        assert_eq!(header_problem(&[], 0), None);
        // (65 536 is written as 1.)
        assert_eq!(header_problem(&header(1, 2, 1, 1), 2 * 65_536), None);
        // A count the header does not vouch for is not held against the file.
        assert_eq!(header_problem(&header(4096, 9, 8, 7), 4096), None);

        let truncated = header_problem(&header(4096, 3, 7, 7), 4096 + 100).unwrap();
        assert!(truncated.contains("truncated"), "{truncated}");
        assert!(truncated.contains("3 pages of 4096 bytes"), "{truncated}");
        let short = header_problem(b"SQLite", 6).unwrap();
        assert!(short.contains("too short"), "{short}");
        let foreign = header_problem(&[b'x'; 100], 4096).unwrap();
        assert!(foreign.contains("not an SQLite database"), "{foreign}");
        let odd = header_problem(&header(1000, 1, 1, 1), 4096).unwrap();
        assert!(odd.contains("page size of 1000"), "{odd}");
    }
}
