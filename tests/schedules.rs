//! Schedules against the real daemon: a crawl made again at each occurrence, skipped while the
//! previous one runs, fired once after a restart across its due time, once per occurrence on a
//! fleet; and the idle daemon waking only for the next one.

mod common;

use abxd::store::Schedule;
use common::{fixtures, plugins_config, wait_until, TestDaemon, WAIT};
use nix::sys::signal::Signal;
use std::time::Duration;

fn schedule_daemon(backend: &str, extra: &str) -> TestDaemon {
    let plugins = fixtures().join("plugins");
    TestDaemon::start_on(
        backend,
        &format!(
            "{}[limits]\nmemory_floor = 0\n[plugins.sleepy]\nenv = {{ SLEEPY_SECONDS = \"3\" }}\n{extra}",
            plugins_config(&[&plugins])
        ),
    )
}

/// The store `daemon` runs on, as its config names it (a fleet's host names a server another
/// harness started).
fn store_of(daemon: &TestDaemon) -> abxd::store::Store {
    let config = abxd::config::Config::load(&daemon.config).unwrap();
    abxd::store::Store::open_read_only_at(&config.database).unwrap()
}

fn schedule(daemon: &TestDaemon, id: i64) -> Schedule {
    let schedules = store_of(daemon).schedules().all().unwrap();
    schedules.into_iter().find(|s| s.id == id).unwrap()
}

/// The crawls of schedule `id`, by id: `(id, created_at, sealed_at)`.
fn crawls_of(daemon: &TestDaemon, id: i64) -> Vec<(i64, i64, Option<i64>)> {
    let store = store_of(daemon);
    store
        .crawls()
        .all()
        .unwrap()
        .into_iter()
        .filter(|c| c.schedule_id == Some(id))
        .map(|c| (c.id, c.created_at, c.sealed_at))
        .collect()
}

/// `abxctl schedule add ARGS…`; returns the schedule's id.
fn add(daemon: &TestDaemon, args: &[&str]) -> i64 {
    let mut all = vec!["schedule", "add", "--json"];
    all.extend_from_slice(args);
    let out: serde_json::Value = serde_json::from_str(&daemon.ctl_ok(&all)).unwrap();
    out["schedule_id"].as_i64().unwrap()
}

#[test]
fn a_schedule_makes_a_crawl_at_each_occurrence_and_list_says_so() {
    let daemon = schedule_daemon("sqlite", "");
    let id = add(
        &daemon,
        &[
            "--every",
            "2s",
            "--plugins",
            "ok",
            "http://127.0.0.1:9/feed",
        ],
    );
    wait_until("two crawls of the schedule, sealed", WAIT, || {
        let crawls = crawls_of(&daemon, id);
        (crawls.len() >= 2 && crawls.iter().all(|c| c.2.is_some())).then_some(())
    });
    let crawls = crawls_of(&daemon, id);
    // One a period after the other, the first a period after the schedule was made.
    let made = schedule(&daemon, id);
    assert!(
        crawls[0].1 >= made.anchor_at + 2_000 - 50,
        "{crawls:?} {made:?}"
    );
    assert!(crawls[1].1 - crawls[0].1 >= 1_900, "{crawls:?}");
    let list = daemon.ctl_ok(&["schedule", "list"]);
    assert!(list.contains("every 2s"), "{list}");
    assert!(list.contains("http://127.0.0.1:9/feed"), "{list}");
    let json: serde_json::Value =
        serde_json::from_str(&daemon.ctl_ok(&["schedule", "list", "--json"])).unwrap();
    assert!(json["schedules"][0]["fired"].as_u64().unwrap() >= 2);

    // Paused, it fires no more; removed, it is gone and its crawls stay.
    daemon.ctl_ok(&["schedule", "pause", &id.to_string()]);
    let fired = schedule(&daemon, id).fired;
    let paused_at = schedule(&daemon, id).paused_at.unwrap();
    wait_until("two periods to pass", WAIT, || {
        (abxd::store::now_ms() > paused_at + 4_500).then_some(())
    });
    assert_eq!(schedule(&daemon, id).fired, fired);
    daemon.ctl_ok(&["schedule", "remove", &id.to_string()]);
    assert!(daemon.store().schedules().all().unwrap().is_empty());
    assert!(daemon.store().crawls().all().unwrap().len() as u64 >= fired);
    let out = daemon.ctl(&["schedule", "remove", &id.to_string()]);
    assert_eq!(out.status.code(), Some(abxd::exit::USAGE));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("no schedule {id}")));
}

