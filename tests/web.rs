//! The web view and `/metrics`, as a person and a Prometheus server use them: a real daemon
//! running a real crawl, a real headless Chromium reading the page's DOM as it updates, and
//! Prometheus' own text parser (its Python client) reading `/metrics`.
//!
//! CI installs Chromium and the parser (`.ci/run`) and fails here without them; elsewhere a
//! test that needs one skips, saying so.

mod common;

use common::browser::{chromium, Browser};
use common::{plugin, plugins_config, wait_until, TestDaemon, WAIT};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A port nobody listens on now (the kernel's pick, let go).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An answer: status, headers (names lower-cased), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `request` (a whole HTTP request, as written) to `stream` and reads the answer.
fn exchange(mut stream: impl Read + Write, request: &str) -> Answer {
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

fn get(port: u16, method: &str, target: &str, extra: &str) -> Answer {
    let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    exchange(
        stream,
        &format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n"),
    )
}

/// The title a page could have, with markup that would run were it not escaped.
const HOSTILE_TITLE: &str = "<img src=x onerror=alert(1)><script>document.title=`pwned`</script>";

/// A daemon serving its web view on a free loopback port, with two plugins: `gate` (writes a
/// page, waits for the test to open the gate file, then reports [`HOSTILE_TITLE`]) and `stuck`
/// (ignores SIGTERM until it is killed at its timeout).
fn web_daemon(backend: &str) -> (TestDaemon, u16, PathBuf) {
    let mut daemon = TestDaemon::prepare_on(backend, "");
    let plugins = daemon.path("web-plugins");
    let gate = plugins.join("open-the-gate");
    plugin(
        &plugins,
        "gate",
        "on_Snapshot__10_gate.sh",
        &format!(
            "mkdir -p pages && echo '<p>archived</p>' > pages/page.html\n\
             for _ in $(seq 1 1200); do [ -e {gate} ] && break; sleep 0.1; done\n\
             printf '%s\\n' '{{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"{title}\"}}'\n",
            gate = gate.display(),
            title = HOSTILE_TITLE,
        ),
    );
    plugin(
        &plugins,
        "stuck",
        "on_Snapshot__10_stuck.sh",
        "trap '' TERM\nfor _ in $(seq 1 600); do sleep 0.1; done\n",
    );
    let port = free_port();
    daemon.write_config(&format!(
        "{}[timeouts]\nkill_grace = \"1s\"\n[plugins.stuck]\ntimeout = \"1s\"\n\
         [web]\nlisten = \"127.0.0.1:{port}\"\n",
        plugins_config(&[&plugins])
    ));
    daemon.launch();
    (daemon, port, gate)
}

/// Where a test keeps what it shows (screenshots): beside cargo's other test output.
fn kept(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("web")
        .join(name)
}

fn needs_chromium() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs Chromium: the web view must be tested in a real browser there"
        );
        eprintln!("skipped: no Chromium on this machine");
    }
    found
}

