//! Imports (`abxctl add --from FILE`, `abxctl add -`) against the real daemon and the real
//! parsers of abx-plugins (the newest pins: `ABXD_ABX_NEWEST_VENV`): a Netscape bookmarks export,
//! text and JSONL on standard input, an RSS and an Atom feed (files, and served on loopback on a
//! schedule), a file scheduled anew at each occurrence, each parsed by the plugins that accept
//! imports into the crawl's seeds; and what cannot be imported, refused naming it.
//!
//! The same imports go through abxd's own parsers (`plugins/parse_*_urls`, what the package
//! installs) where abx-plugins is not there, and abx-plugins' replace them where it is.
//!
//! CI provides the virtualenv (`.ci/run`); elsewhere the tests that need it skip, saying so.

mod common;

use common::abx::{plugins_of, Tools};
use common::{fixtures, TestDaemon};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// How long a parse may take: the first one provisions the RSS parser's feedparser.
const PARSE_WAIT: Duration = Duration::from_secs(240);

/// The plugins abxd ships (`plugins/`), its own parsers among them.
fn bundled() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("plugins")
        .display()
        .to_string()
}

/// A daemon whose plugins are abx-plugins', then abxd's own (whose parsers abx-plugins' replace:
/// a name is the first folder's), and the test fixtures (`ok`, a hook that archives nothing but
/// says it ran), its hooks with the virtualenv on their PATH.
fn import_daemon() -> Option<(TestDaemon, Vec<(String, String)>)> {
    let venv = std::env::var_os("ABXD_ABX_NEWEST_VENV").map(PathBuf::from);
    let tools = Tools::with_venv(venv)?;
    let mut daemon = TestDaemon::prepare("");
    let lib = daemon.path("lib").display().to_string();
    daemon.write_config(&format!(
        "[paths]\nplugins_dirs = [{:?}, {:?}, {:?}]\n[limits]\nmemory_floor = 0\n",
        plugins_of(&tools.venv).display().to_string(),
        bundled(),
        fixtures().join("plugins").display().to_string()
    ));
    let env = tools.env(&[("ABXPKG_LIB_DIR", lib.as_str())]);
    common::abx::launch(&mut daemon, &env);
    Some((daemon, env))
}

