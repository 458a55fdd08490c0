//! Opening the store where the config says it lives (`config::Location`), for each kind of
//! caller: the daemon (creating and migrating), workers and `abxctl add` (an existing store at
//! the latest schema), the views (read-only).
//!
//! Invariant: only the daemon creates or migrates a store; what is shown of a server (errors
//! included) never carries its password.

use crate::config::{Location, Server};
use crate::store::engine::migrations::postgres as pg_migrations;
use crate::store::engine::sql::{self, args, Db};
use crate::store::{Store, StoreError};
use std::path::PathBuf;

/// The first key of the session lock a daemon holds on a PostgreSQL database (`abxD` in
/// ASCII); the second is a hash of its machine id.
const DAEMON_LOCK: i32 = 0x6162_7844;

/// A connection to `server`, or why there is none.
fn connect(server: &Server) -> Result<Db, StoreError> {
    let target = sql::redacted(&server.url);
    let client = server.client().map_err(|why| StoreError::Connect {
        target: target.clone(),
        cause: sql::SqlError::Settings(why),
    })?;
    Db::connect_postgres_with(client).map_err(|cause| StoreError::Connect { target, cause })
}

/// Takes the database for this machine's daemon alone, as long as its connection lives (a
/// PostgreSQL session lock keyed by the machine id, released by the server when the daemon
/// dies, as the data dir's lock file is by the kernel) — before migrating it. Daemons of other
/// machines share the database (a fleet); a second daemon of one machine would take the first
/// one's rows for stale rows of its own, so it is refused.
fn claim_for_this_machine(db: &Db, target: &str) -> Result<(), StoreError> {
    let machine = crate::identity::machine_id();
    let sql = "SELECT CASE WHEN pg_try_advisory_lock(CAST(?1 AS INTEGER), \
               hashtext(CAST(?2 AS TEXT))) THEN 1 ELSE 0 END";
    let got: Option<i64> = db
        .query_value(sql, &args![DAEMON_LOCK, machine])
        .map_err(|cause| StoreError::Connect {
            target: target.to_string(),
            cause,
        })?;
    if got != Some(1) {
        return Err(StoreError::InUse {
            target: target.to_string(),
            machine: machine.to_string(),
        });
    }
    // A session made again after the server closed this one takes the lock again first, or
    // writes nothing. (A machine id is letters, digits and `._-` only: safe in quotes.)
    let again = format!(
        "DO $$ BEGIN IF NOT pg_try_advisory_lock({DAEMON_LOCK}, hashtext('{machine}')) THEN \
         RAISE EXCEPTION 'the database is in use by another abxd daemon of machine {machine}'; \
         END IF; END $$"
    );
    db.on_new_session(&again);
    Ok(())
}

impl Store {
    /// Opens the store for the daemon: a file is created if needed, and either is brought to
    /// the latest schema; a server is refused while another daemon of this machine uses it.
    pub fn open_at(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::File(path) => Store::open(path),
            Location::Postgres(server) => {
                let db = connect(server)?;
                let target = sql::redacted(&server.url);
                claim_for_this_machine(&db, &target)?;
                crate::store::engine::open::migrated_postgres(db, &target)
            }
        }
    }

    /// Connects to the PostgreSQL database `url` names (libpq's URL or key-value form, completed
    /// from the standard environment variables) and brings its schema to the latest version
    /// (creating it in an empty database) — without the daemon's claim: for tests and tools.
    pub fn open_postgres(url: &str) -> Result<Store, StoreError> {
        let server = Server {
            url: url.to_string(),
            password_file: None,
        };
        crate::store::engine::open::migrated_postgres(connect(&server)?, &sql::redacted(url))
    }

    /// Opens an existing store at its latest schema for reading and writing (workers,
    /// `abxctl add`): never creates or migrates one.
    pub fn open_existing_at(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::File(path) => Store::open_existing(path),
            Location::Postgres(server) => existing_postgres(server, false),
        }
    }

    /// Opens an existing store read-only (`abxctl ps` and the other views).
    pub fn open_read_only_at(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::File(path) => Store::open_read_only(path),
            Location::Postgres(server) => existing_postgres(server, true),
        }
    }
}

fn existing_postgres(server: &Server, read_only: bool) -> Result<Store, StoreError> {
    let target = sql::redacted(&server.url);
    let db = connect(server)?;
    let connect_err = |cause| StoreError::Connect {
        target: target.clone(),
        cause,
    };
    if read_only {
        let read_only = "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY";
        db.execute_batch(read_only).map_err(connect_err)?;
        db.on_new_session(read_only);
    }
    let found = pg_migrations::version(&db).map_err(connect_err)?;
    let path = PathBuf::from(&target);
    if found == 0 {
        return Err(StoreError::Missing { path });
    }
    crate::store::engine::open::at_latest(&path, found)?;
    crate::store::engine::open::over_server(db, &target)
}