#[test]
fn the_page_follows_a_crawl_without_a_reload_and_keeps_outside_text_text() {
    let Some(chromium) = needs_chromium() else {
        return;
    };
    let (daemon, port, gate) = web_daemon("sqlite");
    let url = daemon.ctl_ok(&["web-url"]).trim().to_string();
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{port}/?token=")),
        "{url}"
    );
    let crawl = daemon.add(&["https://example.com/", "--plugins", "gate"]);

    let mut browser = Browser::open(&chromium, &daemon.tag, &url);
    wait_until("the page to load", WAIT, || {
        let loaded =
            "document.readyState === 'complete' && document.getElementById('live') !== null";
        (browser.eval(loaded) == true).then_some(())
    });
    browser.eval("window.loadedOnce = 'yes'");
    // The hook appears, running, with no reload.
    let running_hook = r#"[...document.querySelectorAll('#tree tr[data-kind="hook"].live')]
        .some(tr => tr.textContent.includes('on_Snapshot__10_gate.sh'))"#;
    wait_until("the gate hook's row, running", WAIT, || {
        (browser.eval(running_hook) == true).then_some(())
    });
    let host = browser.eval("document.getElementById('host').textContent");
    assert_eq!(host, abxd::identity::hostname().as_str());
    browser.screenshot(&kept("web-view-running.png"));
    eprintln!("screenshot: {}", kept("web-view-running.png").display());

    std::fs::write(&gate, "").unwrap();
    let ended_hook = r#"[...document.querySelectorAll('#tree tr[data-kind="hook"]')]
        .some(tr => tr.textContent.includes('on_Snapshot__10_gate.sh')
                    && tr.dataset.status === 'exited' && tr.textContent.includes('exited 0'))"#;
    wait_until("the gate hook's row, ended", WAIT, || {
        (browser.eval(ended_hook) == true).then_some(())
    });
    assert_eq!(
        browser.eval("window.loadedOnce"),
        "yes",
        "the page was reloaded"
    );
    let updates: u64 = browser
        .eval("document.body.dataset.updates")
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(updates >= 2, "{updates} updates through the event stream");
    daemon.wait_sealed(crawl, WAIT);
    wait_until("the crawl's row to say sealed", WAIT, || {
        let state = browser.eval(&format!(
            "document.querySelector('#crawl-{crawl}')?.textContent ?? ''"
        ));
        state.as_str().unwrap().contains("sealed").then_some(())
    });
    browser.screenshot(&kept("web-view-ended.png"));

    // The snapshot's page: the hostile title is text, nothing of it runs.
    let snapshot = daemon.store().crawls().snapshots(crawl).unwrap()[0].id;
    browser.navigate(&format!("http://127.0.0.1:{port}/snapshot/{snapshot}"));
    wait_until("the snapshot's results", WAIT, || {
        (browser.eval("document.querySelector('#results .output') !== null") == true).then_some(())
    });
    let output = browser.eval("document.querySelector('#results .output').textContent");
    assert_eq!(output, HOSTILE_TITLE);
    assert_eq!(
        browser.eval("document.querySelectorAll('#live img, #live script').length"),
        0
    );
    assert!(!browser
        .eval("document.title")
        .as_str()
        .unwrap()
        .contains("pwned"));
    // Its file is linked and served, read-only, sandboxed.
    let link = browser.eval("document.querySelector('#results .files a').getAttribute('href')");
    let link = link.as_str().unwrap().to_string();
    assert_eq!(link, format!("/files/{snapshot}/gate/pages/page.html"));
    browser.screenshot(&kept("web-view-snapshot.png"));
    let token = daemon.ctl_ok(&["web-url", "--token"]).trim().to_string();
    let bearer = format!("Authorization: Bearer {token}\r\n");
    let file = get(port, "GET", &link, &bearer);
    assert_eq!((file.status, file.body.trim()), (200, "<p>archived</p>"));
    assert!(file
        .header("content-security-policy")
        .is_some_and(|p| p.starts_with("sandbox")));
}