/// `abxctl add ARGS…` in the daemon's environment, `stdin` fed to it; its output.
fn add(
    daemon: &TestDaemon,
    env: &[(String, String)],
    args: &[&str],
    stdin: &str,
) -> std::process::Output {
    let mut all = vec!["add"];
    all.extend_from_slice(args);
    let mut child = daemon
        .ctl_command(&all)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The crawl id `add` printed.
fn crawl_id(out: &std::process::Output) -> i64 {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .split_whitespace()
        .nth(1)
        .and_then(|id| id.trim_end_matches(':').parse().ok())
        .unwrap_or_else(|| panic!("no crawl id in {stdout:?}"))
}

/// `abxctl schedule add --json ARGS…` with the parsers' environment `env`; the schedule's id.
fn add_schedule(daemon: &TestDaemon, env: &[(String, String)], args: &[&str]) -> i64 {
    let out = daemon
        .ctl_command(&[&["schedule", "add", "--json"], args].concat())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["schedule_id"].as_i64().unwrap()
}

/// The URLs of crawl `id`'s snapshots but its input's, sorted.
fn pages(daemon: &TestDaemon, id: i64) -> Vec<String> {
    let mut urls: Vec<String> = (daemon.store().crawls().snapshots(id).unwrap().into_iter())
        .filter(|s| !s.url.starts_with("file://"))
        .map(|s| s.url)
        .collect();
    urls.sort();
    urls
}

const BOOKMARKS: &str = r#"<!DOCTYPE NETSCAPE-Bookmark-file-1>
<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
<TITLE>Bookmarks</TITLE>
<H1>Bookmarks</H1>
<DL><p>
    <DT><H3 ADD_DATE="1700000000">Reading</H3>
    <DL><p>
        <DT><A HREF="http://127.0.0.1:9/one.html" ADD_DATE="1700000001">One</A>
        <DT><A HREF="http://127.0.0.1:9/two.html" ADD_DATE="1700000002">Two</A>
    </DL><p>
    <DT><A HREF="http://127.0.0.1:9/three.html" ADD_DATE="1700000003">Three</A>
</DL><p>
"#;

const RSS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>A feed</title><link>http://127.0.0.1:9/</link>
<item><title>First</title><link>http://127.0.0.1:9/posts/1.html</link></item>
<item><title>Second</title><link>http://127.0.0.1:9/posts/2.html</link></item>
</channel></rss>
"#;

const ATOM: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>An Atom feed</title><id>urn:x</id>
<updated>2026-11-26T00:00:00Z</updated>
<entry><title>Third</title><id>urn:3</id><updated>2026-11-26T00:00:00Z</updated>
<link href="http://127.0.0.1:9/posts/3.html"/></entry>
</feed>
"#;

#[test]
fn bookmarks_text_and_feeds_become_a_crawls_seeds_through_the_parser_hooks() {
    let Some((daemon, env)) = import_daemon() else {
        return;
    };
    each_format_becomes_seeds(&daemon, &env);
    // abx-plugins' parsers ran, not abxd's own of the same names.
    let rows = daemon
        .store()
        .processes()
        .list(&Default::default())
        .unwrap();
    let is_parser = |arg: &String| arg.contains("/on_Snapshot__") && arg.contains("_parse_");
    let parsers: Vec<String> = (rows.into_iter())
        .filter(|row| row.kind == abxd::domain::Kind::Hook)
        .filter_map(|row| row.argv.into_iter().find(is_parser))
        .collect();
    assert!(!parsers.is_empty());
    for hook in parsers {
        assert!(hook.contains("abx_plugins"), "{hook}");
    }
}

/// A daemon with the plugins a package installs (abxd's own parsers among them) and the test
/// fixtures, no abx-plugins.
fn bundled_daemon() -> TestDaemon {
    let mut daemon = TestDaemon::prepare("");
    daemon.write_config(&format!(
        "[paths]\nplugins_dirs = [{:?}, {:?}]\n[limits]\nmemory_floor = 0\n",
        bundled(),
        fixtures().join("plugins").display().to_string()
    ));
    daemon.launch();
    daemon
}

/// What a package installs on a machine without abx-plugins: bookmarks, text, JSONL and feeds
/// are imported all the same, by abxd's own parsers.
#[test]
fn the_bundled_parsers_import_bookmarks_text_jsonl_and_feeds_without_abx_plugins() {
    let daemon = bundled_daemon();
    each_format_becomes_seeds(&daemon, &[]);
}

/// Imports a bookmarks export, text, an RSS and an Atom feed and JSONL, each as a crawl of its
/// own, and checks each crawl's seeds are what its input holds.
fn each_format_becomes_seeds(daemon: &TestDaemon, env: &[(String, String)]) {
    let dir = daemon.path("imports");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in [
        ("bookmarks.html", BOOKMARKS),
        ("feed.rss", RSS),
        ("feed.atom", ATOM),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let from = |name: &str| dir.join(name).display().to_string();

    let bookmarks = crawl_id(&add(
        daemon,
        env,
        &["--plugins", "ok", "--from", &from("bookmarks.html")],
        "",
    ));
    let text = "see http://127.0.0.1:9/a.html and\nhttp://127.0.0.1:9/b.html then nothing\n";
    let stdin = crawl_id(&add(daemon, env, &["--plugins", "ok", "-"], text));
    let rss = crawl_id(&add(
        daemon,
        env,
        &["--plugins", "ok", "--from", &from("feed.rss")],
        "",
    ));
    let atom = crawl_id(&add(
        daemon,
        env,
        &["--plugins", "ok", "--from", &from("feed.atom")],
        "",
    ));
    let jsonl = "{\"url\": \"http://127.0.0.1:9/j1.html\"}\n{\"url\": \"http://127.0.0.1:9/j2.html\", \"tags\": \"x\"}\n";
    let jsonl = crawl_id(&add(daemon, env, &["--plugins", "ok", "-"], jsonl));
    for id in [bookmarks, stdin, rss, atom, jsonl] {
        daemon.wait_sealed(id, PARSE_WAIT);
    }
    assert_eq!(
        pages(daemon, jsonl),
        ["j1.html", "j2.html"].map(|p| format!("http://127.0.0.1:9/{p}"))
    );
    let at = |path: &str| format!("http://127.0.0.1:9/{path}");
    assert_eq!(
        pages(daemon, bookmarks),
        ["one.html", "three.html", "two.html"].map(at)
    );
    assert_eq!(pages(daemon, stdin), ["a.html", "b.html"].map(at));
    // A feed's entries, found by the feed parser; the other parsers see every URL of its text
    // (the channel's link, the Atom namespace) and report those too, as under ArchiveBox.
    let store = daemon.store();
    for (id, entries) in [
        (rss, vec!["posts/1.html", "posts/2.html"]),
        (atom, vec!["posts/3.html"]),
    ] {
        let found = pages(daemon, id);
        for entry in entries {
            assert!(found.contains(&at(entry)), "{entry} not in {found:?}");
        }
        let input = &store.crawls().snapshots(id).unwrap()[0];
        let results = store.results().snapshot_results(input.id).unwrap();
        let feed = results
            .iter()
            .find(|r| r.plugin == "parse_rss_urls")
            .unwrap();
        assert_eq!(feed.status.as_str(), "succeeded", "{results:?}");
    }
    // Each parse is the crawl's first snapshot, its parsers hooks of the crawl like any other.
    let input = &store.crawls().snapshots(bookmarks).unwrap()[0];
    assert!(
        input.url.ends_with("/staticfile/stdin.txt"),
        "{}",
        input.url
    );
    let parsers = store.results().snapshot_results(input.id).unwrap();
    let netscape = parsers
        .iter()
        .find(|r| r.plugin == "parse_netscape_urls")
        .unwrap();
    assert_eq!(netscape.status.as_str(), "succeeded", "{parsers:?}");
    // The seeds are the crawl's: its pages ran the crawl's plugin.
    // (Counted on the crawl, which keeps what the operator gave: the file, not its seeds.)
    let crawl = store.crawls().get(bookmarks).unwrap().unwrap();
    assert_eq!(
        (crawl.imported_seeds, crawl.urls.len()),
        (3, 0),
        "{crawl:?}"
    );
    let page = &store.crawls().snapshots(bookmarks).unwrap()[1];
    let results = store.results().snapshot_results(page.id).unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].plugin, "ok");
    // Each page's index names its crawl as ArchiveBox names an import's: by what was imported
    // (the input's file), never by the seeds it was parsed into.
    let index = (daemon.data_dir()).join(format!(
        "crawls/{bookmarks}/snapshots/{}/index.jsonl",
        page.id
    ));
    let text = std::fs::read_to_string(&index).unwrap();
    let crawl_record: serde_json::Value = (text.lines())
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|record| record["type"] == "Crawl")
        .unwrap_or_else(|| panic!("no Crawl record in {}: {text}", index.display()));
    assert_eq!(crawl_record["urls"], input.url.as_str(), "{crawl_record}");
}

