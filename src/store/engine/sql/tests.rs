use super::postgres::{placeholders, transaction_control, Control};
use super::*;

#[test]
fn placeholders_become_postgres_ones_outside_literals_and_names() {
    assert_eq!(
        placeholders("SELECT ?1, ?2 FROM t WHERE a = ?1 AND b = '?3' AND \"c?\" = ?"),
        "SELECT $1, $2 FROM t WHERE a = $1 AND b = '?3' AND \"c?\" = $3"
    );
    assert_eq!(placeholders("-- ?1\nSELECT ?"), "-- ?1\nSELECT $1");
    assert_eq!(placeholders("SELECT 'it''s ?'"), "SELECT 'it''s ?'");
}

#[test]
fn transaction_control_is_told_from_savepoints() {
    assert_eq!(transaction_control("BEGIN IMMEDIATE"), Some(Control::Begin));
    assert_eq!(transaction_control("commit"), Some(Control::End));
    assert_eq!(transaction_control("ROLLBACK"), Some(Control::End));
    assert_eq!(
        transaction_control("ROLLBACK TO write"),
        Some(Control::Savepoint)
    );
    assert_eq!(
        transaction_control("RELEASE write"),
        Some(Control::Savepoint)
    );
    assert_eq!(transaction_control("SELECT 1"), None);
}

#[test]
fn a_value_reads_back_as_what_it_was() {
    let row = Row(vec![
        Value::from(7_i64),
        Value::from(true),
        Value::from("x"),
        Value::from(None::<i64>),
        Value::from(u32::MAX),
    ]);
    assert_eq!(row.get::<i64>(0).unwrap(), 7);
    assert!(row.get::<bool>(1).unwrap());
    assert_eq!(row.get::<String>(2).unwrap(), "x");
    assert_eq!(row.get::<Option<i64>>(3).unwrap(), None);
    assert_eq!(row.get::<u32>(4).unwrap(), u32::MAX);
    let wrong = row.get::<i64>(2).unwrap_err().to_string();
    assert_eq!(wrong, "column 2: expected an integer, found text");
    assert!(
        row.get::<Option<i64>>(9).is_err(),
        "a missing column is no NULL"
    );
}

#[test]
fn sqlite_runs_statements_and_transactions() {
    let db = Db::Sqlite(rusqlite::Connection::open_in_memory().unwrap());
    db.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
        .unwrap();
    db.execute(db.dialect().begin_write(), &[]).unwrap();
    assert!(db.in_transaction());
    let id: i64 = db
        .query_one("INSERT INTO t (name) VALUES (?1) RETURNING id", &args!["a"])
        .unwrap()
        .get(0)
        .unwrap();
    db.execute("COMMIT", &[]).unwrap();
    assert!(!db.in_transaction());
    let ids = db.dialect().integers_of_json("?1");
    let rows = db
        .query(
            &format!("SELECT name FROM t WHERE id IN {ids}"),
            &args![format!("[{id}]")],
        )
        .unwrap();
    assert_eq!(rows[0].get::<String>(0).unwrap(), "a");
    assert!(db.query_opt("SELECT 1 WHERE 0", &[]).unwrap().is_none());
}

#[test]
fn a_password_is_never_in_what_may_be_printed() {
    use super::redacted;
    assert_eq!(
        redacted("postgres://abxd:s3cret@db.example:5432/abxd?sslmode=require&password=x"),
        "postgres://abxd@db.example:5432/abxd?sslmode=require"
    );
    assert_eq!(
        redacted("postgresql://abxd@%2Frun%2Fpg/abxd"),
        "postgresql://abxd@%2Frun%2Fpg/abxd"
    );
    assert_eq!(
        redacted("host=/tmp/pg user=abxd password=s3cret dbname=abxd"),
        "host=/tmp/pg user=abxd dbname=abxd"
    );
}

#[test]
fn value_rows_number_every_place_row_after_row() {
    assert_eq!(value_rows(2, 2), "(?1, ?2), (?3, ?4)");
    assert_eq!(value_rows(3, 1), "(?1, ?2, ?3)");
}
