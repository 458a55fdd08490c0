//! A crawl's rules and who its hooks run as, along the operator's path: `abxctl add` with
//! ArchiveBox's flags (or `[crawl]`'s defaults), hooks that discover links past those rules or
//! archive without end, and a root abxd that runs hooks as an unprivileged user — or refuses to
//! start a crawl when none is configured.

mod common;

use common::{fixtures, hook_user, plugins_config, wait_until, TestDaemon, HOOK_USER, WAIT};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};

fn rules_config(extra: &str) -> String {
    format!(
        "{}{extra}",
        plugins_config(&[&fixtures().join("rules"), &fixtures().join("plugins")])
    )
}

fn shown(daemon: &TestDaemon, crawl: i64) -> serde_json::Value {
    serde_json::from_str(&daemon.ctl_ok(&["show", "--json", &crawl.to_string()])).unwrap()
}

fn snapshot_urls(daemon: &TestDaemon, crawl: i64) -> Vec<String> {
    let mut urls: Vec<String> = (daemon.store().crawls().snapshots(crawl).unwrap())
        .into_iter()
        .map(|s| s.url)
        .collect();
    urls.sort();
    urls
}

#[test]
fn discovered_urls_follow_the_crawls_lists_and_scope_and_each_refusal_is_counted_by_reason() {
    let daemon = TestDaemon::start_with(&rules_config(""));
    let crawl = daemon.add(&[
        "http://127.0.0.1:9/",
        "--plugins",
        "links",
        "--depth",
        "1",
        "--url-allowlist",
        "/docs/",
        "--url-denylist",
        r"\.pdf$",
        "--scope",
        "host",
    ]);
    daemon.wait_sealed(crawl, WAIT);
    assert_eq!(
        snapshot_urls(&daemon, crawl),
        [
            "http://127.0.0.1:9/",
            "http://127.0.0.1:9/docs/a.html",
            "http://127.0.0.1:9/docs/e.html",
            "http://127.0.0.1:9/docs/f.html",
        ]
    );
    let shown = shown(&daemon, crawl);
    let refused = &shown["crawl"]["refused"];
    assert_eq!(
        refused["denylist"]["first"][0],
        "http://127.0.0.1:9/docs/b.pdf"
    );
    assert_eq!(
        refused["allowlist"]["first"][0],
        "http://127.0.0.1:9/blog/c.html"
    );
    assert_eq!(
        refused["scope"]["first"][0],
        "http://other.localhost:9/docs/d.html"
    );
    for reason in ["denylist", "allowlist", "scope"] {
        assert_eq!(refused[reason]["count"], 1, "{reason}: {refused}");
    }
    // The crawl keeps its rules, and shows them.
    assert_eq!(shown["crawl"]["rules"]["scope"], "host", "{shown}");
    assert_eq!(shown["crawl"]["rules"]["url_denylist"][0], r"\.pdf$");
    let text = daemon.ctl_ok(&["show", &crawl.to_string()]);
    assert!(
        text.contains("refused: 1 denylist: http://127.0.0.1:9/docs/b.pdf"),
        "{text}"
    );
    assert!(text.contains("scope host"), "{text}");
}

#[test]
fn max_urls_caps_the_snapshots_by_flag_or_by_crawl_default_and_the_crawl_says_so() {
    let daemon = TestDaemon::start_with(&rules_config("[crawl]\nmax_urls = 3\n"));
    let by_default = daemon.add(&["http://127.0.0.1:9/", "--plugins", "links", "--depth", "1"]);
    let lifted = daemon.add(&[
        "http://127.0.0.1:9/",
        "--plugins",
        "links",
        "--depth",
        "1",
        "--max-urls",
        "0",
    ]);
    daemon.wait_sealed(by_default, WAIT);
    daemon.wait_sealed(lifted, WAIT);
    let capped = daemon.store().crawls().get(by_default).unwrap().unwrap();
    assert_eq!(
        daemon.store().crawls().snapshots(by_default).unwrap().len(),
        3
    );
    assert_eq!(capped.outcome.unwrap().as_str(), "finished");
    assert_eq!(capped.ended_by.map(|l| l.as_str()), Some("max_urls"));
    // Four of the six links were past the cap: turned away, counted, never silently.
    let refused = &shown(&daemon, by_default)["crawl"]["refused"];
    assert_eq!(refused["max_urls"]["count"], 4, "{refused}");
    let text = daemon.ctl_ok(&["show", &by_default.to_string()]);
    assert!(text.contains("ended by max_urls"), "{text}");
    // An explicit 0 lifts the default: the seed and its six links.
    assert_eq!(daemon.store().crawls().snapshots(lifted).unwrap().len(), 7);
    let lifted = daemon.store().crawls().get(lifted).unwrap().unwrap();
    assert_eq!(lifted.ended_by, None);
}