#[test]
fn an_import_that_parses_to_nothing_is_refused_naming_the_file_and_the_parsers() {
    let Some((daemon, env)) = import_daemon() else {
        return;
    };
    let file = daemon.path("nothing.txt");
    std::fs::write(&file, "no links here, only words\n").unwrap();
    let out = add(
        &daemon,
        &env,
        &["--plugins", "ok", "--from", &file.display().to_string()],
        "",
    );
    assert_eq!(out.status.code(), Some(abxd::exit::USAGE), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&file.display().to_string()), "{stderr}");
    assert!(stderr.contains("no URL found"), "{stderr}");
    for parser in ["parse_txt_urls", "parse_netscape_urls", "parse_html_urls"] {
        assert!(stderr.contains(parser), "{parser}: {stderr}");
    }
    // An empty one is refused before anything is queued.
    let out = add(&daemon, &env, &["-"], "  \n");
    assert_eq!(out.status.code(), Some(abxd::exit::USAGE));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard input is empty"));
}

#[test]
fn a_feed_served_on_loopback_is_crawled_on_a_schedule_and_its_entries_followed() {
    let Some((daemon, env)) = import_daemon() else {
        return;
    };
    let site = daemon.path("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("feed.rss"), RSS).unwrap();
    std::fs::write(site.join("feed.atom"), ATOM).unwrap();
    let served = abxd::serve::serve_dir(&site).unwrap();
    let mut ids = Vec::new();
    for feed in ["feed.rss", "feed.atom"] {
        let url = format!("http://{served}/{feed}");
        let args = [
            "--every",
            "2s",
            "--depth",
            "1",
            "--plugins",
            "parse_rss_urls,ok",
            &url,
        ];
        ids.push(add_schedule(&daemon, &env, &args));
    }
    let crawl_of = |id: i64| {
        let store = daemon.store();
        store
            .crawls()
            .all()
            .unwrap()
            .into_iter()
            .find(|c| c.schedule_id == Some(id))
            .map(|c| c.id)
    };
    let rss = common::wait_until("the RSS feed's occurrence", PARSE_WAIT, || crawl_of(ids[0]));
    let atom = common::wait_until("the Atom feed's occurrence", PARSE_WAIT, || {
        crawl_of(ids[1])
    });
    for id in &ids {
        daemon.ctl_ok(&["schedule", "pause", &id.to_string()]);
    }
    daemon.wait_sealed(rss, PARSE_WAIT);
    let found = pages(&daemon, rss);
    for entry in ["posts/1.html", "posts/2.html"] {
        assert!(
            found.contains(&format!("http://127.0.0.1:9/{entry}")),
            "{found:?}"
        );
    }
    daemon.wait_sealed(atom, PARSE_WAIT);
    let found = pages(&daemon, atom);
    assert!(
        found.contains(&"http://127.0.0.1:9/posts/3.html".to_string()),
        "{found:?}"
    );
    let store = daemon.store();
    let entry = (store.crawls().snapshots(atom).unwrap().into_iter())
        .find(|s| s.url.ends_with("/posts/3.html"))
        .unwrap();
    assert_eq!(entry.depth, 1);
}

#[test]
fn an_import_larger_than_the_socket_takes_is_refused_naming_the_file_and_the_key() {
    // (The base config has a [control] table: the key goes in it.)
    let mut daemon = TestDaemon::prepare("");
    let config = std::fs::read_to_string(&daemon.config).unwrap();
    let config = config.replace("[control]\n", "[control]\nmax_frame_bytes = 2048\n");
    std::fs::write(&daemon.config, config).unwrap();
    daemon.launch();
    let file = daemon.path("big.txt");
    let text: String = (0..100)
        .map(|i| format!("http://127.0.0.1:9/page/{i}.html\n"))
        .collect();
    std::fs::write(&file, &text).unwrap();
    let out = daemon.ctl(&["add", "--from", &file.display().to_string()]);
    assert_eq!(out.status.code(), Some(abxd::exit::USAGE), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&file.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("control.max_frame_bytes (2048)"),
        "{stderr}"
    );
    assert!(
        daemon.store().crawls().all().unwrap().is_empty(),
        "nothing is queued"
    );
}

#[test]
fn a_schedule_imports_a_file_anew_at_each_occurrence() {
    let Some((daemon, env)) = import_daemon() else {
        return;
    };
    let file = daemon.path("bookmarks.html");
    std::fs::write(&file, BOOKMARKS).unwrap();
    let args = [
        "--every",
        "2s",
        "--plugins",
        "ok",
        "--from",
        &file.display().to_string(),
    ];
    let id = add_schedule(&daemon, &env, &args);
    let crawls = |daemon: &TestDaemon| -> Vec<i64> {
        let crawls = daemon.store().crawls().all().unwrap();
        crawls
            .into_iter()
            .filter(|c| c.schedule_id == Some(id))
            .map(|c| c.id)
            .collect()
    };
    let first = common::wait_until("the first occurrence", PARSE_WAIT, || {
        crawls(&daemon).first().copied()
    });
    daemon.wait_sealed(first, PARSE_WAIT);
    let at = |path: &str| format!("http://127.0.0.1:9/{path}");
    assert_eq!(
        pages(&daemon, first),
        ["one.html", "three.html", "two.html"].map(at)
    );
    // The browser adds a bookmark: the next occurrence imports the file as it is then.
    let more = BOOKMARKS.replace(
        "    <DT><A HREF=\"http://127.0.0.1:9/three.html\"",
        "    <DT><A HREF=\"http://127.0.0.1:9/four.html\">Four</A>\n    <DT><A HREF=\"http://127.0.0.1:9/three.html\"",
    );
    assert_ne!(more, BOOKMARKS);
    std::fs::write(&file, more).unwrap();
    let later = common::wait_until("an occurrence after the change", PARSE_WAIT, || {
        crawls(&daemon).into_iter().find(|&c| {
            let crawl = daemon.store().crawls().get(c).unwrap().unwrap();
            crawl.status == "sealed" && pages(&daemon, c).contains(&at("four.html"))
        })
    });
    daemon.ctl_ok(&["schedule", "pause", &id.to_string()]);
    assert!(pages(&daemon, later).contains(&at("four.html")));
    // Each crawl's input snapshot is the file itself, read by the parser hooks.
    let input = &daemon.store().crawls().snapshots(later).unwrap()[0];
    assert_eq!(
        input.url,
        format!("file://{}", file.canonicalize().unwrap().display())
    );
}

/// ArchiveBox's `add --parser NAME` and `--index-only`, with the parsers the package installs:
/// the one parser named reads the import (`netscape`: `parse_netscape_urls`), a name that is no
/// parser here is refused naming those that are, and an index-only crawl is recorded paused —
/// nothing of it runs — until it is resumed.
#[test]
fn parser_names_the_one_parser_that_reads_an_import_and_index_only_records_a_crawl_paused() {
    let daemon = bundled_daemon();
    let file = daemon.path("bookmarks.html");
    std::fs::write(&file, BOOKMARKS).unwrap();
    let file = file.display().to_string();

    let args = ["--plugins", "ok", "--parser", "netscape", "--from", &file];
    let id = crawl_id(&add(&daemon, &[], &args, ""));
    daemon.wait_sealed(id, PARSE_WAIT);
    let at = |path: &str| format!("http://127.0.0.1:9/{path}");
    assert_eq!(
        pages(&daemon, id),
        ["one.html", "three.html", "two.html"].map(at)
    );
    let store = daemon.store();
    let input = &store.crawls().snapshots(id).unwrap()[0];
    let parsers: Vec<String> = (store.results().snapshot_results(input.id).unwrap())
        .into_iter()
        .map(|r| r.plugin)
        .collect();
    assert_eq!(parsers, ["parse_netscape_urls"]);
    let shown = daemon.ctl_ok(&["show", &id.to_string()]);
    assert!(shown.contains("  parser: netscape"), "{shown}");

    let out = add(&daemon, &[], &["--parser", "nosuch", "--from", &file], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        stderr.contains("--parser: no plugin parse_nosuch_urls"),
        "{stderr}"
    );
    assert!(stderr.contains("parse_netscape_urls"), "{stderr}");

    let out = add(
        &daemon,
        &[],
        &["--plugins", "ok", "--index-only", &at("x.html")],
        "",
    );
    let paused = crawl_id(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("recorded, paused"),
        "{out:?}"
    );
    let crawl = daemon.store().crawls().get(paused).unwrap().unwrap();
    assert!(crawl.paused_at.is_some(), "{crawl:?}");
    // (The daemon claims due crawls at once: a crawl it ran would have a worker row by now.)
    let other = daemon.add(&["--plugins", "ok", &at("y.html")]);
    daemon.wait_sealed(other, PARSE_WAIT);
    let store = daemon.store();
    assert!(store.crawls().snapshots(paused).unwrap().is_empty());
    assert!(store
        .processes()
        .crawl_processes(paused)
        .unwrap()
        .is_empty());
    daemon.ctl_ok(&["resume", &paused.to_string()]);
    daemon.wait_sealed(paused, PARSE_WAIT);
    assert_eq!(pages(&daemon, paused), [at("x.html")]);
}