/// ArchiveBox's `schedule --every daily -t TAGS -d N`: its names for a schedule are the cron
/// expressions it takes them for, and each occurrence's crawl carries the schedule's tags.
#[test]
fn a_schedule_takes_archiveboxs_every_and_tags_each_occurrence() {
    let daemon = schedule_daemon("sqlite", "");
    let daily = add(
        &daemon,
        &[
            "--every",
            "daily",
            "-t",
            "feed",
            "-d",
            "1",
            "http://127.0.0.1:9/a",
        ],
    );
    let list: serde_json::Value =
        serde_json::from_str(&daemon.ctl_ok(&["schedule", "list", "--json"])).unwrap();
    let listed = &list["schedules"][0];
    assert_eq!(listed["id"], daily);
    assert_eq!(listed["cron"], "0 0 * * *", "{listed}");
    assert_eq!(listed["tags"], serde_json::json!(["feed"]), "{listed}");
    daemon.ctl_ok(&["schedule", "pause", &daily.to_string()]);

    let id = add(
        &daemon,
        &[
            "--every",
            "1s",
            "-t",
            "feed,news",
            "-p",
            "ok",
            "http://127.0.0.1:9/b",
        ],
    );
    let crawl = wait_until("the schedule's first crawl", WAIT, || {
        crawls_of(&daemon, id).first().map(|c| c.0)
    });
    daemon.ctl_ok(&["schedule", "pause", &id.to_string()]);
    let tags = daemon
        .store()
        .crawls()
        .get(crawl)
        .unwrap()
        .unwrap()
        .options
        .tags;
    assert_eq!(tags, ["feed", "news"]);
}

#[test]
fn an_occurrence_whose_previous_crawl_still_runs_is_skipped_saying_so() {
    let daemon = schedule_daemon("sqlite", "");
    // Each crawl takes 3 s (sleepy), the schedule fires every second.
    let id = add(
        &daemon,
        &[
            "--every",
            "1s",
            "--plugins",
            "sleepy",
            "http://127.0.0.1:9/",
        ],
    );
    wait_until("a skipped occurrence and a second crawl", WAIT, || {
        let s = schedule(&daemon, id);
        (s.skipped >= 1 && s.fired >= 2).then_some(())
    });
    daemon.ctl_ok(&["schedule", "pause", &id.to_string()]);
    let crawls = crawls_of(&daemon, id);
    // Never two at once: each one began after the one before was sealed.
    for pair in crawls.windows(2) {
        let sealed = pair[0].2.expect("the earlier crawl is sealed");
        assert!(pair[1].1 >= sealed, "{crawls:?}");
    }
    let log = daemon.log();
    assert!(log.contains("still runs"), "{log}");
}

#[test]
fn an_occurrence_missed_while_abxd_was_down_fires_once_at_start() {
    let mut daemon = schedule_daemon("sqlite", "");
    let id = add(
        &daemon,
        &["--every", "2s", "--plugins", "ok", "http://127.0.0.1:9/"],
    );
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0));
    // Down across three occurrences.
    let due = schedule(&daemon, id).next_at;
    wait_until("three occurrences to pass", WAIT, || {
        (abxd::store::now_ms() > due + 4_500).then_some(())
    });
    assert!(crawls_of(&daemon, id).is_empty());
    daemon.launch();
    wait_until("the missed occurrence's crawl", WAIT, || {
        (!crawls_of(&daemon, id).is_empty()).then_some(())
    });
    let fired_at = crawls_of(&daemon, id)[0].1;
    let after = schedule(&daemon, id);
    assert_eq!(after.fired, 1, "{after:?}");
    assert!(after.next_at > fired_at, "{after:?}");
    // The next one comes on the period, not at once.
    wait_until("the next occurrence's crawl", WAIT, || {
        (crawls_of(&daemon, id).len() >= 2).then_some(())
    });
    let crawls = crawls_of(&daemon, id);
    assert!(crawls[1].1 >= after.next_at - 50, "{crawls:?} {after:?}");
}

