//! The engine under the store: one connection to SQLite or PostgreSQL (`sql`), its schema
//! (`migrations`), transactions (`transaction`), waiting for another writer's lock (`busy`), and
//! how a store is opened on a file (`open`) or at a location (`location`), and the file itself
//! (`file`).
//!
//! Invariant: nothing above the engine writes SQL that depends on which engine runs it: what
//! differs between the two is said once, in `sql::Dialect`.

pub mod busy;
pub mod file;
pub mod location;
pub mod migrations;
pub mod open;
pub mod outbox;
pub mod sql;
pub mod transaction;
