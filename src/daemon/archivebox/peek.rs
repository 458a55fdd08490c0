//! A look at an ArchiveBox collection's queue from abxd itself, read-only: whether a turn has
//! anything to do there when abxd holds nothing — a due Crawl, or a due Snapshot (queued again
//! alone: a redo from ArchiveBox's UI). A turn costs ArchiveBox's
//! start-up (seconds of CPU); this look costs a query.
//!
//! Invariants: it never writes ArchiveBox's database, and never waits for its lock (a database
//! it cannot read now is one a turn should look at); what it cannot tell, it answers "look".

use std::path::Path;
use std::time::Duration;

/// How often ArchiveBox's side runs when this look finds nothing for it: for the schedules (a
/// cron schedule comes due at most once a minute), and to keep abxd's runner row ahead of any
/// ArchiveBox runner (`serve_queue.py`: it is kept created a day ahead).
pub(super) const IDLE_EVERY: Duration = Duration::from_secs(60);

/// What the collection's queue holds, as far as a turn is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Waiting {
    /// A Crawl or a Snapshot is due (queued or started, or sealed with plugins to run again:
    /// its `retry_at` passed), or it could not be told.
    pub due: bool,
}

/// Looks at the collection's `index.sqlite3` (ArchiveBox keeps it in WAL mode: a reader never
/// waits for a writer).
pub(super) fn waiting(collection: &Path, now_ms: i64) -> Waiting {
    let unknown = Waiting { due: true };
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let Ok(db) = rusqlite::Connection::open_with_flags(collection.join("index.sqlite3"), flags)
    else {
        return unknown;
    };
    let _ = db.busy_timeout(Duration::ZERO);
    // (Django keeps a UTC moment as text that sorts as it reads: "2026-11-29 01:02:03.456789".)
    let now = jiff::Timestamp::from_millisecond(now_ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S.%6f").to_string())
        .unwrap_or_default();
    let due = db.query_row(
        "SELECT EXISTS (SELECT 1 FROM crawls_crawl WHERE status IN ('queued', 'started') \
         AND retry_at <= ?1) OR EXISTS (SELECT 1 FROM core_snapshot WHERE retry_at <= ?1 \
         AND status IN ('queued', 'started', 'sealed'))",
        [&now],
        |row| row.get::<_, bool>(0),
    );
    Waiting {
        due: due.unwrap_or(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collection(sql: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let db = rusqlite::Connection::open(dir.path().join("index.sqlite3")).unwrap();
        db.execute_batch(
            "CREATE TABLE crawls_crawl (id TEXT, status TEXT, retry_at TEXT);
             CREATE TABLE core_snapshot (id TEXT, status TEXT, retry_at TEXT);",
        )
        .unwrap();
        db.execute_batch(sql).unwrap();
        dir
    }

    /// 2026-11-29 01:02:03 UTC.
    const NOW: i64 = 1_795_914_123_000;

    #[test]
    fn a_due_crawl_is_waiting_and_a_leased_or_sealed_one_is_not() {
        let due = collection(
            "INSERT INTO crawls_crawl VALUES ('a', 'queued', '2026-11-29 01:02:02.999999');",
        );
        assert!(waiting(due.path(), NOW).due);
        let held = collection(
            "INSERT INTO crawls_crawl VALUES ('a', 'started', '2026-11-29 01:03:00.000000'),
                                             ('b', 'sealed', NULL),
                                             ('c', 'paused', '9999-01-01 00:00:00.000000');",
        );
        assert_eq!(waiting(held.path(), NOW), Waiting { due: false });
    }

    #[test]
    fn a_snapshot_queued_again_alone_is_waiting() {
        let redo = collection(
            "INSERT INTO crawls_crawl VALUES ('a', 'sealed', NULL);
             INSERT INTO core_snapshot VALUES ('s', 'sealed', '2026-11-29 01:02:00.000000'),
                                              ('t', 'sealed', NULL);",
        );
        assert!(waiting(redo.path(), NOW).due);
        let done = collection("INSERT INTO core_snapshot VALUES ('t', 'sealed', NULL);");
        assert!(!waiting(done.path(), NOW).due);
    }

    #[test]
    fn what_cannot_be_read_is_looked_at_by_a_turn() {
        let empty = tempfile::tempdir().unwrap();
        assert!(waiting(empty.path(), NOW).due);
    }
}
