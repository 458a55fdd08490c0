//! TLS to PostgreSQL as libpq's `sslmode` and `sslrootcert` ask for it (`config::tls`), against a
//! throwaway server listening with TLS on a loopback port, its certificate made for the test:
//! what each mode accepts and refuses, and a whole crawl whose daemon and workers all connect
//! with `verify-full`.

mod common;

use abxd::args;
use abxd::store::sql::Db;
use common::postgres::Postgres;
use common::{fixtures, plugins_config, TestDaemon};
use std::time::Duration;

/// A server with TLS, or `None` where PostgreSQL is not installed outside CI (said by `start`).
fn server() -> Option<Postgres> {
    Postgres::start_with_tls()
}

/// Whether the session of `db` is encrypted, as the server sees it.
fn encrypted(db: &Db) -> bool {
    let sql = "SELECT CASE WHEN ssl THEN 1 ELSE 0 END FROM pg_stat_ssl \
               WHERE pid = pg_backend_pid()";
    db.query_value::<i64>(sql, &args![]).unwrap() == Some(1)
}

/// What connecting to `url` said when it failed.
fn refusal(url: &str) -> String {
    match Db::connect_postgres(url) {
        Ok(_) => panic!("{url}: connected"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn verify_full_connects_encrypted_when_the_root_signed_the_certificate_and_the_name_matches() {
    let Some(server) = server() else { return };
    let root = server.root_certificate();
    let url = server.tls_url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", root.display()),
    );
    assert!(encrypted(&Db::connect_postgres(&url).unwrap()));
}

#[test]
fn verify_full_refuses_another_root_and_a_name_the_certificate_does_not_carry() {
    let Some(server) = server() else { return };
    let other = server.other_certificate();
    let url = server.tls_url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", other.display()),
    );
    let said = refusal(&url);
    assert!(
        said.contains("invalid peer certificate: UnknownIssuer"),
        "{said}"
    );
    // The certificate is for `localhost`; 127.0.0.1 is not a name it carries.
    let root = server.root_certificate();
    let by_address = |mode: &str| {
        server.tls_url(
            "127.0.0.1",
            &format!("sslmode={mode}&sslrootcert={}", root.display()),
        )
    };
    let said = refusal(&by_address("verify-full"));
    assert!(said.contains("invalid peer certificate"), "{said}");
    assert!(said.contains("not valid for name"), "{said}");
    // verify-ca checks the root only.
    assert!(encrypted(
        &Db::connect_postgres(&by_address("verify-ca")).unwrap()
    ));
}

#[test]
fn require_and_prefer_encrypt_without_checking_and_disable_does_not_encrypt() {
    let Some(server) = server() else { return };
    for mode in ["require", "prefer"] {
        let url = server.tls_url("127.0.0.1", &format!("sslmode={mode}"));
        assert!(encrypted(&Db::connect_postgres(&url).unwrap()), "{mode}");
    }
    // With no mode at all: libpq's default, prefer.
    let url = server.tls_url("127.0.0.1", "connect_timeout=10");
    assert!(encrypted(&Db::connect_postgres(&url).unwrap()));
    let url = server.tls_url("127.0.0.1", "sslmode=disable");
    assert!(!encrypted(&Db::connect_postgres(&url).unwrap()));
    // require with a root named checks it, as libpq does.
    let other = server.other_certificate();
    let url = server.tls_url(
        "127.0.0.1",
        &format!("sslmode=require&sslrootcert={}", other.display()),
    );
    let said = refusal(&url);
    assert!(said.contains("invalid peer certificate"), "{said}");
}

#[test]
fn a_crawl_runs_to_its_end_with_every_connection_verified() {
    if !common::postgres::available() {
        eprintln!("SKIPPED: PostgreSQL is not installed here (apt install postgresql)");
        return;
    }
    let plugins = fixtures().join("plugins");
    let daemon = TestDaemon::start_on("postgres-tls", &plugins_config(&[&plugins]));
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "ok"]);
    daemon.wait_sealed(crawl, Duration::from_secs(90));
    let results = daemon.store().results().of_crawl(crawl).unwrap();
    assert!(!results.is_empty());
    assert!(
        results.iter().all(|r| r.status == "succeeded"),
        "{results:?}"
    );
    // Every worker connected with `verify-full`, which never falls back to a session in clear
    // (else the crawl had not run); the daemon's own sessions, open now, are encrypted.
    let abxd::store::Location::Postgres(server) = daemon.location() else {
        panic!("a daemon on PostgreSQL")
    };
    let db = Db::connect_postgres(&server.url).unwrap();
    let clear: Option<i64> = db
        .query_value(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid \
             WHERE a.usename = 'abxd' AND a.pid != pg_backend_pid() AND NOT s.ssl",
            &args![],
        )
        .unwrap();
    assert_eq!(clear, Some(0));
    let encrypted_sessions: Option<i64> = db
        .query_value(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid \
             WHERE a.usename = 'abxd' AND a.pid != pg_backend_pid() AND s.ssl",
            &args![],
        )
        .unwrap();
    assert!(encrypted_sessions >= Some(1), "the daemon has no session");
}