#[test]
fn a_snapshot_past_its_max_size_is_torn_down_and_sealed_saying_so_and_the_crawl_goes_on() {
    let daemon = TestDaemon::start_with(&rules_config(""));
    let crawl = daemon.add(&[
        "http://127.0.0.1:9/",
        "--plugins",
        "grows,ok",
        "--snapshot-max-size",
        "1M",
    ]);
    daemon.wait_sealed(crawl, WAIT);
    let store = daemon.store();
    let snapshot = &store.crawls().snapshots(crawl).unwrap()[0];
    assert_eq!(
        snapshot.ended_by.map(|l| l.as_str()),
        Some("snapshot_max_size")
    );
    let statuses: Vec<(String, String)> = (store.results().of_crawl(crawl).unwrap())
        .into_iter()
        .map(|r| (r.plugin, r.status.to_string()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("grows".to_string(), "cancelled".to_string()),
            ("ok".to_string(), "cancelled".to_string())
        ]
    );
    let crawl_row = store.crawls().get(crawl).unwrap().unwrap();
    assert_eq!(crawl_row.outcome.unwrap().as_str(), "finished");
    assert_eq!(crawl_row.ended_by, None);
    let text = daemon.ctl_ok(&["show", &crawl.to_string()]);
    assert!(text.contains("ended by snapshot_max_size"), "{text}");
}

#[test]
fn a_crawl_past_its_max_size_or_its_timeout_is_cancelled_saying_which_limit_and_nothing_runs_on() {
    let daemon = TestDaemon::start_with(&rules_config(""));
    let sized = daemon.add(&[
        "http://127.0.0.1:9/size",
        "--plugins",
        "grows",
        "--crawl-max-size",
        "1M",
    ]);
    let timed = daemon.add(&[
        "http://127.0.0.1:9/time",
        "--plugins",
        "grows",
        "--max-size",
        "0",
        "--timeout",
        "2s",
    ]);
    // (`wait_sealed` also waits until no process of the crawl is live.)
    daemon.wait_sealed(sized, WAIT);
    daemon.wait_sealed(timed, WAIT);
    for (crawl, limit) in [(sized, "max_size"), (timed, "timeout")] {
        let store = daemon.store();
        let row = store.crawls().get(crawl).unwrap().unwrap();
        assert_eq!(row.outcome.unwrap().as_str(), "cancelled", "{limit}");
        assert_eq!(row.ended_by.map(|l| l.as_str()), Some(limit));
        let results = store.results().of_crawl(crawl).unwrap();
        assert!(
            results.iter().all(|r| r.status.as_str() == "cancelled"),
            "{limit}: {results:?}"
        );
        assert!(
            store
                .crawls()
                .snapshots(crawl)
                .unwrap()
                .iter()
                .all(|s| s.status.as_str() == "sealed"),
            "{limit}"
        );
        let text = daemon.ctl_ok(&["show", &crawl.to_string()]);
        assert!(text.contains(&format!("ended by {limit}")), "{text}");
        let json = shown(&daemon, crawl);
        assert_eq!(json["crawl"]["ended_by"], limit, "{json}");
    }
}

