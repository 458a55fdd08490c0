//! A crawl's page in the web view: where it stands, its first failures, and its snapshots a page
//! at a time, with links to the pages around it (`/crawl/ID/page/N`).
//!
//! Invariant: as every page, text from outside passes through `page::escape`; what it shows was
//! read a page at a time (`view::crawl`), never the whole crawl.

use super::page::{duration, escape};
use super::route::View;
use super::view::CrawlData;
use crate::domain::WorkStatus;
use crate::render;
use std::fmt::Write;

/// A crawl's live part: where it stands and its snapshots.
pub fn crawl_live(data: &CrawlData, now_ms: i64) -> String {
    let crawl = &data.crawl;
    let mut out = format!(
        "<h2>Crawl {id}</h2>\n<p>{state} · depth {depth} · {sealed}/{total} snapshots sealed · \
         {results} · {age} old</p>\n<p class=\"url\">{urls}</p>\n",
        id = crawl.id,
        state = escape(&render::crawl_status(crawl)),
        depth = crawl.max_depth,
        sealed = data.counts.sealed_snapshots,
        total = data.counts.snapshots,
        results = escape(&data.counts.results_text()),
        age = duration(now_ms - crawl.created_at),
        urls = escape(&render::seeds_line(crawl)),
    );
    if !data.failed.is_empty() {
        out.push_str(
            "<h3 id=\"failed\">Failed</h3>\n<table id=\"failures\"><thead><tr><th>HOOK</th>\
             <th>WHERE</th><th>OUTPUT</th></tr></thead><tbody>\n",
        );
        for result in &data.failed {
            let place = match result.snapshot_id {
                Some(id) => format!("<a href=\"/snapshot/{id}\">snapshot {id}</a>"),
                None => "the crawl".into(),
            };
            let _ = writeln!(
                out,
                "<tr class=\"failed\"><td>{hook}</td><td>{place}</td><td class=\"output\">{output}\
                 </td></tr>",
                hook = escape(&result.hook),
                output = escape(result.output.as_deref().unwrap_or("")),
            );
        }
        out.push_str("</tbody></table>\n");
        if data.counts.failed > data.failed.len() {
            let _ = writeln!(
                out,
                "<p class=\"more\">the first {} of {} failed (all: <code>abxctl show {} --status \
                 failed</code>)</p>",
                data.failed.len(),
                data.counts.failed,
                crawl.id
            );
        }
        out.push_str("<h3>Snapshots</h3>\n");
    }
    out.push_str(
        "<table id=\"snapshots\"><thead><tr><th>ID</th><th>STATE</th><th>DEPTH</th>\
         <th>URL</th></tr></thead><tbody>\n",
    );
    for snapshot in &data.snapshots {
        let state = match (snapshot.status, snapshot.ended_by) {
            (WorkStatus::Sealed, Some(limit)) => format!("sealed ({limit})"),
            (status, _) => status.to_string(),
        };
        let _ = writeln!(
            out,
            "<tr id=\"snapshot-{id}\"><td class=\"num\"><a href=\"/snapshot/{id}\">{id}</a></td>\
             <td>{state}</td><td class=\"num\">{depth}</td><td class=\"url\">{url}</td></tr>",
            id = snapshot.id,
            state = escape(&state),
            depth = snapshot.depth,
            url = escape(&snapshot.url),
        );
    }
    out.push_str("</tbody></table>\n");
    pager(data, &mut out);
    out
}

/// Which snapshots a crawl's page holds, with links to the pages before and after it (only
/// when the crawl has more than one).
fn pager(data: &CrawlData, out: &mut String) {
    if data.page == 1 && !data.more {
        return;
    }
    let id = data.crawl.id;
    let first = (data.page - 1) * u64::from(super::view::CRAWL_PAGE) + 1;
    let held = data.snapshots.len() as u64;
    let mut links = String::new();
    if data.page > 1 {
        let previous = View::Crawl(id, data.page - 1).path();
        let _ = write!(
            links,
            " · <a rel=\"prev\" href=\"{previous}\">page {}</a>",
            data.page - 1
        );
    }
    if data.more {
        let next = View::Crawl(id, data.page + 1).path();
        let _ = write!(
            links,
            " · <a rel=\"next\" href=\"{next}\">page {}</a>",
            data.page + 1
        );
    }
    let shown = match held {
        0 => "no snapshots on this page".to_string(),
        _ => format!(
            "snapshots {first}–{} of {}",
            first + held - 1,
            data.counts.snapshots
        ),
    };
    let _ = writeln!(out, "<p class=\"pager\">{shown}{links}</p>");
}
