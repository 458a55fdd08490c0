//! Benchmark 3: `abxctl ps` on a large table.

use crate::harness::*;
use abxd::store::Store;
use std::process::{Command, Stdio};
use std::time::Instant;

/// (3) `abxctl ps` on a big table (1% running, trees several levels deep), against
/// `abxctl --version`: process start included.
pub(crate) fn ps_at_scale(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let config = config_in(dir.path(), "");
    std::fs::create_dir_all(&config.data_dir).unwrap();
    drop(Store::open_at(&config.database).unwrap());
    let conn = rusqlite::Connection::open(config.database.file().unwrap()).unwrap();
    conn.execute_batch("BEGIN").unwrap();
    let boot = abxd::identity::boot_id();
    for id in 1..=s.ps_rows as i64 {
        // Trees four levels deep: every row's parent is the row a quarter of its id below it.
        let parent = (id > 4).then_some(id / 4);
        let running = id % 100 == 0;
        conn.execute(
            "INSERT INTO processes (id, parent_id, kind, pid, boot_id, start_ticks, pgid, argv, \
             cwd, status, created_at, started_at, ended_at, exit_code, end_reason) \
             VALUES (?1, ?2, 'hook', ?3, ?4, ?1, ?3, '[\"bench\",\"hook\"]', '/', ?5, 0, 0, ?6, ?7, ?8)",
            rusqlite::params![
                id,
                parent,
                (id % 30000 + 2) as i32,
                boot,
                if running { "running" } else { "exited" },
                (!running).then_some(1i64),
                (!running).then_some(0),
                (!running).then_some("exited"),
            ],
        )
        .unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
    let abxctl = bin("abxctl");
    let time = |args: &[&str]| -> Vec<f64> {
        (0..s.ps_runs)
            .map(|_| {
                let started = Instant::now();
                let out = Command::new(&abxctl)
                    .arg("--config")
                    .arg(&config.source)
                    .args(args)
                    .stdout(Stdio::null())
                    .status()
                    .unwrap();
                assert!(out.success());
                started.elapsed().as_secs_f64() * 1000.0
            })
            .collect()
    };
    let baseline = median(&mut time(&["--version"]));
    for args in [&["ps"][..], &["ps", "--json"]] {
        for ms in time(args) {
            figures.add(
                &format!(
                    "3 abxctl {} on {} rows, {} running (ms)",
                    args.join(" "),
                    s.ps_rows,
                    s.ps_rows / 100
                ),
                ms,
                Some(("abxctl --version (ms)", baseline)),
            );
        }
    }
}
