//! Politeness per host key, seen from the sites: several loopback "sites" (127.0.0.x, each a
//! server of this test that records when each request arrived and ended, and can answer 429 with
//! `Retry-After`), crawled by the bundled headers plugin through a real daemon.

mod common;

use common::sites::{closest_starts, most_at_once, Site, Visit};
use common::{plugins_config, wait_until, TestDaemon, WAIT};
use std::path::Path;
use std::time::Duration;

fn headers_plugins() -> String {
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins");
    format!(
        "{}[crawl]\negress = \"unrestricted\"\n",
        plugins_config(&[&bundled])
    )
}

/// What a site sees of a start: abxd's start is its claim; the site sees the hook's request one
/// process start later (the snapshot worker's, then the hook's), which varies from one start to
/// the next on a loaded machine. Starts are checked against `delay` less this much.
const START_JITTER: Duration = Duration::from_millis(400);

#[test]
fn by_default_no_site_sees_more_than_two_at_once_nor_starts_closer_than_a_second_across_two_crawls()
{
    let sites: Vec<Site> = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
        .iter()
        .map(|ip| Site::start(ip, Duration::from_millis(700), 0, 0))
        .collect();
    let config = format!(
        "{}[limits]\nmax_crawl_workers = 2\nmax_snapshot_workers = 8\n\
         [politeness]\n",
        headers_plugins()
    );
    let daemon = TestDaemon::start_with(&config);
    let crawls: Vec<i64> = ["a", "b"]
        .iter()
        .map(|crawl| {
            let mut args: Vec<String> = Vec::new();
            for site in &sites {
                for n in 0..3 {
                    args.push(site.url(&format!("{crawl}{n}")));
                }
            }
            args.extend(["--plugins".into(), "headers".into()]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            daemon.add(&args)
        })
        .collect();
    for &crawl in &crawls {
        daemon.wait_sealed(crawl, WAIT * 4);
    }
    let every: Vec<Visit> = sites.iter().flat_map(Site::visits).collect();
    assert_eq!(every.len(), 18, "each page fetched once: {every:#?}");
    for site in &sites {
        let visits = site.visits();
        assert!(
            most_at_once(&visits) <= 2,
            "{} had {} requests open at once: {visits:#?}",
            site.address,
            most_at_once(&visits)
        );
        let closest = closest_starts(&visits).unwrap();
        eprintln!("{}: starts at least {closest} ms apart", site.address);
        assert!(
            closest + START_JITTER.as_millis() >= 1000,
            "{}: two starts {closest} ms apart: {visits:#?}",
            site.address
        );
        // (Both crawls' pages of it.)
        assert!(visits.iter().any(|v| v.path.starts_with("/a")));
        assert!(visits.iter().any(|v| v.path.starts_with("/b")));
    }
    // The limits are per site: the sites were served side by side.
    assert!(
        most_at_once(&every) > 2,
        "no two sites were served at once: {every:#?}"
    );
    daemon.assert_nothing_survives();
}

#[test]
fn a_429_with_retry_after_leaves_its_site_alone_that_long_while_others_proceed_then_archives_it() {
    let throttling = Site::start("127.0.0.5", Duration::ZERO, 1, 3);
    let other = Site::start("127.0.0.6", Duration::from_millis(200), 0, 0);
    let config = format!(
        "{}[limits]\nmax_snapshot_workers = 4\n[politeness]\nmax_per_host = 1\ndelay = \"600ms\"\n",
        headers_plugins()
    );
    let daemon = TestDaemon::start_with(&config);
    let mut args = vec![throttling.url("page")];
    args.extend((0..8).map(|n| other.url(&format!("p{n}"))));
    args.extend(["--plugins".into(), "headers".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let crawl = daemon.add(&args);
    // While the site cools down, `abxctl show` and `abxctl hosts` say why its snapshot waits.
    let (shown, hosts) = wait_until("show to name the site the snapshot waits on", WAIT, || {
        let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
        let hosts = daemon.ctl_ok(&["hosts"]);
        shown
            .contains("1 snapshots wait for their site 127.0.0.5: it cools down")
            .then_some((shown, hosts))
    });
    assert!(shown.contains("HTTP 429, Retry-After 3s"), "{shown}");
    assert!(
        hosts
            .lines()
            .any(|l| l.starts_with("127.0.0.5") && l.contains("HTTP 429")),
        "{hosts}"
    );
    daemon.wait_sealed(crawl, WAIT * 2);
    let visits = throttling.visits();
    assert_eq!(visits.len(), 2, "a 429, then the page: {visits:#?}");
    let (refused, archived) = (&visits[0], &visits[1]);
    assert!(
        archived.arrived >= refused.ended + 3000,
        "asked again {} ms after its 429 (Retry-After: 3)",
        archived.arrived - refused.ended
    );
    let meanwhile = other
        .visits()
        .iter()
        .filter(|v| v.arrived > refused.ended && v.arrived < archived.arrived)
        .count();
    assert!(
        meanwhile > 0,
        "the other site waited too: {:#?}",
        other.visits()
    );
    // The page was archived: its headers say 200, and its result succeeded.
    let store = daemon.store();
    let snapshot = store
        .crawls()
        .snapshots(crawl)
        .unwrap()
        .into_iter()
        .find(|s| s.url == throttling.url("page"))
        .unwrap();
    assert_eq!(snapshot.backoffs, 1);
    let dir = daemon
        .data_dir()
        .join(format!("crawls/{crawl}/snapshots/{}/headers", snapshot.id));
    let headers = std::fs::read_to_string(dir.join("headers.json")).unwrap();
    assert!(headers.contains("\"status\": 200"), "{headers}");
    let hosts = daemon.ctl_ok(&["hosts", "--json"]);
    let hosts: serde_json::Value = serde_json::from_str(&hosts).unwrap();
    let listed = hosts["hosts"].as_array().unwrap();
    assert!(
        listed.iter().all(|h| h["running"] == 0 && h["queued"] == 0),
        "{hosts}"
    );
    // Its worker said why it put the snapshot back.
    let rows = store
        .processes()
        .list(&abxd::store::ProcessFilter::default())
        .unwrap();
    let said = rows
        .iter()
        .filter(|r| r.kind == abxd::domain::Kind::SnapshotWorker)
        .filter_map(|r| std::fs::read_to_string(r.stderr_path.as_ref()?).ok())
        .any(|log| log.contains("127.0.0.5 said HTTP 429, Retry-After 3s: put back for 3s"));
    assert!(said, "no worker said why it backed off");
    daemon.assert_nothing_survives();
}

#[test]
fn a_sigkilled_snapshot_worker_leaves_its_site_blocked_no_longer_than_recovery() {
    let site = Site::start("127.0.0.7", Duration::from_millis(1500), 0, 0);
    let config = format!(
        "{}[politeness]\nmax_per_host = 1\ndelay = \"0s\"\n",
        headers_plugins()
    );
    let daemon = TestDaemon::start_with(&config);
    let crawl = daemon.add(&[&site.url("one"), &site.url("two"), "--plugins", "headers"]);
    // The first page is being fetched: its worker holds the site's one slot.
    let worker = wait_until("a snapshot worker to fetch", WAIT, || {
        (*site.arrived.lock().unwrap() > 0)
            .then(|| {
                daemon
                    .live_rows(abxd::domain::Kind::SnapshotWorker)
                    .into_iter()
                    .next()
            })
            .flatten()
    });
    let pid = worker.pid.expect("a live worker has a pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    daemon.wait_sealed(crawl, WAIT * 2);
    let store = daemon.store();
    let sealed = store.crawls().snapshots(crawl).unwrap();
    assert!(sealed.iter().all(|s| s.status == "sealed"), "{sealed:#?}");
    let hosts = daemon.ctl_ok(&["hosts"]);
    assert!(hosts.contains("no host has snapshots"), "{hosts}");
    daemon.assert_nothing_survives();
}

#[test]
fn two_daemons_on_one_postgresql_share_each_sites_limits() {
    if !common::can_unshare() {
        eprintln!("SKIPPED: the fleet's hosts need PID namespaces (root, util-linux's unshare)");
        return;
    }
    let Some(server) = common::postgres::Postgres::start() else {
        return;
    };
    let sites: Vec<Site> = ["127.0.0.8", "127.0.0.9"]
        .iter()
        .map(|ip| Site::start(ip, Duration::from_millis(500), 0, 0))
        .collect();
    let hosts: Vec<TestDaemon> = ["host-a", "host-b"]
        .iter()
        .map(|name| {
            let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins");
            // (`plugins_config` ends in `[paths]`: the database joins it.)
            let config = format!(
                "{}database = {:?}\n[store]\nmachine_id = {name:?}\n\
                 [limits]\nmax_snapshot_workers = 4\n\
                 [politeness]\nmax_per_host = 1\ndelay = \"700ms\"\n\
                 [crawl]\negress = \"unrestricted\"\n",
                plugins_config(&[&bundled]),
                server.database_url()
            );
            let mut daemon = TestDaemon::prepare(&config);
            daemon.launch_in_own_pid_namespace();
            daemon
        })
        .collect();
    let crawls: Vec<i64> = hosts
        .iter()
        .enumerate()
        .map(|(n, host)| {
            let mut args: Vec<String> = Vec::new();
            for site in &sites {
                args.extend((0..3).map(|page| site.url(&format!("h{n}p{page}"))));
            }
            args.extend(["--plugins".into(), "headers".into()]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            host.add(&args)
        })
        .collect();
    let store =
        abxd::store::Store::open_at(&abxd::store::Location::Postgres(abxd::store::Server {
            url: server.database_url(),
            password_file: None,
        }))
        .unwrap();
    wait_until("both crawls to be sealed", WAIT * 4, || {
        crawls
            .iter()
            .all(|&id| (store.crawls().get(id).unwrap()).is_some_and(|c| c.status == "sealed"))
            .then_some(())
    });
    for site in &sites {
        let visits = site.visits();
        assert_eq!(visits.len(), 6, "{visits:#?}");
        assert_eq!(most_at_once(&visits), 1, "{}: {visits:#?}", site.address);
        let closest = closest_starts(&visits).unwrap();
        assert!(
            closest + START_JITTER.as_millis() >= 700,
            "{}: two starts {closest} ms apart: {visits:#?}",
            site.address
        );
    }
    // Both hosts ran snapshots (the limits held across them, not by one host doing it all).
    let machines: std::collections::BTreeSet<Option<String>> = store
        .processes()
        .list(&abxd::store::ProcessFilter::default())
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == abxd::domain::Kind::SnapshotWorker)
        .map(|r| r.machine_id)
        .collect();
    assert!(machines.len() == 2, "snapshots ran on {machines:?}");
    // (Each daemon is the first process of a PID namespace of its own: what it ran is read
    // from the table, which names every live process of either.)
    wait_until("every worker and hook to end on both hosts", WAIT, || {
        let rows = store
            .processes()
            .list(&abxd::store::ProcessFilter::default())
            .unwrap();
        rows.iter()
            .all(|r| !r.status.is_live() || r.kind == abxd::domain::Kind::Orchestrator)
            .then_some(())
    });
}

/// A plugin dir with one hook that takes `seconds`, for crawls whose order is what a test reads.
fn slow_plugin(seconds: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::plugin(
        dir.path(),
        "slow",
        "on_Snapshot__10_slow.sh",
        &format!(
            "sleep {seconds}\necho '{{\"type\": \"ArchiveResult\", \"status\": \"succeeded\"}}'\n"
        ),
    );
    dir
}

/// How many of crawl `crawl`'s snapshots ever started.
fn started(daemon: &TestDaemon, crawl: i64) -> usize {
    (daemon.store().crawls().snapshots(crawl).unwrap().iter())
        .filter(|s| s.started_at.is_some())
        .count()
}

/// How many of crawl `crawl`'s snapshots run now.
fn running(daemon: &TestDaemon, crawl: i64) -> usize {
    (daemon.store().crawls().snapshots(crawl).unwrap().iter())
        .filter(|s| s.status == abxd::domain::WorkStatus::Started)
        .count()
}

/// A plugin whose one hook ends only once the test released its snapshot (made a file named by
/// the snapshot's id in the second dir), and the config lines that run it (`extra` in
/// `[limits]`).
fn held_plugin(limits: &str) -> (tempfile::TempDir, tempfile::TempDir, String) {
    let plugins = tempfile::tempdir().unwrap();
    let release = tempfile::tempdir().unwrap();
    common::plugin(
        plugins.path(),
        "held",
        "on_Snapshot__10_held.sh",
        "while [ ! -e \"$RELEASE/$SNAPSHOT_ID\" ]; do sleep 0.05; done\n\
         echo '{\"type\": \"ArchiveResult\", \"status\": \"succeeded\"}'\n",
    );
    let config = format!(
        "{}[limits]\n{limits}[plugins.held]\nenv = {{ RELEASE = {:?} }}\n",
        plugins_config(&[plugins.path()]),
        release.path().display().to_string()
    );
    (plugins, release, config)
}

/// Ends one running snapshot of crawl `crawl` (of a [`held_plugin`]) and waits until it is
/// sealed and `slots` snapshots of `crawls` run again; returns how many of each.
fn release_one(
    daemon: &TestDaemon,
    release: &Path,
    crawl: i64,
    crawls: &[i64],
    slots: usize,
) -> Vec<usize> {
    let store = daemon.store();
    let snapshots = store.crawls().snapshots(crawl).unwrap();
    let held = (snapshots.iter())
        .find(|s| s.status == abxd::domain::WorkStatus::Started)
        .expect("a running snapshot to release");
    std::fs::write(release.join(held.id.to_string()), "").unwrap();
    let id = held.id;
    wait_until("the released slot to be taken again", WAIT, || {
        let sealed = store.crawls().snapshot(id).unwrap().unwrap().status
            == abxd::domain::WorkStatus::Sealed;
        let counts: Vec<usize> = crawls.iter().map(|&c| running(daemon, c)).collect();
        (sealed && counts.iter().sum::<usize>() == slots).then_some(counts)
    })
}

/// A `max_snapshots` crawl that waits for a turn says so.
fn wait_for_a_turn(daemon: &TestDaemon, crawl: i64) {
    wait_until("the new crawl to wait for a turn", WAIT, || {
        let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
        shown
            .contains("new snapshots wait for a turn")
            .then_some(())
    });
}

/// With the host's snapshot slots (`max_snapshots`, 4 by default) all held by a crawl of 10 000,
/// the first slot that frees goes to a one-URL crawl added meanwhile: the big crawl starts no
/// snapshot between the two (counted, no timing).
#[test]
fn a_one_url_crawl_added_while_ten_thousand_snapshots_run_starts_within_one_dispatch_turn() {
    let (_plugins, release, config) = held_plugin("");
    let daemon = TestDaemon::start_with(&config);
    let mut args: Vec<String> = (0..10_000)
        .map(|n| format!("http://big.example/{n}"))
        .collect();
    args.extend(["--plugins".into(), "held".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let big = daemon.add(&args);
    wait_until("the big crawl to hold all four slots", WAIT, || {
        (running(&daemon, big) == 4).then_some(())
    });
    let small = daemon.add(&["http://small.example/", "--plugins", "held"]);
    wait_for_a_turn(&daemon, small);
    let counts = release_one(&daemon, release.path(), big, &[big, small], 4);
    assert_eq!(
        counts,
        [3, 1],
        "(big, one-URL) running after one slot freed"
    );
    assert_eq!(
        started(&daemon, big),
        4,
        "the big crawl started another meanwhile"
    );
    daemon.ctl_ok(&["cancel", &big.to_string()]);
    let store = daemon.store();
    for snapshot in store.crawls().snapshots(small).unwrap() {
        std::fs::write(release.path().join(snapshot.id.to_string()), "").unwrap();
    }
    daemon.wait_sealed(small, WAIT);
    daemon.wait_sealed(big, WAIT);
}

/// Three slots between a crawl of `--priority 1` and one of 0, each with more queued than it can
/// run: whichever snapshot ends, the slot goes where the shares say, and they settle at two to
/// one.
#[test]
fn the_hosts_snapshot_slots_are_dealt_round_robin_weighted_by_priority() {
    let (_plugins, release, config) = held_plugin("max_snapshots = 3\nmax_snapshot_workers = 3\n");
    let daemon = TestDaemon::start_with(&config);
    let urls = |site: &str| -> Vec<String> {
        let mut args: Vec<String> = (0..8).map(|n| format!("http://{site}/{n}")).collect();
        args.extend(["--plugins".into(), "held".into()]);
        args
    };
    let add = |args: Vec<String>| daemon.add(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let low = add(urls("low.example"));
    wait_until("the crawl of priority 0 to run three", WAIT, || {
        (running(&daemon, low) == 3).then_some(())
    });
    let mut high_args = urls("high.example");
    high_args.extend(["--priority".into(), "1".into()]);
    let high = add(high_args);
    wait_for_a_turn(&daemon, high);
    assert_eq!((running(&daemon, high), running(&daemon, low)), (0, 3));
    let release = |crawl| release_one(&daemon, release.path(), crawl, &[high, low], 3);
    // The crawl of 0 held all three: the next two that free go to the crawl of 1.
    assert_eq!(release(low), [1, 2], "(priority 1, priority 0) running");
    assert_eq!(release(low), [2, 1], "(priority 1, priority 0) running");
    // Settled at two to one: a slot that frees goes back to the crawl it came from.
    assert_eq!(release(low), [2, 1], "(priority 1, priority 0) running");
    assert_eq!(release(high), [2, 1], "(priority 1, priority 0) running");
    assert_eq!(release(high), [2, 1], "(priority 1, priority 0) running");
    for crawl in [low, high] {
        daemon.ctl_ok(&["cancel", &crawl.to_string()]);
        daemon.wait_sealed(crawl, WAIT);
    }
}

#[test]
fn a_queued_crawl_of_higher_priority_is_claimed_first() {
    let plugins = slow_plugin("1");
    let config = format!(
        "{}[limits]\nmax_crawl_workers = 1\n",
        plugins_config(&[plugins.path()])
    );
    let daemon = TestDaemon::start_with(&config);
    let running = daemon.add(&["http://first.example/", "--plugins", "slow"]);
    wait_until("the first crawl to run", WAIT, || {
        (started(&daemon, running) == 1).then_some(())
    });
    let plain = daemon.add(&["http://plain.example/", "--plugins", "slow"]);
    let urgent = daemon.add(&[
        "http://urgent.example/",
        "--plugins",
        "slow",
        "--priority",
        "5",
    ]);
    for crawl in [running, plain, urgent] {
        daemon.wait_sealed(crawl, WAIT);
    }
    let store = daemon.store();
    let started_at = |id| store.crawls().get(id).unwrap().unwrap().started_at.unwrap();
    assert!(
        started_at(urgent) < started_at(plain),
        "the crawl of priority 5 started after the one of 0"
    );
    let shown = daemon.ctl_ok(&["show", &urgent.to_string()]);
    assert!(shown.contains("priority 5"), "{shown}");
}

#[test]
fn abxctl_add_refuses_bad_politeness_values_naming_the_flag() {
    let daemon = TestDaemon::start();
    for (flag, value, why) in [
        ("--max-per-host", "0", "--max-per-host"),
        ("--delay", "soon", "invalid duration \"soon\""),
        ("--delay=-1", "", "must not be negative"),
        ("--priority", "high", "--priority"),
    ] {
        let mut args = vec!["add", "http://example.com/", flag];
        args.extend((!value.is_empty()).then_some(value));
        let out = daemon.ctl(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(why), "{flag} {value}: {stderr}");
    }
    let crawls = daemon.ctl_ok(&["crawls"]);
    assert!(crawls.contains("no crawls"), "{crawls}");
}

#[test]
fn a_site_that_keeps_saying_429_gets_max_backoffs_tries_then_the_snapshot_is_sealed_saying_why() {
    let site = Site::start("127.0.0.10", Duration::ZERO, usize::MAX, 1);
    let config = format!(
        "{}[politeness]\nmax_backoffs = 2\ndelay = \"0s\"\n",
        headers_plugins()
    );
    let daemon = TestDaemon::start_with(&config);
    let crawl = daemon.add(&[&site.url("always"), "--plugins", "headers"]);
    daemon.wait_sealed(crawl, WAIT);
    let visits = site.visits();
    assert_eq!(
        visits.len(),
        3,
        "the first try and two back-offs: {visits:#?}"
    );
    for pair in visits.windows(2) {
        assert!(
            pair[1].arrived >= pair[0].ended + 1000,
            "asked again {} ms after a 429 with Retry-After: 1",
            pair[1].arrived - pair[0].ended
        );
    }
    let snapshot = daemon.store().crawls().snapshots(crawl).unwrap().remove(0);
    assert_eq!(snapshot.status, "sealed");
    assert_eq!(snapshot.backoffs, 2);
    assert_eq!(snapshot.ended_by, Some(abxd::domain::Limit::MaxBackoffs));
    let shown = daemon.ctl_ok(&["show", &crawl.to_string()]);
    assert!(shown.contains("max_backoffs"), "{shown}");
    daemon.assert_nothing_survives();
}
