//! The web view's HTML: one document per page, whose live part (`<main id="live">`) is drawn by
//! the same functions whether the page is loaded or updated through its event stream.
//!
//! Invariant: every text that came from outside abxd — a URL, a title or other hook output, a
//! command line, a log line, a hostname, a file name — passes through [`escape`] (or
//! [`percent_encode`] into a link) before it is part of the page; the page loads only its own
//! script and style (no CDN: `http::PAGE_POLICY` forbids anything else).

use super::http::percent_encode;
use super::route::{Stream, View};
use super::view::{Host, IndexData, SnapshotData, Usage};
use crate::domain::ResultStatus;
use crate::render::{self, PsLook};
use crate::store::ProcessRow;
use std::fmt::Write;

/// `text` safe in HTML text and in a quoted attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A whole page: the header naming the machine, and `live` in the part its stream replaces.
pub fn document(host: &Host, title: &str, view: Option<View>, live: &str) -> String {
    let events = view
        .map(|v| format!(" data-events=\"{}\"", escape(&v.events_path())))
        .unwrap_or_default();
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} · abxd on {hostname}</title>\n\
         <link rel=\"stylesheet\" href=\"/app.css\">\n\
         <script src=\"/app.js\" defer></script>\n</head>\n<body>\n\
         <header><a href=\"/\">abxd</a> on <strong id=\"host\">{hostname}</strong> \
         <span class=\"dim\">machine {machine} · abxd {version}</span> \
         <span id=\"state\" class=\"dim\"></span> <label class=\"dim\" id=\"ended-toggle\">\
         <input type=\"checkbox\" id=\"show-ended\"> ended processes</label></header>\n\
         <main id=\"live\"{events}>\n{live}</main>\n</body>\n</html>\n",
        title = escape(title),
        hostname = escape(&host.hostname),
        machine = escape(&host.machine_id),
        version = escape(host.version),
    )
}

pub(super) fn duration(ms: i64) -> String {
    render::short_duration(ms)
}

fn usage_cells(out: &mut String, usage: Option<&Usage>) {
    let usage = usage.copied().unwrap_or_default();
    let _ = write!(
        out,
        "<td class=\"num\">{}</td><td class=\"num\">{}</td>",
        usage
            .cpu_ms
            .map_or("-".into(), |ms| format!("{:.1}s", ms as f64 / 1000.0)),
        usage.memory_bytes.map_or("-".into(), render::bytes)
    );
}

/// The index's live part, as a person reads it: the crawls first — how far each is, what failed
/// — then the process tree, its ended rows folded away as `abxctl ps` folds them without
/// `--all` (the header's "ended processes" shows them).
pub fn index_live(data: &IndexData, now_ms: i64) -> String {
    let mut out = String::new();
    for (crawl, why) in &data.waits {
        let _ = writeln!(
            out,
            "<p class=\"waits\">crawl {crawl}: new snapshots wait for {}</p>",
            escape(why)
        );
    }
    for host in &data.hosts_waiting {
        let _ = writeln!(
            out,
            "<p class=\"waits\">site {}: {} snapshots queued; {}</p>",
            escape(&host.key),
            host.queued,
            escape(&render::why_site_waits(host))
        );
    }
    crawls_table(&mut out, data, now_ms);
    let shown = (data.entries.iter())
        .filter(|e| !e.row.status.is_live())
        .count();
    let newest = match data.ended {
        ended if ended > shown as u64 => format!("the newest {shown} "),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "<h2>Processes</h2>\n<p class=\"dim\" id=\"folded\">{live} running; {ended} ended in the \
         last minute ({newest}shown with \"ended processes\" above)</p>",
        live = data.entries.len() - shown,
        ended = data.ended,
    );
    if data.entries.is_empty() {
        return out;
    }
    out.push_str(
        "<table id=\"tree\"><thead><tr><th>ID</th><th>PID</th><th>KIND</th><th>STATE</th>\
         <th>AGE</th><th>LEFT</th><th>SIGNALS</th><th>CPU</th><th>MEM</th>\
         <th>COMMAND</th></tr></thead><tbody>\n",
    );
    let look = PsLook {
        daemon_up: true,
        colour: false,
    };
    for line in render::tree_lines(&data.entries) {
        let entry = line.entry;
        let row = &entry.row;
        let mut classes = vec![if row.status.is_live() {
            "live"
        } else {
            "ended"
        }];
        for (flag, name) in [
            (row.escaped, "escaped"),
            (row.leaking, "leaking"),
            (row.unkillable, "unkillable"),
        ] {
            if flag {
                classes.push(name);
            }
        }
        let _ = write!(
            out,
            "<tr id=\"row-{id}\" class=\"{classes}\" data-kind=\"{kind}\" data-status=\"{status}\">\
             <td class=\"num\">{id}</td><td class=\"num\">{pid}</td>\
             <td class=\"kind\">{branch}{kind}</td><td class=\"state\">{state}{flags}</td>",
            id = row.id,
            classes = classes.join(" "),
            kind = row.kind,
            status = row.status,
            pid = row.pid.map_or("-".into(), |p| p.to_string()),
            branch = escape(&line.branch),
            state = escape(&render::status_text(entry, look, now_ms)),
            flags = if row.escaped { " <b class=\"flag\">escaped</b>" } else { "" },
        );
        let age = row.started_at.map_or("-".into(), |start| {
            duration(row.ended_at.unwrap_or(now_ms) - start)
        });
        let mut left = String::new();
        render::write_time_left(&mut left, entry, now_ms);
        let mut signals = String::new();
        render::write_signals(&mut signals, row);
        let _ = write!(
            out,
            "<td class=\"num\">{age}</td><td class=\"num\">{}</td><td>{}</td>",
            escape(&left),
            escape(&signals)
        );
        usage_cells(&mut out, data.usage.get(&row.id));
        let _ = writeln!(out, "<td class=\"cmd\">{}</td></tr>", command_cell(row));
    }
    out.push_str("</tbody></table>\n");
    out
}

