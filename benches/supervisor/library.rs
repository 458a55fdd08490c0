//! Benchmark 12: a bookmark library — what grows with the work. A Netscape bookmarks file of
//! `library_links` links through `abxctl add --from` (the bundled `parse_netscape_urls`, then a
//! trivial hook per seed): the time until every link is a queued snapshot, beside the parser
//! hook's own run and beside ArchiveBox 0.9.73 queuing the same file
//! (`benches/library_archivebox.py`), and the daemon's resident memory meanwhile; snapshots
//! dispatched per second with all of them queued, beside a crawl of 100 queued; then, with `library_results` result
//! rows, each listing's first page, the web view's first byte and a `/metrics` scrape, beside
//! `abxctl --version`; and the database's bytes per snapshot.

use crate::common::{self, TestDaemon};
use crate::harness::*;
use crate::procfs::*;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A Netscape bookmarks file of `links` links, as browsers export them.
fn bookmarks(dir: &Path, name: &str, links: usize) -> PathBuf {
    bookmarks_over(dir, name, links, None)
}

/// [`bookmarks`] of links spread over `sites` sites (`siteN.example`, a host key each) when
/// given, else all on one (127.0.0.1).
fn bookmarks_over(dir: &Path, name: &str, links: usize, sites: Option<usize>) -> PathBuf {
    let mut text = String::from(
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<META HTTP-EQUIV=\"Content-Type\" \
         CONTENT=\"text/html; charset=UTF-8\">\n<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n<DL><p>\n",
    );
    for n in 0..links {
        let host = match sites {
            Some(sites) => format!("site{}.example", n % sites),
            None => "127.0.0.1:9".to_string(),
        };
        text.push_str(&format!(
            "    <DT><A HREF=\"http://{host}/{name}/{n}\" ADD_DATE=\"1700000000\">page {n}</A>\n"
        ));
    }
    text.push_str("</DL><p>\n");
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A read-only connection to the daemon's database.
fn reader(daemon: &TestDaemon) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open_with_flags(
        daemon.database(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn
}

/// How many snapshots of crawl `crawl` are sealed (`is` "=") or not ("!="), by the crawl's kept
/// counts: a read of a few rows, however many there are.
fn kept_snapshots(conn: &rusqlite::Connection, crawl: i64, is: &str) -> i64 {
    let sql = format!(
        "SELECT COALESCE(sum(count), 0) FROM crawl_tallies \
         WHERE crawl_id = ?1 AND kind = 'snapshot' AND status {is} 'sealed'"
    );
    conn.query_row(&sql, [crawl], |r| r.get(0)).unwrap()
}

/// A read-only look at the daemon's database.
fn count(daemon: &TestDaemon, sql: &str) -> usize {
    reader(daemon)
        .query_row(sql, [], |r| r.get::<_, i64>(0))
        .unwrap() as usize
}

/// Adds the bookmarks at `file` and returns the crawl, how long `add` took (it returns once the
/// import is parsed: every link queued), how long the parser hook itself ran (ms), and the
/// daemon's highest resident memory meanwhile (MiB, sampled).
fn add_library(daemon: &TestDaemon, file: &Path) -> (i64, f64, f64, f64) {
    let pid = daemon.pid();
    let mut add = daemon.ctl_command(&[
        "add",
        "--from",
        file.to_str().unwrap(),
        "--parser",
        "netscape",
        "-p",
        "trivial",
    ]);
    let started = Instant::now();
    let mut child = add.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut peak_kib = proc_field(pid, "VmRSS:");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        peak_kib = peak_kib.max(proc_field(pid, "VmRSS:"));
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed().as_secs_f64() * 1000.0;
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(status.success(), "add --from: {out}");
    let crawl = count(daemon, "SELECT max(id) FROM crawls") as i64;
    // Every link queued, the parser's result its own (a bound on how much of a hook's stdout
    // was read once dropped a 100,000-link import's last 6 %, and its result record).
    let links = std::fs::read_to_string(file)
        .unwrap()
        .matches("<DT><A ")
        .count();
    let queued = count(
        daemon,
        &format!("SELECT count(*) FROM snapshots WHERE crawl_id = {crawl} AND depth = 0"),
    );
    assert_eq!(queued, links + 1, "the input and every link: {out}");
    let parsed = count(
        daemon,
        &format!(
            "SELECT count(*) FROM results WHERE crawl_id = {crawl} \
             AND plugin = 'parse_netscape_urls' AND status = 'succeeded'"
        ),
    );
    assert_eq!(parsed, 1, "the parser's result: {out}");
    let parser_ms = count(
        daemon,
        &format!(
            "SELECT COALESCE(max(ended_at - started_at), 0) FROM results \
             WHERE crawl_id = {crawl} AND plugin = 'parse_netscape_urls'"
        ),
    );
    (crawl, took, parser_ms as f64, peak_kib as f64 / 1024.0)
}

/// Seeds of crawl `crawl` sealed per second, over the first `window` of them sealed at or after
/// `since_ms` (before the crawl was added: its seeds are queued at once, then dispatched; or
/// every one, if fewer), from the seal times abxd records (`sealed_at`): watching
/// costs the crawl nothing but a poll of its kept count on one connection. (It was measured by
/// counting the crawl's sealed rows every 20 ms, each time on a new connection: at 100 000
/// queued that poll alone slowed dispatch by a third, BENCHMARKS.md.)
fn dispatch_rate(daemon: &TestDaemon, crawl: i64, window: usize, since_ms: i64) -> f64 {
    let conn = reader(daemon);
    // (The first `window` seeds sealed since `since_ms`: how many, the first and last seal.)
    let seeds_sealed = || -> (i64, i64, i64) {
        conn.query_row(
            "SELECT count(*), COALESCE(min(sealed_at), 0), COALESCE(max(sealed_at), 0) \
             FROM (SELECT sealed_at FROM snapshots WHERE crawl_id = ?1 AND sealed_at >= ?2 \
                   AND url LIKE 'http://%' ORDER BY sealed_at LIMIT ?3)",
            [crawl, since_ms, window as i64],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
    };
    // (Until the window is sealed, only the kept count is polled: a read of a few rows.)
    let unsealed = || kept_snapshots(&conn, crawl, "!=");
    let left = unsealed();
    let target = left - (window as i64 - seeds_sealed().0).min(left);
    let deadline = Instant::now() + Duration::from_secs(1800);
    while unsealed() > target {
        assert!(Instant::now() < deadline, "crawl {crawl} stalled");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (seeds, first, last) = seeds_sealed();
    assert!(
        seeds > 1,
        "crawl {crawl}: {seeds} seeds sealed since {since_ms}"
    );
    (seeds - 1) as f64 / ((last - first).max(1) as f64 / 1000.0)
}

/// The open descriptors of process `pid`.
fn descriptors(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// What a soak of `snapshots` more seeds of `crawl` showed, its first and its last `block`:
/// seconds each took, and — at each one's end — the RSS (MiB) and open descriptors of the daemon
/// and of the crawl's worker (the process that lives through the whole crawl).
struct Soak {
    seconds: (f64, f64),
    daemon_rss: (f64, f64),
    daemon_fds: (usize, usize),
    worker_rss: (f64, f64),
    worker_fds: (usize, usize),
}

fn soak(daemon: &TestDaemon, crawl: i64, snapshots: usize, block: usize) -> Soak {
    // (The crawl's kept count of sealed snapshots, on one connection: a poll that costs the
    // daemon nothing however many are sealed — its seeds and the file they came from.)
    let conn = reader(daemon);
    let sealed = || kept_snapshots(&conn, crawl, "=") as usize;
    let worker = count(
        daemon,
        &format!(
            "SELECT pid FROM processes WHERE kind = 'crawl_worker' AND crawl_id = {crawl} \
             AND status = 'running'"
        ),
    ) as i32;
    let sample = |pid: i32| (proc_field(pid, "VmRSS:") as f64 / 1024.0, descriptors(pid));
    let blocks = snapshots / block;
    let mut ends = Vec::with_capacity(blocks);
    let from = sealed();
    let mut started = Instant::now();
    let deadline = started + Duration::from_secs(3600);
    while ends.len() < blocks {
        let target = from + (ends.len() + 1) * block;
        while sealed() < target {
            assert!(Instant::now() < deadline, "crawl {crawl}: the soak stalled");
            std::thread::sleep(Duration::from_millis(20));
        }
        let took = started.elapsed().as_secs_f64();
        started = Instant::now();
        ends.push((took, sample(daemon.pid()), sample(worker)));
    }
    let (first, last) = (ends[0], ends[blocks - 1]);
    Soak {
        seconds: (first.0, last.0),
        daemon_rss: (first.1 .0, last.1 .0),
        daemon_fds: (first.1 .1, last.1 .1),
        worker_rss: (first.2 .0, last.2 .0),
        worker_fds: (first.2 .1, last.2 .1),
    }
}

/// A result row per hook of `hooks` for each snapshot of `crawl` (written as the workers would,
/// in one transaction, while the daemon is idle): the table a long-lived host has.
fn fill_results(daemon: &TestDaemon, crawl: i64, hooks: usize) {
    let mut conn = rusqlite::Connection::open(daemon.database()).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    let tx = conn.transaction().unwrap();
    for n in 0..hooks {
        tx.execute(
            "INSERT INTO results (crawl_id, snapshot_id, plugin, hook, status, output, \
             started_at, ended_at, uuid) \
             SELECT crawl_id, id, 'bench', ?2, CASE WHEN id % 97 = 0 THEN 'failed' \
             ELSE 'succeeded' END, 'done', created_at, created_at + 5, hex(randomblob(16)) \
             FROM snapshots WHERE crawl_id = ?1",
            rusqlite::params![crawl, format!("on_Snapshot__{n:02}_bench.sh")],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// `rows` process rows of hooks of the sealed crawl `crawl` that ended a year ago (written in
/// one transaction): what `prune` takes away.
fn fill_processes(daemon: &TestDaemon, crawl: i64, rows: usize) {
    let mut conn = rusqlite::Connection::open(daemon.database()).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    let tx = conn.transaction().unwrap();
    let year_ago = abxd::store::now_ms() - 365 * 86_400_000;
    tx.execute(
        "INSERT INTO processes (kind, crawl_id, argv, cwd, status, created_at, started_at, \
         ended_at, end_reason, exit_code) \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2) \
         SELECT 'hook', ?1, '[\"on_Snapshot__10_bench.sh\"]', '/', 'exited', ?3, ?3, ?3 + 5, \
         'exited', 0 FROM n",
        rusqlite::params![crawl, rows as i64, year_ago],
    )
    .unwrap();
    tx.commit().unwrap();
}

/// `abxctl prune` of what `fill_processes` wrote, `rows` rows: milliseconds per 1 000 rows.
fn prune_per_thousand(daemon: &TestDaemon, crawl: i64, rows: usize) -> f64 {
    fill_processes(daemon, crawl, rows);
    let started = Instant::now();
    let out = daemon.ctl(&["prune", "--older-than", "30d"]);
    let took = started.elapsed().as_secs_f64() * 1000.0;
    assert!(out.status.success(), "prune: {out:?}");
    let left = count(
        daemon,
        "SELECT count(*) FROM processes WHERE argv = '[\"on_Snapshot__10_bench.sh\"]'",
    );
    assert_eq!(left, 0, "prune left {left} of {rows} rows");
    took / (rows as f64 / 1000.0)
}

/// The time to the first byte and to the last of `GET path` on `port` (ms).
fn web_get(port: u16, token: &str, path: &str) -> (f64, f64) {
    let started = Instant::now();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut first = [0u8; 1];
    stream.read_exact(&mut first).unwrap();
    let first_byte = started.elapsed().as_secs_f64() * 1000.0;
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap();
    (first_byte, started.elapsed().as_secs_f64() * 1000.0)
}

/// `ps`, `crawls`, `show` (first page, and `--json`), `status` (5 runs each), the web view's
/// index and crawl page and `/metrics` (first byte and whole, 5 runs each) of `daemon`, its
/// web view on `port`, with `rows` (what the figures name).
fn time_listings(daemon: &TestDaemon, crawl: i64, port: u16, rows: &str, figures: &mut Figures) {
    let time = |args: &[&str]| {
        let started = Instant::now();
        assert!(daemon.ctl(args).status.success(), "{args:?}");
        started.elapsed().as_secs_f64() * 1000.0
    };
    let baseline = median(&mut (0..5).map(|_| time(&["--version"])).collect::<Vec<_>>());
    let id = crawl.to_string();
    for (what, args) in [
        ("ps", vec!["ps"]),
        ("crawls", vec!["crawls"]),
        ("show (first page)", vec!["show", id.as_str()]),
        (
            "show --json (first page)",
            vec!["show", id.as_str(), "--json"],
        ),
        ("status", vec!["status"]),
    ] {
        for _ in 0..5 {
            figures.add(
                &format!("12 abxctl {what} with {rows} (ms)"),
                time(&args),
                Some(("abxctl --version (ms)", baseline)),
            );
        }
    }
    let token = std::fs::read_to_string(daemon.data_dir().join("web-token")).unwrap();
    let token = token.trim();
    for (what, path) in [
        ("the web view's index", "/".to_string()),
        ("the web view's crawl page", format!("/crawl/{crawl}")),
        ("/metrics", "/metrics".to_string()),
    ] {
        for _ in 0..5 {
            let (first, whole) = web_get(port, token, &path);
            figures.add(
                &format!("12 {what} with {rows}, first byte (ms)"),
                first,
                Some(("the whole answer (ms)", whole)),
            );
        }
    }
}

pub(crate) fn library(s: &Sizes, figures: &mut Figures) {
    let dir = scratch_dir();
    let plugins = dir.path().join("bench-plugins");
    let trivial = "#!/bin/sh\necho '{\"type\":\"ArchiveResult\",\"status\":\"succeeded\"}'\n";
    write_plugin(
        &plugins,
        "trivial",
        &[("on_Snapshot__10_true.sh".into(), trivial)],
    );
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins");
    let port = free_port();
    let daemon = quiet_daemon(
        dir.path(),
        &format!(
            "[paths]\nplugins_dirs = [{:?}, {:?}]\n[limits]\nmax_snapshot_workers = 8\n\
             memory_floor = 0\n[web]\nlisten = \"127.0.0.1:{port}\"\n",
            bundled.display().to_string(),
            plugins.display().to_string()
        ),
    );
    let rss_before = proc_field(daemon.pid(), "VmRSS:") as f64 / 1024.0;

    // A library of 100 first: the baseline of dispatch.
    let small = bookmarks(dir.path(), "small", 100);
    let since = abxd::store::now_ms();
    let (small_crawl, ..) = add_library(&daemon, &small);
    let small_rate = dispatch_rate(&daemon, small_crawl, 100, since);

    let links = s.library_links;
    let file = bookmarks(dir.path(), "library", links);
    let since = abxd::store::now_ms();
    let (crawl, took, parser_ms, peak) = add_library(&daemon, &file);
    figures.add(
        &format!("12 {links} links from a bookmarks file, add until all are queued (s)"),
        took / 1000.0,
        Some(("the parser hook's own run (s)", parser_ms / 1000.0)),
    );
    figures.add(
        &format!("12 the daemon's resident memory while {links} links were queued, peak (MiB)"),
        peak,
        Some(("before (MiB)", rss_before)),
    );
    let window = s.library_window;
    let one_site_rate = dispatch_rate(&daemon, crawl, window, since);
    figures.add(
        &format!("12 snapshots dispatched per second with {links} queued"),
        one_site_rate,
        Some(("with 100 queued", small_rate)),
    );
    // The soak: the same crawl goes on through `soak_snapshots` more; its first block of them
    // is the baseline of its last.
    let (snapshots, block) = (s.soak_snapshots, s.soak_block);
    let soaked = soak(&daemon, crawl, snapshots, block);
    let per_block = format!("the first {block} of a soak of {snapshots}");
    figures.add(
        &format!("12 seconds for the last {block} of a soak of {snapshots} snapshots"),
        soaked.seconds.1,
        Some((&format!("{per_block} (s)"), soaked.seconds.0)),
    );
    for (whose, rss, fds) in [
        ("the daemon's", soaked.daemon_rss, soaked.daemon_fds),
        ("the crawl worker's", soaked.worker_rss, soaked.worker_fds),
    ] {
        figures.add(
            &format!("12 {whose} RSS after the last {block} of the soak (MiB)"),
            rss.1,
            Some((&format!("after {per_block} (MiB)"), rss.0)),
        );
        figures.add(
            &format!("12 {whose} open descriptors after the last {block} of the soak"),
            fds.1 as f64,
            Some((&format!("after {per_block}"), fds.0 as f64)),
        );
    }
    // ArchiveBox queuing the same file, once abxd's dispatch and soak are measured (what it
    // leaves running as it stops must not slow them), abxd's crawl paused: it has the machine
    // to itself.
    daemon.ctl_ok(&["pause", &crawl.to_string()]);
    let beside = archivebox_queues(&file, links);
    daemon.ctl_ok(&["resume", &crawl.to_string()]);
    if let Some(archivebox) = beside {
        // (ArchiveBox stops queuing to archive what it queued: its time is then for fewer.)
        let whom = match archivebox.3 {
            queued if queued >= links => "by ArchiveBox 0.9.73 (s)".to_string(),
            queued => format!("by ArchiveBox 0.9.73, which queued only {queued} of them (s)"),
        };
        figures.add(
            &format!("12 {links} links from a bookmarks file queued by abxd (s)"),
            took / 1000.0,
            Some((&whom, archivebox.0)),
        );
        figures.add(
            &format!("12 abxd's daemon while {links} links were queued, peak (MiB)"),
            peak,
            Some(("ArchiveBox 0.9.73's processes, peak (MiB)", archivebox.1)),
        );
        // (Each tool's time beyond its parser: abxd bundles a parser of its own, ArchiveBox
        // runs abx-plugins'. ArchiveBox may queue records while its parser still runs, and stop
        // queuing before it ends: then there is no time beyond it to compare.)
        match archivebox.2 {
            Some(parser) if archivebox.0 > parser => figures.add(
                &format!("12 {links} links queued, beyond the parser hook's run, abxd (s)"),
                (took - parser_ms) / 1000.0,
                Some(("ArchiveBox 0.9.73 (s)", archivebox.0 - parser)),
            ),
            Some(parser) => println!(
                "12 ArchiveBox 0.9.73 stopped queuing at {:.0} s, while its parser hook still \
                 ran ({parser:.0} s in all): no time beyond its parser to compare",
                archivebox.0
            ),
            None => {}
        }
    }
    daemon.ctl_ok(&["cancel", &crawl.to_string()]);
    daemon.wait_sealed(crawl, Duration::from_secs(600));

    // (14) The same dispatch with the links spread over a site each 20 (politeness lifted, as
    // for every daemon of the benchmarks: the claim's choosing is what is measured), beside the
    // one site's above.
    let sites = (links / 20).max(1);
    let spread = bookmarks_over(dir.path(), "spread", links, Some(sites));
    let since = abxd::store::now_ms();
    let (spread_crawl, ..) = add_library(&daemon, &spread);
    figures.add(
        &format!("14 snapshots dispatched per second with {links} queued over {sites} sites"),
        dispatch_rate(&daemon, spread_crawl, window, since),
        Some(("over 1 site (per s)", one_site_rate)),
    );
    daemon.ctl_ok(&["cancel", &spread_crawl.to_string()]);
    daemon.wait_sealed(spread_crawl, Duration::from_secs(600));

    let hooks = s.library_results.div_ceil(links);
    fill_results(&daemon, crawl, hooks);
    let results = count(&daemon, "SELECT count(*) FROM results");
    time_listings(
        &daemon,
        crawl,
        port,
        &format!("{results} result rows"),
        figures,
    );
    let conn = rusqlite::Connection::open(daemon.database()).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    let bytes = std::fs::metadata(daemon.database()).unwrap().len();
    figures.add(
        &format!("12 database bytes per snapshot with {links} snapshots and {results} results"),
        bytes as f64 / (links + 100) as f64,
        None,
    );
    // `prune` of a year-old history, the daemon down (in the daemon it runs in the loop, and a
    // million rows outlast abxctl's 60 s wait: see BENCHMARKS.md): its time per thousand rows,
    // at a hundredth of the size first (the baseline: a prune that costs more than its rows
    // would show here).
    let mut daemon = daemon;
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    daemon.wait_exit();
    let rows = s.prune_rows;
    let small = prune_per_thousand(&daemon, crawl, rows / 100);
    figures.add(
        &format!("12 abxctl prune of {rows} process rows, abxd down, per 1 000 rows (ms)"),
        prune_per_thousand(&daemon, crawl, rows),
        Some((&format!("of {} rows (ms)", rows / 100), small)),
    );

    // The same listings on PostgreSQL: the database moved there as an operator moves it
    // (`abxd store copy`), a daemon on it.
    let Some(server) = common::postgres::Postgres::start_leaving_files_in(scratch_root()) else {
        println!("12 on PostgreSQL skipped: PostgreSQL is not installed here");
        return;
    };
    let url = server.database_url();
    let copied = (daemon.abxd_command(&["store", "copy", "--to", &url]))
        .output()
        .unwrap();
    assert!(copied.status.success(), "store copy: {copied:?}");
    let port = free_port();
    let on_postgres = scratch_dir();
    let daemon = quiet_daemon(
        on_postgres.path(),
        &format!("[paths]\ndatabase = {url:?}\n[web]\nlisten = \"127.0.0.1:{port}\"\n"),
    );
    let rows = format!("{results} result rows on PostgreSQL");
    time_listings(&daemon, crawl, port, &rows, figures);
}

/// ArchiveBox 0.9.73 queuing the same file (`benches/library_archivebox.py`, as its user would:
/// `archivebox add --parser netscape`): seconds until its index held every link (or its last
/// before it stopped queuing), its processes' peak resident memory (MiB), how long its parser
/// hook ran (s; if seen), and how many it queued (fewer where it stopped queuing to archive
/// them). `None`, saying why, where ArchiveBox is not installed (outside CI) or this is not
/// root (ArchiveBox runs as another user).
fn archivebox_queues(file: &Path, links: usize) -> Option<(f64, f64, Option<f64>, usize)> {
    let archivebox = common::archivebox::archivebox()?;
    if !nix::unistd::geteuid().is_root() {
        println!("12 beside ArchiveBox skipped: it runs as its own user, which needs root");
        return None;
    }
    // (World-traversable: the collection is the unprivileged user's.)
    let out = tempfile::Builder::new()
        .prefix("abxd-bench-archivebox")
        .tempdir_in("/var/tmp")
        .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/library_archivebox.py");
    let ran = std::process::Command::new("python3")
        .arg(script)
        .args([
            "--file",
            file.to_str().unwrap(),
            "--links",
            &links.to_string(),
        ])
        .args(["--out", out.path().to_str().unwrap()])
        .env("ABXD_ARCHIVEBOX", archivebox)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(
        ran.status.success(),
        "library_archivebox.py: {stdout}{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let figures: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    Some((
        figures["queued_s"].as_f64().unwrap(),
        figures["peak_rss_mib"].as_f64().unwrap(),
        figures["parser_s"].as_f64(),
        figures["snapshots"].as_u64().unwrap() as usize,
    ))
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
