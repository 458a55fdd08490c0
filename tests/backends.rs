//! The store's SQL on both engines: the same statements, values and transactions on the embedded
//! SQLite file and on a real PostgreSQL server (a throwaway cluster started by the test).

mod common;

use abxd::args;
use abxd::store::sql::{Db, Value};
use common::postgres::Postgres;

/// Both engines, each with a fresh database: SQLite in a temp dir, PostgreSQL in a throwaway
/// cluster (kept alive as long as the returned guard).
fn engines() -> (tempfile::TempDir, Option<Postgres>, Vec<Db>) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = rusqlite::Connection::open(dir.path().join("abxd.sqlite3")).unwrap();
    let mut dbs = vec![Db::Sqlite(sqlite)];
    let server = Postgres::start();
    if let Some(server) = &server {
        dbs.push(Db::connect_postgres(&server.url()).unwrap());
    }
    (dir, server, dbs)
}

#[test]
fn values_statements_and_transactions_are_the_same_on_both_engines() {
    let (_dir, _server, dbs) = engines();
    for db in &dbs {
        let engine = format!("{:?}", db.dialect());
        db.execute_batch(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, n BIGINT, flag BIGINT NOT NULL);
             CREATE TABLE u (k TEXT PRIMARY KEY, v TEXT)",
        )
        .unwrap();
        // A value crosses and comes back unchanged, NULL included.
        for (id, name, n) in [(1_i64, Some("a"), Some(-5_i64)), (2, None, None)] {
            db.execute(
                "INSERT INTO t (id, name, n, flag) VALUES (?1, ?2, ?3, ?4)",
                &args![id, name, n, id == 1],
            )
            .unwrap();
        }
        let row = db
            .query_one("SELECT name, n, flag FROM t WHERE id = ?1", &args![1_i64])
            .unwrap();
        assert_eq!(
            row.get::<Option<String>>(0).unwrap().as_deref(),
            Some("a"),
            "{engine}"
        );
        assert_eq!(row.get::<Option<i64>>(1).unwrap(), Some(-5), "{engine}");
        assert!(row.get::<bool>(2).unwrap(), "{engine}");
        let row = db
            .query_one("SELECT name, n FROM t WHERE id = ?1", &args![2_i64])
            .unwrap();
        assert_eq!(row.get::<Option<String>>(0).unwrap(), None, "{engine}");
        // A placeholder used twice, one given as NULL, and `?N IS NULL OR …` (where nothing
        // says its type before `IS NULL`, a CAST must: PostgreSQL types placeholders first).
        let found = db
            .query(
                "SELECT id FROM t WHERE (CAST(?1 AS BIGINT) IS NULL OR id = ?1) ORDER BY id",
                &args![None::<i64>],
            )
            .unwrap();
        assert_eq!(found.len(), 2, "{engine}");
        // A list of ids of any length.
        let ids = db.dialect().integers_of_json("?1");
        let changed = db
            .execute(
                &format!("UPDATE t SET n = 0 WHERE id IN {ids}"),
                &args!["[1, 2, 3]"],
            )
            .unwrap();
        assert_eq!(changed, 2, "{engine}");
        // Upsert and RETURNING.
        for v in ["x", "y"] {
            db.execute(
                "INSERT INTO u (k, v) VALUES ('key', ?1) ON CONFLICT(k) DO UPDATE SET v = ?1",
                &args![v],
            )
            .unwrap();
        }
        let v: String = db
            .query_one("UPDATE u SET v = v || '!' WHERE k = 'key' RETURNING v", &[])
            .unwrap()
            .get(0)
            .unwrap();
        assert_eq!(v, "y!", "{engine}");
        // A transaction with a savepoint rolled back: only what was released stays.
        db.execute(db.dialect().begin_write(), &[]).unwrap();
        assert!(db.in_transaction(), "{engine}");
        db.execute("SAVEPOINT write", &[]).unwrap();
        db.execute("INSERT INTO t (id, flag) VALUES (3, 0)", &[])
            .unwrap();
        db.execute("RELEASE write", &[]).unwrap();
        db.execute("SAVEPOINT write", &[]).unwrap();
        // (A failed statement inside: PostgreSQL aborts until the savepoint is rolled back.)
        assert!(db
            .execute("INSERT INTO t (id, flag) VALUES (3, 0)", &[])
            .is_err());
        db.execute("ROLLBACK TO write", &[]).unwrap();
        db.execute("RELEASE write", &[]).unwrap();
        db.execute("COMMIT", &[]).unwrap();
        assert!(!db.in_transaction(), "{engine}");
        let count: i64 = db
            .query_one("SELECT count(*) FROM t", &[])
            .unwrap()
            .get(0)
            .unwrap();
        assert_eq!(count, 3, "{engine}");
        // A type error names the column, in words.
        let err = db
            .query_one("SELECT name FROM t WHERE id = 1", &[])
            .unwrap()
            .get::<i64>(0)
            .unwrap_err();
        assert_eq!(err.to_string(), "column 0: expected an integer, found text");
        let _ = Value::Null;
    }
}
