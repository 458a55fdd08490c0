//! `abxctl find URL`, for people: every snapshot of a URL — its crawl, its status, when it was
//! archived, where its files are.

use super::table::Table;
use crate::printable;
use crate::store::Snapshot;
use std::path::Path;

/// The snapshots of `url` as a table, oldest first; saying so when there is none.
pub fn found_table(data_dir: &Path, url: &str, snapshots: &[Snapshot]) -> String {
    if snapshots.is_empty() {
        return format!("no snapshot of {}\n", printable::line(url));
    }
    let mut table = Table::new(["CRAWL", "SNAPSHOT", "STATUS", "DEPTH", "ARCHIVED", "DIR"]);
    for snapshot in snapshots {
        let archived = snapshot.sealed_at.map_or("-".into(), super::local_moment);
        let dir = crate::hooks::snapshot_dir(data_dir, snapshot.crawl_id, snapshot.id);
        table.add_row([
            snapshot.crawl_id.to_string(),
            snapshot.id.to_string(),
            snapshot.status.to_string(),
            snapshot.depth.to_string(),
            archived,
            printable::line(&dir.display().to_string()).into_owned(),
        ]);
    }
    let mut out = String::new();
    table.render_into(&mut out, "");
    out
}
