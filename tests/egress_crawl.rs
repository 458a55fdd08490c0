//! The egress policy on real crawls: a daemon in a network namespace of the test's own, whose
//! loopback also holds a "public" site's address, the metadata address and a private network's
//! (no packet leaves it), and whose resolver (named by a resolv.conf bound over the host's, in a
//! mount namespace of the test's own) answers every name with 127.0.0.1 — DNS rebinding. A
//! crawl's hook fetches what a hostile page steers it at with curl and wget: every server that
//! must not be reached logs what it gets — nothing.
//!
//! Where the kernel cannot hold a crawl to its policy (procfs containment), a restricted crawl is
//! refused, and one queued before runs nothing.
//!
//! The crawls need root, cgroup v2 and cgroup BPF (CI has them); elsewhere they say they skip.

mod common;

use common::{fixtures, plugins_config, TestDaemon, WAIT};
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener, UdpSocket};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// The "public" site: an address no range of abxd's calls non-public.
const PUBLIC: Ipv4Addr = Ipv4Addr::new(93, 184, 216, 34);
const METADATA: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
/// A private network the operator may allow.
const INTRANET: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
/// The resolver resolv.conf names, on loopback as systemd-resolved's is.
const RESOLVER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 53);

/// The request lines a server got.
type Log = Arc<Mutex<Vec<String>>>;

/// An HTTP server on `addr` that logs each request line and answers `route(path)`: a body, or a
/// redirect (`Err(location)`).
fn http_server(
    addr: (Ipv4Addr, u16),
    route: fn(&str, u16) -> Result<String, String>,
) -> (u16, Log) {
    let listener = TcpListener::bind(addr).unwrap();
    let port = listener.local_addr().unwrap().port();
    let log: Log = Arc::default();
    let seen = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            // (The rest of the request, up to its blank line.)
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                header.clear();
            }
            seen.lock().unwrap().push(line.trim().to_string());
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            let answer = match route(&path, port) {
                Ok(body) => format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                ),
                Err(location) => format!(
                    "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\
                     Connection: close\r\n\r\n"
                ),
            };
            let _ = (&stream).write_all(answer.as_bytes());
        }
    });
    (port, log)
}

/// A DNS server on `addr`:53 that answers every A question with 127.0.0.1, and logs the names.
fn rebinding_resolver(addr: Ipv4Addr) -> Log {
    let socket = UdpSocket::bind((addr, 53)).unwrap();
    let log: Log = Arc::default();
    let seen = log.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            let query = &buf[..n];
            if n < 12 {
                continue;
            }
            // The question: labels from byte 12 up to the root, then type and class.
            let mut at = 12;
            let mut labels = Vec::new();
            while at < n && query[at] != 0 {
                let len = query[at] as usize;
                labels.push(String::from_utf8_lossy(&query[at + 1..at + 1 + len]).to_string());
                at += 1 + len;
            }
            let end = at + 5;
            let qtype = u16::from_be_bytes([query[at + 1], query[at + 2]]);
            seen.lock().unwrap().push(labels.join("."));
            let mut answer = query[..end].to_vec();
            answer[2] = 0x81; // a response, recursion desired
            answer[3] = 0x80; // recursion available, no error
            let answers: u16 = if qtype == 1 { 1 } else { 0 };
            answer[6..8].copy_from_slice(&answers.to_be_bytes());
            answer[8..12].fill(0);
            if qtype == 1 {
                answer.extend([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
            }
            let _ = socket.send_to(&answer, from);
        }
    });
    log
}

/// The servers a hostile page steers a hook at — loopback (its port also in
/// `ABXD_TEST_PRIVATE_PORT`, for a route to redirect to), the metadata address, the intranet —
/// each logging what reaches it.
struct SteeredAt {
    private_port: u16,
    private: Log,
    metadata: Log,
    intranet: Log,
}