/// The latest crawls: each one's state, a bar of its snapshots sealed, what failed (linked to
/// the crawl's page, which links each snapshot's outputs), its age and seeds.
fn crawls_table(out: &mut String, data: &IndexData, now_ms: i64) {
    out.push_str("<h2>Crawls</h2>\n");
    if data.crawls.is_empty() {
        out.push_str("<p class=\"dim\">no crawls</p>\n");
        return;
    }
    out.push_str(
        "<table id=\"crawls\"><thead><tr><th>ID</th><th>STATE</th><th>PROGRESS</th>\
         <th>FAILED</th><th>RESULTS</th><th>AGE</th><th>URLS</th></tr></thead><tbody>\n",
    );
    for (crawl, counts) in &data.crawls {
        let failed = match counts.failed {
            0 => "<span class=\"dim\">none</span>".to_string(),
            n => format!(
                "<a class=\"bad\" href=\"/crawl/{}#failed\">{n} failed</a>",
                crawl.id
            ),
        };
        let _ = writeln!(
            out,
            "<tr id=\"crawl-{id}\"><td class=\"num\"><a href=\"/crawl/{id}\">{id}</a></td>\
             <td>{state}</td><td class=\"progress\"><progress max=\"{total}\" \
             value=\"{sealed}\"></progress> {sealed}/{total}</td><td>{failed}</td>\
             <td>{results}{pending}</td><td class=\"num\">{age}</td>\
             <td class=\"url\">{urls}</td></tr>",
            id = crawl.id,
            state = escape(&render::crawl_status(crawl)),
            sealed = counts.sealed_snapshots,
            total = counts.snapshots.max(counts.sealed_snapshots),
            results = escape(&counts.results_text()),
            pending = match counts.pending {
                0 => String::new(),
                n => format!(", {n} to do"),
            },
            age = duration(now_ms - crawl.created_at),
            urls = escape(&render::seeds_line(crawl)),
        );
    }
    out.push_str("</tbody></table>\n");
}

/// A process's command line on one line (cut where the cell ends), whole when opened, with the
/// links to its logs.
fn command_cell(row: &ProcessRow) -> String {
    let whole = escape(&row.argv.join(" "));
    let mut cell = format!(
        "<details><summary title=\"{whole}\">{whole}</summary><div class=\"whole\">{whole}</div>\
         </details>"
    );
    for (path, stream) in [(&row.stdout_path, "stdout"), (&row.stderr_path, "stderr")] {
        if path.is_some() {
            let _ = write!(
                cell,
                " <a class=\"log\" href=\"/log/{}/{stream}\">{stream}</a>",
                row.id
            );
        }
    }
    cell
}

