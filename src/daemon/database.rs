//! The database file under the daemon's feet: deleted or replaced while the daemon holds it open.
//!
//! Invariant: once the file at `paths.database` is no longer the one the daemon opened, the daemon
//! claims nothing and accepts no crawl (saying why), keeps supervising what runs, and keeps what
//! it recorded: a copy of the open database is saved beside the path at once and again at a clean
//! stop, and the operator is told how to put it back. (A deleted file cannot be linked back into
//! place; its content can be copied out while it is open.)

use super::State;
use std::path::PathBuf;

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
        let Some(why) = self.store.file_gone() else {
            return;
        };
        let saved = saved_path(&self.config.database);
        let lost = Lost { why, saved };
        log::error!("{}", lost.explain());
        self.save_database(&lost);
        self.database_lost = Some(lost);
    }

    /// Saves (again) what the open database holds to where [`Lost`] says: at once, and at a
    /// clean stop so that what was recorded since is kept too.
    pub(super) fn save_database(&self, lost: &Lost) {
        match self.store.save_copy(&lost.saved) {
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