#[test]
fn invalid_rules_are_refused_at_add_naming_the_flag_and_nothing_is_queued() {
    let daemon = TestDaemon::start_with(&rules_config(""));
    for (args, flag) in [
        (&["--url-denylist", "(unclosed"][..], "--url-denylist"),
        (&["--url-allowlist", "[z-a]"][..], "--url-allowlist"),
        (&["--crawl-max-size=-5"][..], "--crawl-max-size"),
        (&["--snapshot-max-size", "lots"][..], "--snapshot-max-size"),
        (&["--crawl-timeout", "soon"][..], "--crawl-timeout"),
        // (abxd's earlier names for them, still taken, are named as ArchiveBox names them.)
        (&["--max-size=-5"][..], "--crawl-max-size"),
        (&["--timeout", "soon"][..], "--crawl-timeout"),
        (
            &["--crawl-max-concurrent-snapshots", "0"][..],
            "--crawl-max-concurrent-snapshots",
        ),
        (&["--tag", "a,b", "--persona", "../x"][..], "--persona"),
        (&["--max-urls=-1"][..], "--max-urls"),
        (&["--scope", "street"][..], "--scope"),
    ] {
        let mut all = vec!["add", "http://127.0.0.1:9/"];
        all.extend_from_slice(args);
        let output = daemon.ctl(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} was accepted");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
    // Through the socket (another client than abxctl), refused the same way.
    let mut stream =
        std::os::unix::net::UnixStream::connect(daemon.data_dir().join("abxd.sock")).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    stream
        .write_all(
            b"{\"version\":1,\"request\":{\"type\":\"add\",\"urls\":[\"http://127.0.0.1:9/\"],\
              \"rules\":{\"url_denylist\":[\"(unclosed\"]}}}\n",
        )
        .unwrap();
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).unwrap();
    assert!(
        answer.contains("--url-denylist") && answer.contains("(unclosed"),
        "{answer}"
    );
    assert!(daemon.store().crawls().all().unwrap().is_empty());
    // And in `[crawl]`, by its key.
    daemon.write_config(&rules_config("[crawl]\nurl_denylist = [\"(\"]\n"));
    let output = daemon.abxd_command(&["check-config"]).output().unwrap();
    assert!(!output.status.success());
    let said = daemon.log();
    assert!(said.contains("crawl.url_denylist"), "{said}");
}