#[test]
fn requests_without_the_token_other_methods_and_paths_out_of_a_snapshot_are_refused() {
    let (daemon, port, gate) = web_daemon("sqlite");
    std::fs::write(&gate, "").unwrap();
    let crawl = daemon.add(&["https://example.com/", "--plugins", "gate"]);
    daemon.wait_sealed(crawl, WAIT);
    let snapshot = daemon.store().crawls().snapshots(crawl).unwrap()[0].id;
    let token = daemon.ctl_ok(&["web-url", "--token"]).trim().to_string();
    let bearer = format!("Authorization: Bearer {token}\r\n");

    // No token, a wrong one, a token of the wrong length: refused, nothing shown.
    for extra in [
        String::new(),
        format!("Authorization: Bearer {}\r\n", "0".repeat(64)),
        format!("Authorization: Bearer {}\r\n", &token[..63]),
    ] {
        for path in ["/", "/metrics", "/events", &format!("/snapshot/{snapshot}")] {
            let answer = get(port, "GET", path, &extra);
            assert_eq!(answer.status, 401, "{path} {extra:?}: {}", answer.body);
            assert!(answer.body.contains("abxctl web-url"), "{}", answer.body);
        }
    }
    // With it: the page; the link's token sets a cookie that lets the page's own requests in.
    let page = get(port, "GET", &format!("/?token={token}"), "");
    assert_eq!(page.status, 200);
    let cookie = page
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let script = get(port, "GET", "/app.js", &format!("Cookie: {cookie}\r\n"));
    assert_eq!(script.status, 200);
    assert!(page
        .header("content-security-policy")
        .is_some_and(|p| p.contains("default-src 'none'")));

    // Only GET and HEAD.
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        let answer = get(port, method, "/", &format!("{bearer}Content-Length: 0\r\n"));
        assert_eq!(answer.status, 405, "{method}");
        assert_eq!(answer.header("allow"), Some("GET, HEAD"));
    }
    let head = get(port, "HEAD", "/", &bearer);
    assert_eq!((head.status, head.body.as_str()), (200, ""));

    // Out of the snapshot's directory: by `..`, encoded or not, or through a symbolic link.
    let dir = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/snapshots/{snapshot}"));
    std::os::unix::fs::symlink(daemon.data_dir().join("web-token"), dir.join("gate/leak")).unwrap();
    std::fs::write(daemon.data_dir().join("secret.txt"), "secret").unwrap();
    for path in [
        "gate/leak".to_string(),
        "../../../../secret.txt".into(),
        "%2e%2e/%2e%2e/%2e%2e/%2e%2e/secret.txt".into(),
        "..%2f..%2f..%2f..%2fsecret.txt".into(),
        "gate/pages/%00page.html".into(),
        format!("{}/secret.txt", daemon.data_dir().display()),
    ] {
        let answer = get(port, "GET", &format!("/files/{snapshot}/{path}"), &bearer);
        assert_eq!(answer.status, 404, "{path}: {}", answer.body);
        assert!(!answer.body.contains("secret") && !answer.body.contains(&token));
    }
    let page = get(
        port,
        "GET",
        &format!("/files/{snapshot}/gate/pages/page.html"),
        &bearer,
    );
    assert_eq!(page.status, 200);
}

/// The samples of a `/metrics` text, as Prometheus' own parser reads them: `(name, labels,
/// value)`.
fn parsed_by_prometheus(text: &str) -> Option<Vec<(String, serde_json::Value, f64)>> {
    let Some(python) = std::env::var_os("ABXD_PROMETHEUS_PYTHON") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs prometheus_client (.ci/run): /metrics must be read by it there"
        );
        eprintln!("skipped: no ABXD_PROMETHEUS_PYTHON (run .ci/run's installs)");
        return None;
    };
    let mut child = std::process::Command::new(python)
        .args([
            "-c",
            "import sys, json\n\
             from prometheus_client.parser import text_string_to_metric_families as parse\n\
             print(json.dumps([[s.name, s.labels, s.value] for f in parse(sys.stdin.read()) for s in f.samples]))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "Prometheus' parser refused /metrics: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<(String, serde_json::Value, f64)> =
        serde_json::from_slice(&out.stdout).unwrap();
    Some(samples)
}

fn sample(
    samples: &[(String, serde_json::Value, f64)],
    name: &str,
    labels: &[(&str, &str)],
) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l[*k].as_str() == Some(*v)))
        .map(|(_, _, value)| value)
        .sum()
}

#[test]
fn metrics_are_read_by_prometheus_parser_and_say_what_the_run_did() {
    for backend in common::backends() {
        eprintln!("backend: {backend}");
        metrics_say_what_the_run_did(backend);
    }
}

