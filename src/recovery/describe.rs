//! What recovery does, in words: one line per action, as `abxd recover --dry-run` prints them
//! and the daemon logs them.

use super::{Reconciliation, WorkPlan};

/// One line per action, as `abxd recover --dry-run` prints them and the daemon logs them.
pub fn describe(reconciliation: &Reconciliation, work: &WorkPlan) -> Vec<String> {
    let mut lines = Vec::new();
    for lost in &reconciliation.lost {
        let pid = lost.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        lines.push(format!("mark row {}{pid} lost: {}", lost.row, lost.why));
    }
    for orphan in &reconciliation.orphans {
        let pids: Vec<String> = orphan.pids.iter().map(i32::to_string).collect();
        lines.push(format!(
            "tear down orphan tree of row {}: pids {}",
            orphan.row,
            pids.join(" ")
        ));
    }
    for hidden in &reconciliation.hidden {
        let process = &hidden.process;
        let what = format!(
            "pid {} ({}): abxd's user, environment unreadable",
            process.identity.pid,
            process.argv.join(" ")
        );
        lines.push(match hidden.hook {
            Some(row) => format!("{what}; in the process group of hook row {row}: tear it down"),
            None => format!("{what}; no row names it: left alone, unknown"),
        });
    }
    for id in &work.retry_results {
        lines.push(format!(
            "requeue result {id}: its worker ended before recording it"
        ));
    }
    for (id, attempts) in &work.fail_results {
        lines.push(format!("fail result {id}: interrupted {attempts} times"));
    }
    for id in work.seal_snapshots.iter().map(|c| c.id) {
        lines.push(format!("seal snapshot {id}: all its results are final"));
    }
    for id in work.requeue_snapshots.iter().map(|c| c.id) {
        lines.push(format!("requeue snapshot {id}"));
    }
    for id in work.seal_crawls.iter().map(|c| c.id) {
        lines.push(format!("seal crawl {id}: all its snapshots are sealed"));
    }
    for id in work.requeue_crawls.iter().map(|c| c.id) {
        lines.push(format!("requeue crawl {id}"));
    }
    lines
}