/// A snapshot's live part: each result with its output, its files (links into the snapshot's
/// directory) and the end of its logs.
pub fn snapshot_live(data: &SnapshotData, logs: &dyn Fn(&ProcessRow) -> Vec<String>) -> String {
    let snapshot = &data.snapshot;
    let mut out = format!(
        "<h2>Snapshot {id}</h2>\n<p><a href=\"/crawl/{crawl}\">crawl {crawl}</a> · {state} · \
         depth {depth}</p>\n<p class=\"url\">{url}</p>\n",
        id = snapshot.id,
        crawl = snapshot.crawl_id,
        state = escape(snapshot.status.as_str()),
        depth = snapshot.depth,
        url = escape(&snapshot.url),
    );
    out.push_str(
        "<table id=\"results\"><thead><tr><th>HOOK</th><th>STATUS</th><th>TIME</th>\
         <th>CPU</th><th>MEM</th><th>OUTPUT</th><th>FILES</th></tr></thead><tbody>\n",
    );
    for result in &data.results {
        let run = data.runs.get(&result.id);
        let time = match (result.started_at, result.ended_at) {
            (Some(start), Some(end)) => duration(end - start),
            _ => "-".into(),
        };
        let status_class = match result.status {
            ResultStatus::Failed => "failed",
            ResultStatus::Succeeded => "succeeded",
            _ => "other",
        };
        let _ = write!(
            out,
            "<tr id=\"result-{id}\" class=\"{status_class}\"><td>{hook}</td>\
             <td class=\"status\">{status}</td><td class=\"num\">{time}</td>",
            id = result.id,
            hook = escape(&result.hook),
            status = escape(result.status.as_str()),
        );
        usage_cells(
            &mut out,
            run.map(|row| Usage {
                cpu_ms: row.cpu_usec.map(|usec| usec / 1000),
                memory_bytes: row.memory_peak.map(|peak| peak as u64),
            })
            .as_ref(),
        );
        let _ = write!(
            out,
            "<td class=\"output\">{}</td><td class=\"files\">",
            escape(result.output.as_deref().unwrap_or(""))
        );
        let subdir = run
            .and_then(|row| std::path::Path::new(&row.cwd).strip_prefix(&data.dir).ok())
            .map(|rel| rel.to_string_lossy().into_owned())
            .unwrap_or_default();
        for file in &result.output_files {
            let path: String = subdir
                .split('/')
                .chain(file.split('/'))
                .filter(|part| !part.is_empty())
                .map(percent_encode)
                .collect::<Vec<_>>()
                .join("/");
            let _ = write!(
                out,
                "<a href=\"/files/{}/{}\">{}</a> ",
                snapshot.id,
                path,
                escape(file)
            );
        }
        out.push_str("</td></tr>\n");
        if let Some(row) = run {
            let tail = logs(row);
            if !tail.is_empty() {
                let _ = writeln!(
                    out,
                    "<tr class=\"tail\"><td></td><td colspan=\"6\"><pre>{}</pre>{}</td></tr>",
                    escape(&tail.join("\n")),
                    command_links(row)
                );
            }
        }
    }
    out.push_str("</tbody></table>\n");
    out
}

fn command_links(row: &ProcessRow) -> String {
    format!(
        "<a class=\"log\" href=\"/log/{id}/stdout\">stdout</a> \
         <a class=\"log\" href=\"/log/{id}/stderr\">stderr</a>",
        id = row.id
    )
}

/// A process's log (its end).
pub fn log_live(row: &ProcessRow, stream: Stream, text: &str) -> String {
    format!(
        "<h2>Process {id}: {stream}</h2>\n<p class=\"cmd\">{kind} · {command}</p>\n<pre id=\"log\">{text}</pre>\n",
        id = row.id,
        stream = match stream {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        },
        kind = row.kind,
        command = escape(&row.argv.join(" ")),
        text = escape(text),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_from_outside_stays_text() {
        assert_eq!(
            escape("<img src=x onerror='alert(1)'>&\""),
            "&lt;img src=x onerror=&#39;alert(1)&#39;&gt;&amp;&quot;"
        );
    }

    #[test]
    fn the_index_names_the_crawls_and_sites_whose_snapshots_wait_and_why() {
        let data = IndexData {
            entries: Vec::new(),
            ended: 0,
            usage: Default::default(),
            crawls: Vec::new(),
            waits: vec![(
                3,
                "disk_full: 5 MiB free on /data, under min_free_space 1024 MiB".into(),
            )],
            hosts_waiting: vec![crate::store::HostState {
                key: "<b>example.com".into(),
                running: 0,
                queued: 4,
                next_start_in_ms: None,
                cooldown_ms: Some(3000),
                cooldown_reason: Some("HTTP 429, Retry-After 3s".into()),
                backoffs: 1,
            }],
        };
        let page = index_live(&data, 0);
        assert!(
            page.contains(
                "crawl 3: new snapshots wait for disk_full: 5 MiB free on /data, under \
                 min_free_space 1024 MiB"
            ),
            "{page}"
        );
        assert!(
            page.contains(
                "site &lt;b&gt;example.com: 4 snapshots queued; it cools down 3s more (HTTP 429, \
                 Retry-After 3s)"
            ),
            "{page}"
        );
    }

    #[test]
    fn a_document_names_its_machine_and_its_stream() {
        let host = Host {
            hostname: "<b>box</b>".into(),
            machine_id: "m1".into(),
            version: "0.1.0",
        };
        let page = document(&host, "crawl 3", Some(View::Crawl(3, 1)), "<p>x</p>\n");
        assert!(
            page.contains("<strong id=\"host\">&lt;b&gt;box&lt;/b&gt;</strong>"),
            "{page}"
        );
        assert!(page.contains("data-events=\"/events/crawl/3\""), "{page}");
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "{page}"
        );
    }
}