fn steered_at() -> SteeredAt {
    let (private_port, private) = http_server((Ipv4Addr::LOCALHOST, 0), |_, _| Ok("secret".into()));
    let (_, metadata) = http_server((METADATA, 80), |_, _| Ok("credentials".into()));
    let (_, intranet) = http_server((INTRANET, 80), |_, _| Ok("intranet".into()));
    // (A route cannot capture: the private port comes through an environment variable.)
    std::env::set_var("ABXD_TEST_PRIVATE_PORT", private_port.to_string());
    SteeredAt {
        private_port,
        private,
        metadata,
        intranet,
    }
}

/// Asserts that none of `servers` (a log, and what it stands for) got a request.
fn assert_unreached(servers: &[(&Log, &str)]) {
    for (log, what) in servers {
        assert_eq!(*log.lock().unwrap(), Vec::<String>::new(), "{what} reached");
    }
}

/// Moves this test's thread (and all it starts from now on) into a network namespace of its own
/// whose loopback also holds the public, metadata and intranet addresses, and a mount namespace
/// whose resolv.conf names [`RESOLVER`]. `None` where it cannot (not root).
fn isolated_network(dir: &std::path::Path) -> Option<()> {
    use nix::mount::{mount, MsFlags};
    use nix::sched::{unshare, CloneFlags};
    if !rustix::process::geteuid().is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs the tests as root"
        );
        eprintln!("skipped: needs root (a network namespace, cgroup BPF)");
        return None;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs iproute2: the test's network needs `ip`"
        );
        eprintln!("skipped: needs `ip` to address its network (apt-get install iproute2)");
        return None;
    }
    unshare(CloneFlags::CLONE_NEWNET | CloneFlags::CLONE_NEWNS).expect("new namespaces");
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .expect("private mounts");
    let resolv = dir.join("resolv.conf");
    std::fs::write(&resolv, format!("nameserver {RESOLVER}\n")).unwrap();
    mount(
        Some(&resolv),
        "/etc/resolv.conf",
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .expect("bind resolv.conf");
    let ip = |args: &[&str]| {
        let status = Command::new("ip").args(args).status().expect("run ip");
        assert!(status.success(), "ip {args:?}");
    };
    ip(&["link", "set", "lo", "up"]);
    for addr in [PUBLIC, METADATA, INTRANET] {
        ip(&["addr", "add", &format!("{addr}/32"), "dev", "lo"]);
    }
    Some(())
}

/// The lines the fetch hook of `crawl` wrote ("<tool> <url> <exit code>", "resolved …").
fn fetched(daemon: &TestDaemon, crawl: i64) -> Vec<String> {
    let rows = (daemon.store().processes())
        .list(&abxd::store::ProcessFilter::default())
        .unwrap();
    let hook = (rows.iter())
        .find(|r| r.crawl_id == Some(crawl) && r.kind == abxd::domain::Kind::Hook)
        .unwrap_or_else(|| panic!("no hook ran in crawl {crawl}\n{}", daemon.log()));
    let log = hook.stdout_path.clone().unwrap();
    let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{log}: {e}"));
    text.lines().map(str::to_string).collect()
}

