//! The database file under the daemon's feet: deleted or replaced while the daemon holds it open.
//!
//! Invariant: once the file at `paths.database` is no longer the one the daemon opened, the daemon
//! claims nothing and accepts no crawl (saying why), keeps supervising what runs, and keeps what
//! it recorded: a copy of the open database is saved beside the path at once and again at a clean
//! stop, and the operator is told how to put it back. (A deleted file cannot be linked back into
//! place; its content can be copied out while it is open.)
//!
//! Also here: what the daemon tries again after the store failed (a full disk, a busy database),
//! and the write-ahead log does not stay large. A long reader (a backup, an operator's
//! query) keeps SQLite from restarting the log, which then grows; once no crawl worker runs, the
//! daemon truncates a log over [`WAL_KEEP_BYTES`], trying again every [`WAL_RETRY`] while
//! something is in the way — and sets no timer otherwise.

use super::State;
use crate::recovery;
use crate::store::{StoreError, WAL_KEEP_BYTES};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long the daemon waits before it claims again after the store failed (e.g. a full disk).
const STORE_RETRY: Duration = Duration::from_secs(2);

/// How often an idle daemon tries again to truncate a large write-ahead log.
pub(super) const WAL_RETRY: Duration = Duration::from_secs(5);

/// Why the daemon stopped taking work, and where what it recorded is saved.
#[derive(Debug, Clone)]
pub(super) struct Lost {
    pub why: String,
    pub saved: PathBuf,
}

impl Lost {
    /// What `add` and `status` say.
    pub fn explain(&self) -> String {
        format!(
            "{}: abxd takes no new work and keeps supervising what runs. Everything it recorded \
             is saved in {}; to go on, stop abxd, move that file to the database path, and \
             start abxd again (or start it without the file to begin a new database)",
            self.why,
            self.saved.display()
        )
    }
}

impl State {
    /// Checks that the database file is still the one opened; the first time it is not, saves
    /// a copy of what is recorded and stops taking work.
    pub(super) fn check_database(&mut self) {
        if self.database_lost.is_some() {
            return;
        }
        let (Some(why), Some(file)) = (self.store.file().gone(), self.config.database.file())
        else {
            return;
        };
        let saved = saved_path(file);
        let lost = Lost { why, saved };
        log::error!("{}", lost.explain());
        self.save_database(&lost);
        self.database_lost = Some(lost);
    }

    /// When idle (no crawl worker runs), truncates a write-ahead log grown over
    /// [`WAL_KEEP_BYTES`]; returns when to try again if a reader or writer was in the way.
    pub(super) fn keep_wal_small(&mut self) -> Option<Instant> {
        if !self.crawls.is_idle() || self.database_lost.is_some() {
            return None;
        }
        let size = self.store.file().wal_bytes();
        if size <= WAL_KEEP_BYTES {
            return None;
        }
        match self.store.file().truncate_wal() {
            Ok(true) => {
                log::info!("write-ahead log truncated (it had grown to {size} bytes)");
                None
            }
            Ok(false) | Err(_) => Some(Instant::now() + WAL_RETRY),
        }
    }

    /// Saves (again) what the open database holds to where [`Lost`] says: at once, and at a
    /// clean stop so that what was recorded since is kept too.
    pub(super) fn save_database(&self, lost: &Lost) {
        match self.store.file().save_copy(&lost.saved) {
            Ok(()) => log::info!("database saved to {}", lost.saved.display()),
            Err(err) => log::error!(
                "cannot save the database to {}: {err}; what was recorded is lost when abxd stops",
                lost.saved.display()
            ),
        }
    }
}

/// `<database>.saved` beside the database's path.
fn saved_path(database: &std::path::Path) -> PathBuf {
    let mut name = database.file_name().unwrap_or_default().to_os_string();
    name.push(".saved");
    database.with_file_name(name)
}

impl State {
    /// Recovers ownerless work (of one crawl, or all); on a store failure, tries again later.
    pub(super) fn recover(&mut self, crawl: Option<i64>, back_off: bool) {
        let result = recovery::recover_ownerless(&self.store, &self.config, crawl, back_off)
            .and_then(|()| self.store.exports().requeue_abandoned().map(drop));
        self.retry_later_on(result, Retry::Recovery);
    }

    /// After a store failure, looks again a little later: an idle daemon otherwise waits for an
    /// event that may not come. The busy database is tried again when the store's back-off
    /// ends; another failure (e.g. a full disk) after [`STORE_RETRY`].
    pub(super) fn retry_later_on(&mut self, result: Result<(), StoreError>, what: Retry) {
        if let Err(err) = result {
            let name = match what {
                Retry::Claims => "claiming crawls",
                Retry::Recovery => "recovery",
            };
            let at = if err.is_busy() {
                log::debug!("{name}: {err}; trying again soon");
                self.store.outbox().next_try()
            } else {
                log::error!(
                    "{name} failed: {err}; trying again in {}s",
                    STORE_RETRY.as_secs()
                );
                Instant::now() + STORE_RETRY
            };
            self.retry_recovery |= what == Retry::Recovery;
            self.retry_claims_at = Some(self.retry_claims_at.map_or(at, |was| was.min(at)));
        }
    }
}

/// What failed and is tried again after [`STORE_RETRY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retry {
    Claims,
    Recovery,
}