/// A daemon (root, as every test daemon) whose hooks run as [`HOOK_USER`], its plugins copied
/// into its own dir, which the user may enter (temp dirs are 0700).
fn daemon_with_hook_user() -> TestDaemon {
    let daemon = TestDaemon::prepare(&format!("[hooks]\nuser = \"{HOOK_USER}\"\n"));
    let plugins = daemon.path("plugins");
    common::copy_dir(&fixtures().join("rules/whoami"), &plugins.join("whoami"));
    common::copy_dir(&fixtures().join("order/endless"), &plugins.join("endless"));
    std::fs::set_permissions(daemon.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    daemon
}

/// What the whoami hook of crawl `crawl` said, and its dir.
fn whoami(daemon: &TestDaemon, crawl: i64) -> (String, std::path::PathBuf) {
    said_by(daemon, crawl, "whoami")
}

/// What the hook of `plugin` said on crawl `crawl`'s first snapshot, having succeeded, and its
/// dir.
fn said_by(daemon: &TestDaemon, crawl: i64, plugin: &str) -> (String, std::path::PathBuf) {
    let store = daemon.store();
    let results = store.results().of_crawl(crawl).unwrap();
    let result = results.iter().find(|r| r.plugin == plugin).unwrap();
    assert_eq!(
        result.status.as_str(),
        "succeeded",
        "{result:?}\n{}",
        daemon.log()
    );
    let snapshot = &store.crawls().snapshots(crawl).unwrap()[0];
    let dir = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/snapshots/{}/{plugin}", snapshot.id));
    (result.output.clone().unwrap(), dir)
}

#[test]
fn a_root_abxd_runs_hooks_and_their_children_as_the_hook_user_with_a_home_it_can_write() {
    let user = hook_user();
    let mut daemon = daemon_with_hook_user();
    daemon.launch();
    let status = daemon.ctl_ok(&["status"]);
    assert!(
        status.contains(&format!("hooks:    run as user {HOOK_USER}")),
        "{status}"
    );
    let crawl = daemon.add(&["http://127.0.0.1:9/", "--plugins", "whoami,endless"]);
    daemon.wait_sealed(crawl, WAIT);
    let (said, dir) = whoami(&daemon, crawl);
    // Its rows say the uid they run as: the background hook, stopped at its snapshot's end, was
    // signalled as its own (not taken for another user's process) and exited.
    let hooks: Vec<_> = (daemon
        .store()
        .processes()
        .list(&Default::default())
        .unwrap())
    .into_iter()
    .filter(|r| r.kind == abxd::domain::Kind::Hook)
    .collect();
    assert_eq!(hooks.len(), 2, "{hooks:?}");
    for row in &hooks {
        assert_eq!(row.uid, Some(user.uid.as_raw()), "{row:?}");
        assert_eq!(row.status.as_str(), "exited", "{row:?}");
    }
    let home = daemon.data_dir().join("home").join(HOOK_USER);
    assert_eq!(
        said,
        format!(
            "uid={uid} gid={gid} groups={gid} home={} writable user={HOOK_USER}",
            home.display(),
            uid = user.uid,
            gid = user.gid
        ),
        "no root, no supplementary group of abxd's"
    );
    // What it wrote is its user's; so is what its child did.
    assert_eq!(
        std::fs::metadata(dir.join("here.txt")).unwrap().uid(),
        user.uid.as_raw()
    );
    let child = std::fs::read_to_string(dir.join("child-uid.txt")).unwrap();
    assert_eq!(child.trim(), user.uid.to_string());
    // abxd's own files stay abxd's, and its database is closed to others (the data dir is open
    // to the hook user's passage).
    let database = std::fs::metadata(daemon.database()).unwrap();
    assert_eq!(database.uid(), 0);
    assert_eq!(database.mode() & 0o007, 0, "{:o}", database.mode());
}

/// ArchiveBox's `add --persona NAME`, as a root abxd runs it: the hooks (as the hook user) get
/// a copy of the persona ArchiveBox keeps under `personas/NAME` — its browser profile where
/// Chrome's hooks look for it, its cookies — never the persona itself; a persona that is not
/// there is refused at `add`, naming where it was looked for.
#[test]
fn a_crawl_archives_as_the_archivebox_persona_it_names_through_a_copy_the_hook_user_owns() {
    let user = hook_user();
    let mut daemon = daemon_with_hook_user();
    common::copy_dir(
        &fixtures().join("persona/persona"),
        &daemon.path("plugins/persona"),
    );
    let persona = daemon.data_dir().join("personas/Work");
    std::fs::create_dir_all(persona.join("chrome_profile/Default")).unwrap();
    std::fs::write(
        persona.join("chrome_profile/Default/Preferences"),
        "as left",
    )
    .unwrap();
    let cookies = "# Netscape HTTP Cookie File\n.example.com\tTRUE\t/\tFALSE\t0\tsid\tabc\n";
    std::fs::write(persona.join("cookies.txt"), cookies).unwrap();
    daemon.launch();

    let crawl = daemon.add(&["--persona", "Work", "-p", "persona", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, WAIT);
    let (_, dir) = said_by(&daemon, crawl, "persona");
    let said = std::fs::read_to_string(dir.join("persona.txt")).unwrap();
    let store = daemon.store();
    assert!(said.contains("ACTIVE_PERSONA=Work\n"), "{said}");
    assert!(said.contains("\tsid\tabc"), "its cookies: {said}");
    assert!(said.contains("profile=as left\n"), "its profile: {said}");
    let cookies_file = (said.lines())
        .find_map(|l| l.strip_prefix("COOKIES_FILE="))
        .unwrap();
    assert!(
        !cookies_file.starts_with(&persona.display().to_string()),
        "{said}"
    );
    // What the hook wrote (as its user: it succeeded) was its copy's, gone with its crawl; the
    // persona is as it was.
    assert_eq!(
        std::fs::read_to_string(persona.join("chrome_profile/Default/Preferences")).unwrap(),
        "as left"
    );
    assert!(!std::path::Path::new(cookies_file).exists(), "{said}");
    let hook = (store.processes().crawl_processes(crawl).unwrap())
        .into_iter()
        .find(|row| row.kind == abxd::domain::Kind::Hook)
        .unwrap();
    assert_eq!(hook.uid, Some(user.uid.as_raw()), "{hook:?}");
    let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
    assert!(shown.contains("  persona: Work"), "{shown}");

    let output = daemon.ctl(&["add", "--persona", "Nobody", "http://127.0.0.1:9/"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    let looked = daemon.data_dir().join("personas/Nobody");
    assert!(
        stderr.contains("--persona Nobody: no such persona")
            && stderr.contains(&looked.display().to_string()),
        "{stderr}"
    );
}

/// `abxd run --hooks-user` HOOK_USER of the whoami plugin over a page in the daemon's dir, its
/// stdout kept.
fn run_whoami_page(daemon: &TestDaemon) -> std::process::Output {
    std::fs::write(daemon.path("site.html"), "<title>x</title>").unwrap();
    let page = daemon.path("site.html");
    let args = ["run", "--hooks-user", HOOK_USER, "--plugins", "whoami"];
    daemon
        .abxd_command(&[&args[..], &[page.to_str().unwrap()]].concat())
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn abxd_run_as_root_runs_its_hooks_as_the_user_it_is_given() {
    let user = hook_user();
    let daemon = daemon_with_hook_user();
    // (`abxd run`'s flag, over a config that names none.)
    daemon.write_config("[hooks]\n");
    let output = run_whoami_page(&daemon);
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        daemon.log()
    );
    let (said, _) = whoami(&daemon, 1);
    assert!(said.starts_with(&format!("uid={} ", user.uid)), "{said}");
}

/// README's first command as root in a checkout under `/root` (mode 0700): `abxd run` opens its
/// hook user a passage (a mount namespace of its own in which the directory holds only what the
/// run needs), the hooks run as that user, and nothing outside the run changed.
#[test]
fn abxd_run_as_root_reaches_a_checkout_in_a_home_its_hook_user_cannot_enter() {
    if !common::can_unshare() {
        return;
    }
    let user = hook_user();
    let daemon = daemon_with_hook_user();
    daemon.write_config("[hooks]\n");
    let home = daemon.dir.path();
    std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let output = run_whoami_page(&daemon);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", daemon.log());
    assert!(
        stdout.contains(&format!("this run sees {} as only ", home.display())),
        "{stdout}"
    );
    let (said, _) = whoami(&daemon, 1);
    assert!(said.starts_with(&format!("uid={} ", user.uid)), "{said}");
    // Outside the run, nothing changed: the directory is root's alone, and no mount is left.
    let mode = std::fs::metadata(home).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o700);
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(&home.display().to_string()),
        "a mount of the run outlived it: {mounts}"
    );
}

#[test]
fn a_root_abxd_with_no_hook_user_starts_no_crawl_and_says_which_key() {
    let mut daemon = TestDaemon::prepare(&rules_config("[hooks]\n"));
    // `abxd run` refuses before anything runs.
    let output = daemon
        .abxd_command(&["run", "--plugins", "ok", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = daemon.log();
    assert!(said.contains("hooks.user is not set"), "{said}");
    assert!(common::tagged_pids(&daemon.tag).is_empty());
    // The daemon runs (ps, status), says why no crawl starts, and refuses to queue one.
    daemon.launch();
    let status = daemon.ctl_ok(&["status"]);
    assert!(
        status.contains("NO CRAWL STARTS") && status.contains("hooks.user"),
        "{status}"
    );
    let output = daemon.ctl(&["add", "--plugins", "ok", "http://127.0.0.1:9/"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("hooks.user is not set"), "{stderr}");
    assert!(stderr.contains("\"root\" to accept the risk"), "{stderr}");
    assert!(daemon.store().crawls().all().unwrap().is_empty());
    // `hooks.user = "root"` is the explicit way; a reload applies it and the crawl runs.
    daemon.write_config(&rules_config("[hooks]\nuser = \"root\"\n"));
    daemon.signal(nix::sys::signal::Signal::SIGHUP);
    wait_until("the reload to apply hooks.user", WAIT, || {
        daemon
            .ctl_ok(&["status"])
            .contains("run as root")
            .then_some(())
    });
    let crawl = daemon.add(&["--plugins", "ok", "http://127.0.0.1:9/"]);
    daemon.wait_sealed(crawl, WAIT);
}

#[test]
fn a_hook_user_who_cannot_reach_the_plugins_starts_no_crawl_naming_the_directory() {
    hook_user();
    let mut daemon = TestDaemon::prepare(&format!("[hooks]\nuser = \"{HOOK_USER}\"\n"));
    // The dir that holds the plugins and the data dir is root's alone.
    std::fs::set_permissions(daemon.dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    daemon.launch();
    let status = daemon.ctl_ok(&["status"]);
    assert!(status.contains("NO CRAWL STARTS"), "{status}");
    assert!(
        status.contains(&format!("cannot enter {}", daemon.dir.path().display())),
        "{status}"
    );
}

/// ArchiveBox's `ONLY_NEW` as `[crawl] only_new`: a crawl follows no discovered URL another
/// crawl archived — unless it says `--no-only-new`, or ArchiveBox's `--overwrite` or `--update`.
#[test]
fn only_new_by_default_and_overwrite_update_or_no_only_new_follow_what_is_archived() {
    let daemon = TestDaemon::start_with(&rules_config("[crawl]\nonly_new = true\n"));
    let crawl = |flags: &[&str]| {
        let mut args = vec!["-p", "links", "-d", "1", "http://127.0.0.1:9/docs/"];
        args.extend_from_slice(flags);
        let id = daemon.add(&args);
        daemon.wait_sealed(id, WAIT);
        daemon.store().crawls().snapshots(id).unwrap().len()
    };
    assert_eq!(
        crawl(&[]),
        7,
        "the first crawl archives the page and the six it links"
    );
    assert_eq!(crawl(&[]), 1, "the next, only the page again");
    for flag in ["--overwrite", "--update", "--no-only-new"] {
        assert_eq!(crawl(&[flag]), 7, "{flag}");
    }
    assert_eq!(
        crawl(&["--overwrite", "--only-new"]),
        1,
        "the last flag given wins"
    );
}