fn exit_of(lines: &[String], tool: &str, url: &str) -> String {
    let prefix = format!("{tool} {url} ");
    (lines.iter())
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {tool} of {url} in {lines:#?}"))
        .to_string()
}

#[test]
fn a_crawled_page_steers_no_hook_at_loopback_the_metadata_address_or_a_name_resolved_there() {
    let scratch = tempfile::tempdir().unwrap();
    if isolated_network(scratch.path()).is_none() {
        return;
    }
    let dns = rebinding_resolver(RESOLVER);
    let SteeredAt {
        private_port,
        private,
        metadata,
        intranet,
    } = steered_at();
    let (_, public) = http_server((PUBLIC, 80), |path, _| match path {
        "/redirect" => {
            let port = std::env::var("ABXD_TEST_PRIVATE_PORT").unwrap();
            Err(format!("http://127.0.0.1:{port}/secret"))
        }
        _ => Ok(format!("<img src=\"http://{METADATA}/latest/meta-data/\">")),
    });
    let redirect = format!("http://{PUBLIC}/redirect");
    let meta = format!("http://{METADATA}/latest/meta-data/");
    let rebound = format!("http://rebind.test:{private_port}/secret");
    let allowed = format!("http://{INTRANET}/");
    let mut daemon = TestDaemon::prepare(&format!(
        "{}[plugins.fetch]\nenv = {{ TARGETS = {:?}, NAMES = \"rebind.test\" }}\n",
        plugins_config(&[&fixtures().join("egress")]),
        format!("{redirect} {meta} {rebound} {allowed}")
    ));
    daemon.launch();
    assert!(
        daemon.ctl_ok(&["status"]).contains("egress:   restricted"),
        "{}",
        daemon.ctl_ok(&["status"])
    );

    // A public seed: what it steers at is refused, the page itself archived.
    let seed = format!("http://{PUBLIC}/");
    let crawl = daemon.add(&[&seed, "--plugins", "fetch"]);
    daemon.wait_sealed(crawl, WAIT);
    let lines = fetched(&daemon, crawl);
    assert_eq!(exit_of(&lines, "curl", &seed), "0", "{lines:#?}");
    assert_eq!(exit_of(&lines, "wget", &seed), "0", "{lines:#?}");
    for url in [&redirect, &meta, &rebound, &allowed] {
        assert_ne!(exit_of(&lines, "curl", url), "0", "{url}: {lines:#?}");
        assert_ne!(exit_of(&lines, "wget", url), "0", "{url}: {lines:#?}");
    }
    // DNS works: the name was resolved (to loopback), and then not reached.
    assert!(
        lines.contains(&"resolved rebind.test 127.0.0.1".to_string()),
        "{lines:#?}"
    );
    assert!(dns.lock().unwrap().iter().any(|n| n == "rebind.test"));
    assert!(public
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.starts_with("GET /redirect")));
    assert_unreached(&[
        (&private, "loopback"),
        (&metadata, "metadata"),
        (&intranet, "intranet"),
    ]);
    // Each refusal is counted on the crawl, by reason.
    let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
    for reason in ["connect_loopback", "connect_metadata", "connect_private"] {
        assert!(shown.contains(reason), "{reason} not counted:\n{shown}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&daemon.ctl_ok(&["show", "--json", &crawl.to_string()])).unwrap();
    // (curl and wget each tried the metadata address once, at least.)
    let metadata_count = json["crawl"]["refused"]["connect_metadata"]["count"].as_u64();
    assert!(metadata_count.is_some_and(|n| n >= 2), "{json}");
    // (What `/metrics` reports: every crawl's, by reason.)
    let totals = daemon.store().crawls().refusal_totals().unwrap();
    let metadata_total = totals.get(&abxd::domain::Refusal::ConnectMetadata).copied();
    assert_eq!(metadata_total, metadata_count, "{totals:?}");

    // A network the operator allowed is reached; the metadata address never.
    let crawl = daemon.add(&[
        &seed,
        "--plugins",
        "fetch",
        "--allow-network",
        "10.9.0.0/24",
    ]);
    daemon.wait_sealed(crawl, WAIT);
    let lines = fetched(&daemon, crawl);
    assert_eq!(exit_of(&lines, "curl", &allowed), "0", "{lines:#?}");
    assert!(!intranet.lock().unwrap().is_empty());
    assert_unreached(&[(&metadata, "metadata")]);

    // A crawl seeded on loopback archives loopback pages (and still not the metadata).
    let local_seed = format!("http://127.0.0.1:{private_port}/page");
    let crawl = daemon.add(&[&local_seed, "--plugins", "fetch"]);
    daemon.wait_sealed(crawl, WAIT);
    let lines = fetched(&daemon, crawl);
    assert_eq!(exit_of(&lines, "curl", &local_seed), "0", "{lines:#?}");
    assert!(private
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.starts_with("GET /page")));
    assert_ne!(exit_of(&lines, "curl", &meta), "0", "{lines:#?}");
    assert_unreached(&[(&metadata, "metadata")]);
}

/// The public page Chromium loads: its subresources steer at loopback (directly, through a
/// redirect of the public site, and through a name that resolves there), at the metadata
/// address and at the intranet.
fn hostile_page(private_port: u16) -> String {
    format!(
        "<html><head><title>A public page</title></head><body><h1>public</h1>\
         <img src=\"http://{METADATA}/latest/meta-data/\">\
         <iframe src=\"http://{PUBLIC}/redirect\"></iframe>\
         <iframe src=\"http://127.0.0.1:{private_port}/direct\"></iframe>\
         <img src=\"http://rebind.test:{private_port}/rebound.png\">\
         <img src=\"http://{INTRANET}/intranet.png\"></body></html>"
    )
}

#[test]
fn chromium_through_archiveboxs_plugins_archives_a_public_page_and_reaches_nothing_it_steers_at() {
    let Some(tools) = common::abx::Tools::find() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    if isolated_network(scratch.path()).is_none() {
        return;
    }
    let _dns = rebinding_resolver(RESOLVER);
    let SteeredAt {
        private,
        metadata,
        intranet,
        ..
    } = steered_at();
    let (_, public) = http_server((PUBLIC, 80), |path, _| {
        let port: u16 = std::env::var("ABXD_TEST_PRIVATE_PORT")
            .unwrap()
            .parse()
            .unwrap();
        match path {
            "/redirect" => Err(format!("http://127.0.0.1:{port}/redirected")),
            _ => Ok(hostile_page(port)),
        }
    });
    let root = common::abx::plugins_of(&tools.venv);
    let mut daemon = TestDaemon::prepare(&plugins_config(&[&root]));
    let env = tools.env(&[]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    daemon.launch_with_env(&env);
    let plugins = "chrome,title";
    let installed = daemon
        .abxd_command(&["install", "--plugins", plugins])
        .env("PATH", tools.path())
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "abxd install: {installed:?}\n{}",
        daemon.log()
    );

    let seed = format!("http://{PUBLIC}/");
    let crawl = daemon.add(&["--plugins", plugins, &seed]);
    daemon.wait_sealed(crawl, std::time::Duration::from_secs(240));
    let store = daemon.store();
    let results = store.results().of_crawl(crawl).unwrap();
    // The browser ran, its tab navigated (through its DevTools port on loopback: the crawl's
    // own listener), and the page was archived.
    for hook in ["chrome_launch", "chrome_tab", "chrome_navigate", "title"] {
        let result = (results.iter())
            .find(|r| r.hook.contains(hook))
            .unwrap_or_else(|| panic!("no {hook} result: {results:#?}"));
        assert_eq!(result.status, "succeeded", "{result:?}\n{}", daemon.log());
    }
    let snapshot = store.crawls().snapshots(crawl).unwrap()[0].id;
    let title_dir = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/snapshots/{snapshot}/title"));
    let title = std::fs::read_to_string(title_dir.join("title.txt")).unwrap_or_default();
    assert_eq!(title.trim(), "A public page");
    assert!(public
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.starts_with("GET / ")));
    assert_unreached(&[
        (&private, "loopback"),
        (&metadata, "metadata"),
        (&intranet, "intranet"),
    ]);
    let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
    assert!(shown.contains("connect_metadata"), "{shown}");
}