fn metrics_say_what_the_run_did(backend: &str) {
    let (daemon, port, gate) = web_daemon(backend);
    std::fs::write(&gate, "").unwrap();
    let token = daemon.ctl_ok(&["web-url", "--token"]).trim().to_string();
    let bearer = format!("Authorization: Bearer {token}\r\n");
    // A scrape before anything ran: the tally starts from the table as it is.
    let before = get(port, "GET", "/metrics", &bearer);
    assert_eq!(before.status, 200);
    assert!(before
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/plain; version=0.0.4")));

    let first = daemon.add(&["https://example.com/", "--plugins", "gate"]);
    let second = daemon.add(&["https://example.org/", "--plugins", "gate,stuck"]);
    daemon.wait_sealed(first, WAIT);
    daemon.wait_sealed(second, WAIT);
    let text = get(port, "GET", "/metrics", &bearer).body;
    let Some(samples) = parsed_by_prometheus(&text) else {
        return;
    };
    let value = |name: &str, labels: &[(&str, &str)]| sample(&samples, name, labels);

    assert_eq!(
        value("abxd_hooks_started_total", &[("plugin", "gate")]),
        2.0
    );
    assert_eq!(
        value("abxd_hooks_started_total", &[("plugin", "stuck")]),
        1.0
    );
    assert_eq!(
        value(
            "abxd_hooks_ended_total",
            &[("plugin", "gate"), ("status", "succeeded")]
        ),
        2.0
    );
    assert_eq!(
        value(
            "abxd_hooks_ended_total",
            &[("plugin", "stuck"), ("status", "failed")]
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        value("abxd_hook_duration_seconds_count", &[("plugin", "gate")]),
        2.0
    );
    // The stuck hook ignored SIGTERM at its timeout: SIGKILL a second later, one teardown.
    assert_eq!(value("abxd_sigkills_sent_total", &[("kind", "hook")]), 1.0);
    assert_eq!(
        value("abxd_teardown_seconds_count", &[("kind", "hook")]),
        1.0
    );
    // It took about kill_grace (1 s): SIGTERM ignored, then SIGKILL.
    let teardown = value("abxd_teardown_seconds_sum", &[("kind", "hook")]);
    assert!(teardown > 0.5, "{teardown}");
    assert_eq!(
        value(
            "abxd_teardown_seconds_bucket",
            &[("kind", "hook"), ("le", "0.5")]
        ),
        0.0
    );
    assert_eq!(
        value(
            "abxd_teardown_seconds_bucket",
            &[("kind", "hook"), ("le", "+Inf")]
        ),
        1.0
    );
    assert_eq!(
        value("abxd_processes", &[("kind", "hook"), ("state", "exited")]),
        3.0
    );
    assert_eq!(
        value(
            "abxd_processes",
            &[("kind", "snapshot_worker"), ("state", "exited")]
        ),
        2.0
    );
    assert_eq!(
        value(
            "abxd_processes",
            &[("kind", "orchestrator"), ("state", "running")]
        ),
        1.0
    );
    assert_eq!(value("abxd_queued", &[("queue", "crawls")]), 0.0);
    assert_eq!(
        value("abxd_queue_oldest_due_seconds", &[("queue", "snapshots")]),
        0.0
    );
    // What the table says of every process of the run, counted the way /metrics counts it.
    let rows = daemon
        .store()
        .processes()
        .list(&abxd::store::ProcessFilter::default())
        .unwrap();
    let ended = rows.iter().filter(|r| !r.status.is_live());
    let count = |flag: fn(&abxd::store::ProcessRow) -> bool| {
        ended.clone().filter(|r| flag(r)).count() as f64
    };
    assert_eq!(
        value("abxd_escaped_processes_total", &[]),
        count(|r| r.escaped)
    );
    assert_eq!(
        value("abxd_leaked_processes_total", &[]),
        count(|r| r.leaking)
    );
    assert_eq!(
        value("abxd_unkillable_processes_total", &[]),
        count(|r| r.unkillable)
    );
    assert_eq!(
        value("abxd_sigkills_sent_total", &[]),
        count(|r| r.sigkill_at.is_some())
    );
    assert_eq!(
        value("abxd_teardown_seconds_count", &[]),
        count(|r| r.sigterm_at.is_some())
    );
    let torn_down: f64 = ended
        .clone()
        .filter_map(|r| Some((r.ended_at? - r.sigterm_at?).max(0) as f64 / 1000.0))
        .sum();
    let sum = value("abxd_teardown_seconds_sum", &[]);
    assert!((sum - torn_down).abs() < 1e-6, "{sum} against {torn_down}");
    assert!(value("abxd_resident_memory_bytes", &[("kind", "orchestrator")]) > 0.0);
    let hostname = abxd::identity::hostname();
    assert_eq!(value("abxd_info", &[("hostname", hostname.as_str())]), 1.0);
    assert_eq!(
        samples
            .iter()
            .filter(|(n, _, _)| n == "abxd_machine_heartbeat_age_seconds")
            .count(),
        1
    );

    // A scrape again counts nothing twice: every counter and histogram is as it was.
    let counted = |samples: &[(String, serde_json::Value, f64)]| -> Vec<String> {
        samples
            .iter()
            .filter(|(n, _, _)| {
                ["_total", "_count", "_sum", "_bucket"]
                    .iter()
                    .any(|end| n.ends_with(end))
                    && !n.starts_with("abxd_database_")
            })
            .map(|(n, l, v)| format!("{n}{l} {v}"))
            .collect()
    };
    let again = parsed_by_prometheus(&get(port, "GET", "/metrics", &bearer).body).unwrap();
    assert_eq!(counted(&again), counted(&samples));

    // A hook's end committed late, older than the newest end counted (a write the busy
    // database held back): the next scrape counts it, and once.
    let newest = rows.iter().filter_map(|r| r.ended_at).max().unwrap();
    // (A writer of its own, as a worker is.)
    let store = abxd::store::Store::open_existing_at(&daemon.location()).unwrap();
    ended_hook(&store, "late", newest - 60_000);
    let unknown = [("plugin", "unknown"), ("status", "exited")];
    let ended_unknown = |samples: &[(String, serde_json::Value, f64)]| {
        sample(samples, "abxd_hooks_ended_total", &unknown)
    };
    let before = ended_unknown(&again);
    let after = parsed_by_prometheus(&get(port, "GET", "/metrics", &bearer).body).unwrap();
    assert_eq!(ended_unknown(&after), before + 1.0, "{backend}");
    let later = parsed_by_prometheus(&get(port, "GET", "/metrics", &bearer).body).unwrap();
    assert_eq!(counted(&later), counted(&after), "{backend}");
}

/// A hook row that exited at `ended_at` (unix ms), written as a worker writes one: a row with
/// no result, its plugin `unknown`.
fn ended_hook(store: &abxd::store::Store, argv: &str, ended_at: i64) -> i64 {
    let id = (store.processes())
        .insert(&abxd::store::NewProcess {
            parent_id: None,
            kind: abxd::domain::Kind::Hook,
            crawl_id: None,
            snapshot_id: None,
            result_id: None,
            argv: vec![argv.into()],
            cwd: "/".into(),
            timeout_ms: None,
        })
        .unwrap();
    (store.processes())
        .record_end_at(
            id,
            Some(abxd::domain::ExitOutcome::Code(0)),
            abxd::domain::EndReason::Exited,
            None,
            ended_at,
        )
        .unwrap();
    id
}

/// A busy host ends thousands of processes a minute: the index's tree holds the newest
/// hundred of those that ended in the last minute, and says how many there were.
#[test]
fn the_index_shows_the_newest_hundred_of_what_ended_in_the_last_minute_and_counts_the_rest() {
    let (daemon, port, _gate) = web_daemon("sqlite");
    let token = daemon.ctl_ok(&["web-url", "--token"]).trim().to_string();
    let store = abxd::store::Store::open_existing_at(&daemon.location()).unwrap();
    let ended: Vec<i64> = (0..150)
        .map(|n| {
            ended_hook(
                &store,
                &format!("hook-{n}"),
                abxd::store::now_ms() - 30_000 + n,
            )
        })
        .collect();
    let bearer = format!("Authorization: Bearer {token}\r\n");
    let page = get(port, "GET", "/", &bearer);
    assert_eq!(page.status, 200);
    assert_eq!(
        page.body.matches("class=\"ended").count(),
        100,
        "{}",
        page.body
    );
    assert!(page.body.contains(&format!("id=\"row-{}\"", ended[149])));
    assert!(!page.body.contains(&format!("id=\"row-{}\"", ended[49])));
    let folded = page.body.split("id=\"folded\">").nth(1).unwrap();
    let count: u64 = folded
        .split(';')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(count >= 150, "{folded}");
    assert!(folded.contains("(the newest 100 shown"), "{folded}");
}

#[test]
fn on_a_unix_socket_the_view_needs_no_token_and_only_its_owner_may_connect() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("web.sock");
    let daemon = TestDaemon::start_with(&format!("[web]\nlisten = \"{}\"\n", socket.display()));
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let answer = exchange(stream, "GET /metrics HTTP/1.1\r\nHost: abxd\r\n\r\n");
    assert_eq!(answer.status, 200);
    assert!(answer
        .body
        .contains("abxd_processes{kind=\"orchestrator\",state=\"running\"} 1"));
    assert_eq!(
        daemon.ctl_ok(&["web-url"]).trim(),
        format!("unix:{}", socket.display())
    );
}

#[test]
fn with_the_view_on_and_nobody_looking_the_daemon_still_sleeps_without_a_timer() {
    let port = free_port();
    let daemon = TestDaemon::start_with(&format!("[web]\nlisten = \"127.0.0.1:{port}\"\n"));
    // A client came and went: its thread is gone with it.
    let token = daemon.ctl_ok(&["web-url", "--token"]).trim().to_string();
    let page = get(
        port,
        "GET",
        "/",
        &format!("Authorization: Bearer {token}\r\n"),
    );
    assert_eq!(page.status, 200);
    common::assert_sleeps_without_timer(daemon.pid());
    common::assert_threads_sleep_without_timer(daemon.pid());
}

#[test]
fn without_web_listen_nothing_listens_and_web_url_says_how_to_turn_it_on() {
    let daemon = TestDaemon::start();
    let out = daemon.ctl(&["web-url"]);
    assert_eq!(out.status.code(), Some(abxd::exit::USAGE));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[web] listen"), "{stderr}");
    assert!(!daemon.data_dir().join("web-token").exists());
    let threads = std::fs::read_dir(format!("/proc/{}/task", daemon.pid()))
        .unwrap()
        .count();
    assert_eq!(
        threads, 1,
        "the daemon runs no thread for a web view that is off"
    );
}

/// A worker's writes that found the database locked (an operator's `sqlite3` shell in
/// `BEGIN IMMEDIATE` while a hook ended) are counted in `/metrics` once the worker exits, apart
/// from the daemon's.
#[test]
fn a_workers_writes_that_found_the_database_busy_are_counted_in_metrics() {
    use abxd::domain::Kind;
    let (daemon, port, gate) = web_daemon("sqlite");
    let token = daemon.ctl_ok(&["web-url", "--token"]).trim().to_string();
    let bearer = format!("Authorization: Bearer {token}\r\n");
    let crawl = daemon.add(&["https://example.com/", "--plugins", "gate"]);
    let worker = common::wait_until("the gate hook to run", WAIT, || {
        let rows = daemon.store().processes().list(&Default::default()).ok()?;
        let hook_runs = rows
            .iter()
            .any(|r| r.kind == Kind::Hook && r.status.is_live());
        let worker = rows.into_iter().find(|r| r.kind == Kind::SnapshotWorker)?;
        hook_runs.then_some(worker)
    });
    let foreign = rusqlite::Connection::open(daemon.database()).unwrap();
    foreign.execute_batch("BEGIN IMMEDIATE").unwrap();
    std::fs::write(&gate, "").unwrap();
    let stderr = PathBuf::from(worker.stderr_path.clone().unwrap());
    common::wait_until("the worker to find the database busy", WAIT, || {
        let log = std::fs::read_to_string(&stderr).unwrap_or_default();
        log.contains("is recorded later").then_some(())
    });
    foreign.execute_batch("ROLLBACK").unwrap();
    daemon.wait_sealed(crawl, WAIT);
    // (Written by the worker as it exits, which may be just after the crawl is sealed.)
    let text = common::wait_until("the worker's counts in /metrics", WAIT, || {
        let text = get(port, "GET", "/metrics", &bearer).body;
        let line = text
            .lines()
            .find(|l| l.starts_with("abxd_database_busy_writes_total{process=\"workers\"}"))?;
        let busy: u64 = line.rsplit(' ').next()?.parse().ok()?;
        (busy >= 1).then_some(text)
    });
    if let Some(samples) = parsed_by_prometheus(&text) {
        let workers = &[("process", "workers")];
        assert!(sample(&samples, "abxd_database_busy_writes_total", workers) >= 1.0);
        let daemon = &[("process", "daemon")];
        let daemon_busy = sample(&samples, "abxd_database_busy_writes_total", daemon);
        println!("busy writes: daemon {daemon_busy}");
    }
}

/// The first screen is for a person: the crawls come first — how far each is, what failed,
/// linked to the crawl's page and from there to each snapshot's outputs — then the live tree,
/// its ended processes folded away (as `abxctl ps` folds them without `--all`) until asked for,
/// each command on one line and whole when opened.
#[test]
fn the_first_screen_shows_the_crawls_and_folds_what_ended() {
    let Some(chromium) = needs_chromium() else {
        return;
    };
    let (daemon, port, gate) = web_daemon("sqlite");
    std::fs::write(&gate, "").unwrap();
    let plugins = daemon.path("web-plugins");
    plugin(
        &plugins,
        "broken",
        "on_Snapshot__20_broken.sh",
        "echo 'the page would not load' >&2\nexit 1\n",
    );
    let crawl = daemon.add(&[
        "http://127.0.0.1:9/a",
        "http://127.0.0.1:9/b",
        "-p",
        "gate,broken",
    ]);
    daemon.wait_sealed(crawl, WAIT);
    let url = daemon.ctl_ok(&["web-url"]).trim().to_string();
    let mut browser = Browser::open(&chromium, &daemon.tag, &url);
    wait_until("the page to load", WAIT, || {
        let loaded =
            "document.readyState === 'complete' && document.getElementById('crawls') !== null";
        (browser.eval(loaded) == true).then_some(())
    });
    browser.screenshot(&kept("web-view-first-screen.png"));
    eprintln!(
        "screenshot: {}",
        kept("web-view-first-screen.png").display()
    );

    // The crawls first, within the first screen: its progress and its failures, linked.
    let first = browser.eval(
        "document.getElementById('crawls').getBoundingClientRect().top < \
         document.getElementById('tree').getBoundingClientRect().top && \
         document.getElementById('crawls').getBoundingClientRect().bottom < window.innerHeight",
    );
    assert_eq!(first, true, "the crawls are the first thing on the screen");
    let progress = browser.eval(&format!(
        "[document.querySelector('#crawl-{crawl} progress').value, \
          document.querySelector('#crawl-{crawl} progress').max]"
    ));
    assert_eq!(progress, serde_json::json!([2, 2]));
    let failed = browser.eval(&format!(
        "document.querySelector('#crawl-{crawl} a.bad').getAttribute('href') + ' ' + \
         document.querySelector('#crawl-{crawl} a.bad').textContent"
    ));
    assert_eq!(failed, format!("/crawl/{crawl}#failed 2 failed").as_str());

    // What ended is folded away: there, but not shown until asked for.
    let shown = |browser: &mut Browser| {
        browser.eval(
            "[...document.querySelectorAll('#tree tr.ended')]
                .map(tr => getComputedStyle(tr).display !== 'none')",
        )
    };
    let ended = shown(&mut browser);
    let ended = ended.as_array().unwrap();
    assert!(
        ended.len() >= 4,
        "the workers and hooks that ran: {ended:?}"
    );
    assert!(
        ended.iter().all(|s| s == false),
        "ended rows shown: {ended:?}"
    );
    browser.eval("document.getElementById('show-ended').click()");
    let ended = shown(&mut browser);
    assert!(
        ended.as_array().unwrap().iter().all(|s| s == true),
        "{ended:?}"
    );

    // A command on one line, whole when opened.
    let lines = browser.eval(
        "[...document.querySelectorAll('#tree tr[data-kind=\"hook\"] td.cmd summary')]
            .map(s => Math.round(s.getBoundingClientRect().height
                                 / parseFloat(getComputedStyle(s).lineHeight)))",
    );
    let lines = lines.as_array().unwrap();
    assert!(
        !lines.is_empty() && lines.iter().all(|n| n == 1),
        "{lines:?}"
    );
    let whole = browser.eval(
        "(() => { const d = document.querySelector('#tree tr[data-kind=\"hook\"] td.cmd details');
                  d.open = true; return d.querySelector('.whole').getBoundingClientRect().height
                  > 0 && d.querySelector('.whole').textContent.includes('--snapshot-id='); })()",
    );
    assert_eq!(whole, true);
    browser.screenshot(&kept("web-view-ended-shown.png"));

    // The crawl's page lists what failed, each linked to its snapshot's page and outputs.
    browser.navigate(&format!("http://127.0.0.1:{port}/crawl/{crawl}"));
    wait_until("the crawl's failures", WAIT, || {
        (browser.eval("document.querySelectorAll('#failures tr.failed').length") == 2).then_some(())
    });
    let link = browser.eval("document.querySelector('#failures a').getAttribute('href')");
    assert!(link.as_str().unwrap().starts_with("/snapshot/"), "{link}");
}

