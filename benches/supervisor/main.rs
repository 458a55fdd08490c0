//! abxd's benchmarks: each figure is printed next to a baseline measured in the same run, as a
//! ratio, so the numbers mean something on a noisy shared machine. Nothing here asserts a time.
//!
//! `cargo bench` runs the full sizes; `ABXD_BENCH_SMOKE=1 cargo bench` runs small sizes, only
//! to check that every benchmark runs (CI does that); `ABXD_BENCH_ONLY=2,4` runs some of them
//! only (to profile one). See BENCHMARKS.md.
//!
//! One file per benchmark (`hooks` 1, `teardown` 2, `ps` 3, `recovery` 4, `idle` 5, `database`
//! 6, `busy_host` 7, `scale` 8, `fleet` 9, `web` 10, `egress` 11, `library` 12, `durable` 13);
//! `harness` what they share, `procfs` what they read of processes; the daemon they run is the test suite's fixture
//! (`tests/common`). Those that run snapshots at once set `memory_floor = 0`: they measure
//! supervision, and admission would run each crawl's first snapshot alone to learn what one
//! costs (`benches/realsite_budget.py` measures admission).

/// The test suite's fixtures: its daemon, and its throwaway PostgreSQL cluster (benchmark 9).
#[path = "../../tests/common/mod.rs"]
mod common;

mod busy_host;
mod database;
mod durable;
mod egress;
mod fleet;
mod harness;
mod hooks;
mod idle;
mod library;
mod politeness;
mod procfs;
mod ps;
mod recovery;
mod scale;
mod teardown;
mod web;

use busy_host::busy_host;
use database::database_under_load;
use durable::durable_commits;
use egress::egress_cost;
use fleet::fleet;
use harness::{sizes, Figures, Sizes, SCRATCH};
use hooks::hook_throughput;
use idle::idle_cost;
use library::library;
use ps::ps_at_scale;
use recovery::recovery_at_scale;
use scale::scale;
use teardown::teardown;
use web::web_view;

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not run this harness at all.
    let s = sizes();
    println!(
        "abxd benchmarks ({} sizes)",
        if s.hooks < 100 { "smoke" } else { "full" }
    );
    // ABXD_BENCH_ONLY=2,4 runs benchmarks 2 and 4 only (for profiling one of them).
    let only: Option<Vec<u32>> = std::env::var("ABXD_BENCH_ONLY")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect());
    let mut figures = Figures::default();
    for round in 1..=s.rounds {
        eprintln!("round {round} of {}", s.rounds);
        let benches: [fn(&Sizes, &mut Figures); 7] = [
            hook_throughput,
            teardown,
            ps_at_scale,
            recovery_at_scale,
            idle_cost,
            database_under_load,
            busy_host,
        ];
        for (number, bench) in (1..).zip(benches) {
            if only.as_ref().is_none_or(|only| only.contains(&number)) {
                bench(&s, &mut figures);
            }
        }
        if only.as_ref().is_none_or(|only| only.contains(&9)) {
            fleet(&s, &mut figures);
        }
        if only.as_ref().is_none_or(|only| only.contains(&10)) {
            web_view(&s, &mut figures);
        }
        if only.as_ref().is_none_or(|only| only.contains(&11)) {
            egress_cost(&s, &mut figures);
        }
        if only.as_ref().is_none_or(|only| only.contains(&13)) {
            durable_commits(&s, &mut figures);
        }
        if only.as_ref().is_none_or(|only| only.contains(&14)) {
            politeness::politeness_cost(&s, &mut figures);
            politeness::politeness_seen(&s, &mut figures);
        }
    }
    // (Once: it runs for minutes.)
    if only.as_ref().is_none_or(|only| only.contains(&8)) {
        scale(&s, &mut figures);
    }
    if only.as_ref().is_none_or(|only| only.contains(&12)) {
        library(&s, &mut figures);
    }
    println!(
        "median (min–max, n samples) over {} rounds (benchmarks 8 and 12: one run):",
        s.rounds
    );
    figures.print();
    // (Statics are never dropped: the files go now.)
    if let Some(root) = SCRATCH.get() {
        let _ = std::fs::remove_dir_all(root.path());
    }
}
