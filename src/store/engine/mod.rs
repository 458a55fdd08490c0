//! The engine under the store: one connection to SQLite or PostgreSQL (`sql`), its schema
//! (`migrations`), transactions (`transaction`), waiting for another writer's lock (`busy`), and
//! how a store is opened on a file (`open`) or at a location (`location`), the file itself
//! (`file`), whether it is whole (`health`), and what can be read of one that is not
//! (`recover`).
//!
//! Invariant: nothing above the engine writes SQL that depends on which engine runs it: what
//! differs between the two is said once, in `sql::Dialect`.

pub mod busy;
pub mod durable;
pub mod file;
pub mod health;
pub mod location;
pub mod migrations;
pub mod open;
pub mod outbox;
pub mod recover;
pub mod sql;
pub mod transaction;