#[test]
fn where_the_kernel_cannot_restrict_egress_a_restricted_crawl_is_refused_saying_why() {
    // (procfs containment: no cgroup of abxd's own to attach the policy to.)
    let mut daemon = TestDaemon::prepare(&format!(
        "{}[limits]\ncontainment = \"procfs\"\n",
        plugins_config(&[&fixtures().join("egress")])
    ));
    // A crawl queued while the daemon is down is judged when its worker starts.
    daemon.create_database();
    let queued = daemon.add(&["http://127.0.0.1:9/", "--plugins", "fetch"]);
    // `abxd run` refuses it before it runs anything.
    let run = daemon
        .abxd_command(&["run", "--plugins", "fetch", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    // (Its stderr is the daemon's log.)
    let said = daemon.log();
    assert_eq!(run.status.code(), Some(2), "{said}");
    assert!(
        said.contains("crawl not run: its hooks' egress cannot be restricted"),
        "{said}"
    );
    assert!(
        common::tagged_pids(&daemon.tag).is_empty(),
        "abxd run left something running"
    );
    daemon.launch();
    let status = daemon.ctl_ok(&["status"]);
    assert!(status.contains("egress:   NOT IN FORCE"), "{status}");
    assert!(status.contains("no cgroup of its own"), "{status}");

    let refused = daemon.ctl(&["add", "http://127.0.0.1:9/", "--plugins", "fetch"]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("egress cannot be restricted"), "{said}");
    assert!(said.contains("egress = \"unrestricted\""), "{said}");
    assert!(said.contains("nothing was queued"), "{said}");

    daemon.wait_sealed(queued, WAIT);
    let store = daemon.store();
    let crawl = store.crawls().get(queued).unwrap().unwrap();
    assert_eq!(crawl.outcome.map(|o| o.as_str()), Some("failed"));
    let hooks = (store.processes().list(&Default::default()).unwrap())
        .into_iter()
        .filter(|r| r.crawl_id == Some(queued) && r.kind == abxd::domain::Kind::Hook)
        .count();
    assert_eq!(hooks, 0, "a hook of an unprotected crawl ran");

    // Unrestricted on purpose, it runs.
    let unprotected = daemon.add(&[
        "http://127.0.0.1:9/",
        "--plugins",
        "fetch",
        "--egress",
        "unrestricted",
    ]);
    daemon.wait_sealed(unprotected, WAIT);
    let crawl = daemon.store().crawls().get(unprotected).unwrap().unwrap();
    assert_eq!(crawl.outcome.map(|o| o.as_str()), Some("finished"));
}

#[test]
fn an_import_of_bookmarks_on_loopback_fetches_them_and_nothing_else_local() {
    let scratch = tempfile::tempdir().unwrap();
    if isolated_network(scratch.path()).is_none() {
        return;
    }
    let (private_port, private) = http_server((Ipv4Addr::LOCALHOST, 0), |_, _| Ok("mine".into()));
    let (_, metadata) = http_server((METADATA, 80), |_, _| Ok("credentials".into()));
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let meta = format!("http://{METADATA}/latest/meta-data/");
    let mut daemon = TestDaemon::prepare(&format!(
        "{}[plugins.fetch]\nenv = {{ TARGETS = {meta:?} }}\n",
        plugins_config(&[&fixtures().join("egress"), &manifest.join("plugins")])
    ));
    daemon.launch();
    // The operator's bookmarks: a page of their own, on loopback. Its import has no seeds
    // until it is parsed; then it is a local crawl, as the URL rule says.
    let bookmark = format!("http://127.0.0.1:{private_port}/bookmarked");
    let bookmarks = scratch.path().join("bookmarks.html");
    std::fs::write(
        &bookmarks,
        format!(
            "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n<DT><A HREF=\"{bookmark}\">mine</A>\n\
             </DL><p>\n"
        ),
    )
    .unwrap();
    let crawl = daemon.add(&[
        "--plugins",
        "fetch,parse_netscape_urls",
        "--from",
        &bookmarks.display().to_string(),
    ]);
    daemon.wait_sealed(crawl, WAIT);
    let rows = (daemon.store().processes())
        .list(&abxd::store::ProcessFilter::default())
        .unwrap();
    let fetch = (rows.iter())
        .find(|r| {
            r.crawl_id == Some(crawl)
                && r.argv[0].ends_with("on_Snapshot__10_fetch.sh")
                && r.argv.iter().any(|a| a.contains("bookmarked"))
        })
        .unwrap_or_else(|| panic!("no fetch of the bookmark\n{}", daemon.log()));
    let lines = std::fs::read_to_string(fetch.stdout_path.clone().unwrap()).unwrap();
    let lines: Vec<String> = lines.lines().map(str::to_string).collect();
    assert_eq!(exit_of(&lines, "curl", &bookmark), "0", "{lines:#?}");
    assert!(private
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.starts_with("GET /bookmarked")));
    assert_ne!(exit_of(&lines, "curl", &meta), "0", "{lines:#?}");
    assert_unreached(&[(&metadata, "metadata")]);
}