#[test]
fn between_occurrences_the_idle_daemon_sleeps_until_the_next_one() {
    let daemon = schedule_daemon("sqlite", "");
    add(
        &daemon,
        &["--every", "1h", "--plugins", "ok", "http://127.0.0.1:9/"],
    );
    // (A daily cron two hours on from now, whatever the time of day: never the nearer one.)
    let hour = (jiff::Zoned::now().hour() + 2) % 24;
    let cron = format!("0 {hour} * * *");
    add(
        &daemon,
        &["--cron", &cron, "--plugins", "ok", "http://127.0.0.1:9/"],
    );
    // epoll_wait's timeout is the time to the hour's occurrence: no wake-up before it.
    let timeout = common::sleeping_timeout_ms(daemon.pid());
    assert!(timeout > 59 * 60 * 1000, "wakes after {timeout} ms");
}

#[test]
fn bad_schedules_are_refused_naming_what_is_wrong() {
    let daemon = schedule_daemon("sqlite", "");
    for (args, says) in [
        (vec!["--cron", "61 * * * *", "http://a/"], "minute: 61"),
        (vec!["--cron", "0 0 30 2 *", "http://a/"], "no moment"),
        (
            vec!["--every", "500ms", "http://a/"],
            "shorter than a second",
        ),
        (
            vec!["--every", "1h", "--cron", "@daily", "http://a/"],
            "cannot be used with",
        ),
        (vec!["http://a/"], "--every"),
        (vec!["--every", "1h", "http://169.254.169.254/"], "metadata"),
        (
            vec!["--every", "1h", "--plugins", "nosuch", "http://a/"],
            "nosuch",
        ),
    ] {
        let mut all = vec!["schedule", "add"];
        all.extend(args.iter().copied());
        let out = daemon.ctl(&all);
        assert_eq!(
            out.status.code(),
            Some(abxd::exit::USAGE),
            "{args:?}: {out:?}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(daemon.store().schedules().all().unwrap().is_empty());
}

#[test]
fn on_a_fleet_each_occurrence_fires_once() {
    let root = rustix::process::geteuid().is_root();
    if !(root && std::path::Path::new("/usr/bin/unshare").exists()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with util-linux"
        );
        eprintln!("skipped: the fleet's hosts need PID namespaces (root and unshare)");
        return;
    }
    let Some(server) = common::postgres::Postgres::start() else {
        assert!(std::env::var_os("CI").is_none(), "CI installs PostgreSQL");
        eprintln!("skipped: PostgreSQL is not installed here");
        return;
    };
    let plugins = plugins_config(&[&fixtures().join("plugins")]);
    let mut hosts: Vec<TestDaemon> = ["host-a", "host-b"]
        .iter()
        .map(|name| {
            let mut host = TestDaemon::prepare(&format!(
                "{plugins}database = {:?}\n[store]\nmachine_id = {name:?}\n\
                 [limits]\nmemory_floor = 0\n",
                server.database_url()
            ));
            host.launch_in_own_pid_namespace();
            host
        })
        .collect();
    let id = add(
        &hosts[0],
        &["--every", "1s", "--plugins", "ok", "http://127.0.0.1:9/"],
    );
    wait_until("six occurrences", Duration::from_secs(60), || {
        let s = schedule(&hosts[0], id);
        (s.fired + s.skipped >= 6).then_some(())
    });
    hosts[1].ctl_ok(&["schedule", "pause", &id.to_string()]);
    let s = schedule(&hosts[0], id);
    let crawls = crawls_of(&hosts[0], id);
    assert_eq!(crawls.len() as u64, s.fired, "{crawls:?} {s:?}");
    // No occurrence fired twice: no more firings than occurrences had come when it was paused.
    // (Both times are on the clock the hosts share; a crawl's `created_at` is its host's wall
    // clock, which may disagree with it by a millisecond or two, so it cannot say which period
    // a crawl belongs to.)
    let paused_at = s.paused_at.expect("paused");
    let occurrences_come = (paused_at - s.anchor_at).div_euclid(1_000) as u64;
    assert!(
        s.fired + s.skipped <= occurrences_come,
        "{occurrences_come} occurrences came before the pause: {crawls:?} {s:?}"
    );
    // Both hosts were there to fire them: each says which it fired.
    let fired_by = |host: &TestDaemon| host.log().matches(&format!("schedule {id}: ")).count();
    assert_eq!(
        fired_by(&hosts[0]) + fired_by(&hosts[1]),
        (s.fired + s.skipped) as usize,
        "every occurrence fired by exactly one host"
    );
    // Resumed on the host that added it, which then goes away: the other, told of the change
    // by the server alone, fires the next occurrences.
    hosts[0].ctl_ok(&["schedule", "resume", &id.to_string()]);
    hosts[0].crash();
    let before = fired_by(&hosts[1]);
    wait_until(
        "two occurrences on the host left",
        Duration::from_secs(60),
        || (fired_by(&hosts[1]) >= before + 2).then_some(()),
    );
}

#[test]
fn only_new_skips_discovered_urls_another_crawl_archived_but_crawls_the_seed_again() {
    let plugins = fixtures().join("rules");
    let daemon = TestDaemon::start_with(&format!(
        "{}[limits]\nmemory_floor = 0\n",
        plugins_config(&[&plugins])
    ));
    // A first crawl archives the page and the six it links.
    let first = daemon.add(&[
        "--plugins",
        "links",
        "--depth",
        "1",
        "http://127.0.0.1:9/docs/",
    ]);
    daemon.wait_sealed(first, WAIT);
    assert_eq!(daemon.store().crawls().snapshots(first).unwrap().len(), 7);
    // The schedule's occurrence fetches the page again, and follows none of what is archived.
    let id = add(
        &daemon,
        &[
            "--every",
            "1s",
            "--only-new",
            "--plugins",
            "links",
            "--depth",
            "1",
            "http://127.0.0.1:9/docs/",
        ],
    );
    let crawl = wait_until("the schedule's first crawl", WAIT, || {
        crawls_of(&daemon, id).first().map(|c| c.0)
    });
    daemon.ctl_ok(&["schedule", "pause", &id.to_string()]);
    daemon.wait_sealed(crawl, WAIT);
    let store = daemon.store();
    let snapshots = store.crawls().snapshots(crawl).unwrap();
    assert_eq!(snapshots.len(), 1, "{snapshots:?}");
    assert_eq!(snapshots[0].url, "http://127.0.0.1:9/docs/");
    let refused = store.crawls().refused_urls(crawl).unwrap();
    assert_eq!(
        refused[&abxd::domain::Refusal::Archived].count,
        6,
        "{refused:?}"
    );
    // Without it, the same crawl follows them all again.
    let again = daemon.add(&[
        "--plugins",
        "links",
        "--depth",
        "1",
        "http://127.0.0.1:9/docs/",
    ]);
    daemon.wait_sealed(again, WAIT);
    assert_eq!(daemon.store().crawls().snapshots(again).unwrap().len(), 7);
}

/// A schedule's cron is read in the time zone it was added in — the operator's — not in the
/// zone of whichever daemon fires it: added at UTC+14 to a daemon at UTC, `0 3 * * *` is next
/// at 03:00 at UTC+14; `schedule list` says which zone.
#[test]
fn a_schedules_cron_is_read_in_the_zone_it_was_added_in() {
    let plugins = fixtures().join("plugins");
    let mut daemon = TestDaemon::prepare(&plugins_config(&[&plugins]));
    daemon.launch_with_env(&[("TZ", "UTC")]);
    let zone = "Pacific/Kiritimati";
    let out = daemon
        .ctl_command(&[
            "schedule",
            "add",
            "--json",
            "--cron",
            "0 3 * * *",
            "-p",
            "ok",
        ])
        .arg("http://127.0.0.1:9/")
        .env("TZ", zone)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let added: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = added["schedule_id"].as_i64().unwrap();
    let made = schedule(&daemon, id);
    assert_eq!(made.zone.as_deref(), Some(zone));
    let next = jiff::Timestamp::from_millisecond(made.next_at)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::get(zone).unwrap());
    assert_eq!((next.hour(), next.minute()), (3, 0), "{next}");
    let list = daemon.ctl_ok(&["schedule", "list"]);
    assert!(list.contains(&format!("cron 0 3 * * * {zone}")), "{list}");
}