/// A crawl's page holds a page of its snapshots, says which, and links the pages around it: a
/// crawl of 100,000 snapshots costs a page, not the crawl.
#[test]
fn a_crawls_page_pages_its_snapshots() {
    let (daemon, port, gate) = web_daemon("sqlite");
    std::fs::write(&gate, "").unwrap();
    let seeds: Vec<String> = (1..=105)
        .map(|n| format!("http://127.0.0.1:9/page-{n}"))
        .collect();
    let mut args: Vec<&str> = seeds.iter().map(String::as_str).collect();
    args.extend(["--plugins", "gate"]);
    let crawl = daemon.add(&args);
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(180));
    let token = daemon.ctl_ok(&["web-url", "--token"]).trim().to_string();
    let bearer = format!("Authorization: Bearer {token}\r\n");

    let first = get(port, "GET", &format!("/crawl/{crawl}"), &bearer);
    assert_eq!(first.status, 200, "{}", first.body);
    assert!(
        first.body.contains("snapshots 1–100 of 105"),
        "{}",
        first.body
    );
    let next = format!("href=\"/crawl/{crawl}/page/2\"");
    assert!(first.body.contains(&next), "{}", first.body);
    assert!(first.body.contains(">http://127.0.0.1:9/page-100<"));
    assert!(!first.body.contains(">http://127.0.0.1:9/page-101<"));

    let second = get(port, "GET", &format!("/crawl/{crawl}/page/2"), &bearer);
    assert_eq!(second.status, 200, "{}", second.body);
    assert!(
        second.body.contains("snapshots 101–105 of 105"),
        "{}",
        second.body
    );
    assert!(second.body.contains(&format!("href=\"/crawl/{crawl}\"")));
    assert!(second.body.contains(">http://127.0.0.1:9/page-105<"));
    assert!(!second.body.contains(">http://127.0.0.1:9/page-100<"));
}
