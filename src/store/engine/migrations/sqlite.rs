//! The SQLite schema's migrations, in order: the schema at version N is what applying the first N
//! gives (`super::migrate_to`). PostgreSQL's are in `postgres` (a baseline, then the same steps).

/// Each entry takes the schema from version `index` to version `index + 1`: `sqlite/NN.sql` takes
/// it to version NN, its first lines saying why.
pub(super) const MIGRATIONS: &[&str] = &[
    include_str!("sqlite/01.sql"),
    include_str!("sqlite/02.sql"),
    include_str!("sqlite/03.sql"),
    include_str!("sqlite/04.sql"),
    include_str!("sqlite/05.sql"),
    include_str!("sqlite/06.sql"),
    include_str!("sqlite/07.sql"),
    include_str!("sqlite/08.sql"),
    include_str!("sqlite/09.sql"),
    include_str!("sqlite/10.sql"),
    include_str!("sqlite/11.sql"),
    include_str!("sqlite/12.sql"),
    include_str!("sqlite/13.sql"),
    include_str!("sqlite/14.sql"),
    include_str!("sqlite/15.sql"),
    include_str!("sqlite/16.sql"),
    include_str!("sqlite/17.sql"),
    include_str!("sqlite/18.sql"),
    include_str!("sqlite/19.sql"),
    include_str!("sqlite/20.sql"),
    include_str!("sqlite/21.sql"),
    include_str!("sqlite/22.sql"),
    include_str!("sqlite/23.sql"),
    include_str!("sqlite/24.sql"),
    include_str!("sqlite/25.sql"),
    include_str!("sqlite/26.sql"),
    include_str!("sqlite/27.sql"),
    include_str!("sqlite/28.sql"),
    include_str!("sqlite/29.sql"),
    include_str!("sqlite/30.sql"),
    include_str!("sqlite/31.sql"),
    include_str!("sqlite/32.sql"),
];
