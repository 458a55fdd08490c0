//! A fleet: several hosts — here daemons with machine ids and data dirs of their own, each the
//! first process of its own PID namespace, so each sees only its own processes — sharing one
//! PostgreSQL server (a throwaway cluster). A crawl's snapshots spread over every host; every
//! hook runs exactly once (a ledger the hooks write); nothing is left running anywhere.

mod common;

use abxd::store::{Location, Server, Store};
use common::postgres::Postgres;
use common::TestDaemon;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// How long a fleet's crawl may take at most.
const CRAWL_WAIT: Duration = Duration::from_secs(120);

/// How a fleet's hosts are set up: at most `slots` snapshot workers each (their own crawls'
/// and those they lend to others'), the ledger hook taking `hook_seconds`, `extra` config.
struct Setup<'a> {
    slots: u32,
    hook_seconds: &'a str,
    extra: &'a str,
}

const DEFAULT: Setup = Setup {
    slots: 2,
    hook_seconds: "0.3",
    extra: "",
};

/// A host of the fleet: a daemon on `server` with machine id `name`, its ledger hook writing to
/// `ledger`. (A result may be interrupted any number of times: the torture interrupts many.)
fn host(server: &Postgres, name: &str, ledger: &Path, setup: &Setup) -> TestDaemon {
    let mut daemon = TestDaemon::prepare(&host_config(server, name, ledger, setup));
    daemon.launch_in_own_pid_namespace();
    daemon
}

/// The config of [`host`].
fn host_config(server: &Postgres, name: &str, ledger: &Path, setup: &Setup) -> String {
    // (`[paths]` with the plugins dir, the database added to it.)
    let plugins = common::plugins_config(&[&common::fixtures().join("fleet")]);
    format!(
        "{plugins}database = {:?}\n[store]\nmachine_id = {name:?}\n\
         [limits]\nmax_snapshot_workers = {}\nmax_result_attempts = 1000\n\
         [plugins.ledger]\nenv = {{ LEDGER = {:?}, LEDGER_HOST = {name:?}, \
         LEDGER_SECONDS = {:?} }}\n{}",
        server.database_url(),
        setup.slots,
        ledger.display().to_string(),
        setup.hook_seconds,
        setup.extra,
    )
}

/// The hosts of every fleet here.
const NAMES: [&str; 3] = ["host-a", "host-b", "host-c"];

/// A throwaway PostgreSQL cluster for a fleet, where hosts can be made (see [`common::can_unshare`]);
/// `None` (after saying why) where they cannot, outside CI.
fn fleet_server() -> Option<Postgres> {
    if !common::can_unshare() {
        eprintln!("SKIPPED: PID namespaces need root and util-linux's unshare");
        return None;
    }
    Postgres::start()
}

/// The three hosts of [`NAMES`] on `server`.
fn three_hosts(server: &Postgres, ledger: &Path, setup: &Setup) -> Vec<TestDaemon> {
    NAMES
        .iter()
        .map(|name| host(server, name, ledger, setup))
        .collect()
}

/// Adds a crawl of `count` URLs (`…/<prefix><n>`) running the ledger hook, through `host`;
/// returns its id and its URLs.
fn add_crawl(host: &TestDaemon, prefix: &str, count: usize) -> (i64, Vec<String>) {
    add_crawl_of(host, prefix, count, "ledger")
}

/// [`add_crawl`] running `plugins`.
fn add_crawl_of(
    host: &TestDaemon,
    prefix: &str,
    count: usize,
    plugins: &str,
) -> (i64, Vec<String>) {
    let urls: Vec<String> = (0..count)
        .map(|i| format!("http://127.0.0.1:9/{prefix}{i}"))
        .collect();
    let mut add: Vec<&str> = urls.iter().map(String::as_str).collect();
    add.extend(["--plugins", plugins]);
    (host.add(&add), urls)
}

/// Waits until `crawl` is sealed (the server may be out of reach for a moment meanwhile).
fn wait_sealed(store: &Store, crawl: i64) {
    let deadline = std::time::Instant::now() + CRAWL_WAIT;
    loop {
        let row = store.crawls().get(crawl).ok().flatten();
        if row
            .as_ref()
            .is_some_and(|c| c.status == abxd::domain::WorkStatus::Sealed)
        {
            return;
        }
        if std::time::Instant::now() > deadline {
            // What is in the way: the crawl, its unsealed snapshots, their owners, the machines.
            let open: Vec<_> = (store.crawls().snapshots(crawl).unwrap().into_iter())
                .filter(|s| s.status != abxd::domain::WorkStatus::Sealed)
                .collect();
            let owners: Vec<_> = (row.iter().map(|c| c.owner_id))
                .chain(open.iter().map(|s| s.owner_id))
                .flatten()
                .map(|id| store.processes().get(id).unwrap())
                .collect();
            panic!(
                "crawl {crawl} not sealed: {row:#?}\nopen snapshots: {open:#?}\nowners: \
                 {owners:#?}\nmachines: {:#?}",
                store.machines().all().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until no host has a live row but its orchestrator.
fn wait_settled(store: &Store) {
    for name in NAMES {
        let deadline = std::time::Instant::now() + common::WAIT;
        while !live_worker_rows(store, name).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "{name}'s workers did not end: {:#?}",
                live_worker_rows(store, name)
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// The store the fleet shares, as abxctl reads it.
fn shared_store(server: &Postgres) -> Store {
    Store::open_read_only_at(&Location::Postgres(Server {
        url: server.database_url(),
        password_file: None,
    }))
    .unwrap()
}

#[test]
fn a_crawl_spreads_over_three_hosts_in_their_own_pid_namespaces_and_every_hook_runs_once() {
    let Some(server) = fleet_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    let hosts = three_hosts(&server, &ledger, &DEFAULT);
    let (crawl, urls) = add_crawl(&hosts[0], "", 60);
    let store = shared_store(&server);
    wait_sealed(&store, crawl);

    // Every hook ran exactly once, and every host ran some.
    let lines = ledger_lines(&ledger);
    let mut runs: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for line in lines.iter().filter(|l| l.event == "start") {
        runs.entry(&line.url).or_default().push(&line.host);
    }
    let twice: Vec<_> = runs.iter().filter(|(_, hosts)| hosts.len() > 1).collect();
    assert!(twice.is_empty(), "hooks that ran more than once: {twice:?}");
    assert_eq!(
        runs.len(),
        urls.len(),
        "every snapshot's hook ran: {lines:?}"
    );
    let ran_on: BTreeSet<&str> = runs.values().flatten().copied().collect();
    assert_eq!(ran_on, BTreeSet::from(NAMES), "every host ran some");
    for result in store.results().of_crawl(crawl).unwrap() {
        assert_eq!(
            result.status,
            abxd::domain::ResultStatus::Succeeded,
            "{result:?}"
        );
        assert_eq!(result.attempts, 1, "{result:?}");
    }

    // Each host's tree: its snapshot workers under its orchestrator or its crawl worker, each
    // row linked to the crawl and naming its host; no process left but the daemons.
    let rows = store.processes().crawl_processes(crawl).unwrap();
    for row in &rows {
        assert_eq!(row.crawl_id, Some(crawl), "{row:?}");
        let parent = store
            .processes()
            .get(row.parent_id.unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(
            parent.machine_id, row.machine_id,
            "{row:?} under {parent:?}"
        );
    }
    wait_settled(&store);
    for host in &hosts {
        let live_tagged = common::tagged_pids(&host.tag);
        // (The daemon and `unshare` above it.)
        assert!(live_tagged.len() <= 2, "{live_tagged:?}");
    }
    common::assert_every_row_final(&store.processes().crawl_processes(crawl).unwrap());
}

/// A TCP server on the test's loopback (the hosts share its network) that counts connections.
fn counting_server() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    (port, count)
}

#[test]
fn a_snapshot_lent_to_another_host_is_held_to_its_crawls_egress_policy_there() {
    let Some(server) = fleet_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    let (port, reached) = counting_server();
    let extra = format!("[plugins.reach]\nenv = {{ REACH_PORT = \"{port}\" }}\n");
    let setup = Setup {
        extra: &extra,
        ..DEFAULT
    };
    let hosts = three_hosts(&server, &ledger, &setup);
    // Seeded on a public address: loopback is not its to reach, on any host.
    let urls: Vec<String> = (0..24)
        .map(|i| format!("http://93.184.216.34/{i}"))
        .collect();
    let mut add: Vec<&str> = urls.iter().map(String::as_str).collect();
    add.extend(["--plugins", "reach"]);
    let crawl = hosts[0].add(&add);
    let store = shared_store(&server);
    wait_sealed(&store, crawl);
    let rows = store.processes().crawl_processes(crawl).unwrap();
    let hooks: Vec<_> = (rows.iter())
        .filter(|r| r.kind == abxd::domain::Kind::Hook)
        .collect();
    let lent = (hooks.iter())
        .filter(|r| r.machine_id.as_deref() != Some("host-a"))
        .count();
    assert!(lent > 0, "no snapshot was lent to another host: {hooks:#?}");
    for hook in &hooks {
        let said = std::fs::read_to_string(hook.stdout_path.clone().unwrap()).unwrap_or_default();
        assert!(
            said.contains("curl 7"),
            "{:?} on {:?}: {said}",
            hook.argv,
            hook.machine_id
        );
    }
    assert_eq!(
        reached.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "loopback reached"
    );
    wait_settled(&store);
}

/// One line of the ledger the fleet's hooks write./// One line of the ledger the fleet's hooks write.
#[derive(Debug)]
struct Entry {
    /// `start` or `done`.
    event: String,
    url: String,
    host: String,
    /// Unix ms.
    at: i64,
}

fn ledger_lines(ledger: &Path) -> Vec<Entry> {
    let text = std::fs::read_to_string(ledger).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            Some(Entry {
                event: fields.first()?.to_string(),
                url: fields.get(1)?.to_string(),
                host: fields.get(2)?.to_string(),
                at: fields.get(3)?.parse().ok()?,
            })
        })
        .collect()
}

/// Every result of `crawl` succeeded, and no snapshot's hook started again after its success
/// was recorded.
fn assert_each_hook_succeeded_once(store: &Store, crawl: i64, ledger: &Path) {
    let snapshots: BTreeMap<i64, String> = store
        .crawls()
        .snapshots(crawl)
        .unwrap()
        .into_iter()
        .map(|s| (s.id, s.url))
        .collect();
    let mut succeeded_at: BTreeMap<String, i64> = BTreeMap::new();
    for result in store.results().of_crawl(crawl).unwrap() {
        assert_eq!(
            result.status,
            abxd::domain::ResultStatus::Succeeded,
            "{result:?}"
        );
        // (A crawl's own hooks have no snapshot, and write no ledger.)
        let Some(snapshot) = result.snapshot_id else {
            continue;
        };
        succeeded_at.insert(snapshots[&snapshot].clone(), result.ended_at.unwrap());
    }
    assert_eq!(succeeded_at.len(), snapshots.len(), "a result per snapshot");
    for entry in ledger_lines(ledger) {
        let success = succeeded_at[&entry.url];
        assert!(
            !(entry.event == "start" && entry.at > success),
            "{entry:?}: started again after it succeeded at {success}"
        );
    }
}

/// Stops every process of `host` (SIGSTOP), again until no new one appears (a stopped process
/// forks no more); returns them.
fn freeze(host: &TestDaemon) -> BTreeSet<i32> {
    use nix::sys::signal::{kill, Signal};
    let mut stopped = BTreeSet::new();
    loop {
        let new: Vec<i32> = common::tagged_pids(&host.tag)
            .into_iter()
            .filter(|pid| !stopped.contains(pid))
            .collect();
        if new.is_empty() {
            return stopped;
        }
        for pid in new {
            let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGSTOP);
            stopped.insert(pid);
        }
    }
}

/// Lets `pids` go on (SIGCONT), still ours (checked by their tag), as a paused host resumes.
fn thaw(host: &TestDaemon, pids: &BTreeSet<i32>) {
    use nix::sys::signal::{kill, Signal};
    let ours: BTreeSet<i32> = common::tagged_pids(&host.tag).into_iter().collect();
    for pid in pids.intersection(&ours) {
        let _ = kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGCONT);
    }
}

/// The live rows of machine `name` other than its orchestrator.
fn live_worker_rows(store: &Store, name: &str) -> Vec<abxd::store::ProcessRow> {
    let filter = abxd::store::ProcessFilter {
        machine_id: Some(name.to_string()),
        ..Default::default()
    };
    store
        .processes()
        .list(&filter)
        .unwrap()
        .into_iter()
        .filter(|r| r.status.is_live() && r.kind != abxd::domain::Kind::Orchestrator)
        .collect()
}

/// A host paused (SIGSTOP of its daemon, workers and hooks) past the lease is presumed dead:
/// the others take its work over and finish the crawl. When it resumes (SIGCONT), the fence
/// refuses everything it still tries to write for that work — results and snapshots stay as the
/// others left them — it tears its hooks down, and it rejoins: it takes new work.
#[test]
fn a_host_paused_past_its_lease_loses_its_work_writes_nothing_for_it_and_rejoins() {
    let Some(server) = fleet_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    let setup = Setup {
        slots: 2,
        hook_seconds: "1",
        extra: "[timeouts]\nlease = \"2s\"\n",
    };
    let hosts = three_hosts(&server, &ledger, &setup);
    let (crawl, _) = add_crawl(&hosts[0], "", 24);
    let store = shared_store(&server);

    // Host b is paused while its hooks run.
    common::wait_until("host-b to run a hook", CRAWL_WAIT, || {
        ledger_lines(&ledger)
            .iter()
            .any(|entry| entry.host == "host-b")
            .then_some(())
    });
    let paused = freeze(&hosts[1]);
    assert!(
        !live_worker_rows(&store, "host-b").is_empty(),
        "host-b was paused with work in hand"
    );
    wait_sealed(&store, crawl);
    let status = hosts[0].ctl_ok(&["status"]);
    let machine = |id: &str| -> String {
        let line = status
            .lines()
            .find(|l| l.starts_with("machines: "))
            .unwrap();
        let entries = line.trim_start_matches("machines: ").split(", host-");
        let entry = entries.map(|e| format!("host-{}", e.trim_start_matches("host-")));
        entry.into_iter().find(|e| e.starts_with(id)).unwrap()
    };
    assert!(machine("host-a").ends_with("this one"), "{status}");
    assert!(machine("host-b").contains(" SILENT since "), "{status}");
    assert!(machine("host-c").contains(" heard "), "{status}");
    assert_each_hook_succeeded_once(&store, crawl, &ledger);
    let results = store.results().of_crawl(crawl).unwrap();
    let snapshots = store.crawls().snapshots(crawl).unwrap();

    // It resumes: everything it held is torn down, and nothing it writes for it lands.
    let resumed_at = store.shared_now();
    thaw(&hosts[1], &paused);
    common::wait_until("host-b to let go of its lost work", CRAWL_WAIT, || {
        live_worker_rows(&store, "host-b").is_empty().then_some(())
    });
    assert_eq!(
        store.results().of_crawl(crawl).unwrap(),
        results,
        "no result changed"
    );
    assert_eq!(
        store.crawls().snapshots(crawl).unwrap(),
        snapshots,
        "no snapshot changed"
    );
    // Its workers learnt it (a renewal or a write refused) and stopped as interrupted.
    let filter = abxd::store::ProcessFilter {
        machine_id: Some("host-b".into()),
        crawl_id: Some(crawl),
        ..Default::default()
    };
    let lost: Vec<_> = store
        .processes()
        .list(&filter)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind.is_worker() && r.exit_code == Some(abxd::worker::EXIT_INTERRUPTED))
        .collect();
    assert!(!lost.is_empty(), "host-b's workers stopped as interrupted");
    for worker in &lost {
        let log = std::fs::read_to_string(worker.stderr_path.as_deref().unwrap()).unwrap();
        assert!(
            log.contains("changed hands") || log.contains("lost the lease"),
            "{log}"
        );
    }

    // It rejoins: heard again, and it takes a share of new work.
    common::wait_until("host-b to be heard again", CRAWL_WAIT, || {
        let machines = store.machines().all().unwrap();
        let b = machines.iter().find(|m| m.id == "host-b").unwrap();
        (b.heartbeat_at > resumed_at).then_some(())
    });
    let (second, _) = add_crawl(&hosts[2], "more/", 24);
    wait_sealed(&store, second);
    let ran_more = ledger_lines(&ledger)
        .into_iter()
        .any(|entry| entry.url.contains("/more/") && entry.host == "host-b");
    assert!(ran_more, "host-b took a share of new work");
    wait_settled(&store);
}

/// PostgreSQL restarting mid-crawl: every host keeps its processes and writes what it could not
/// once the server is back; the crawl ends with every hook succeeded, none run again for the
/// outage, on any host.
#[test]
fn postgres_restarting_mid_crawl_loses_nothing_and_runs_no_hook_twice_on_any_host() {
    let Some(mut server) = fleet_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    let setup = Setup {
        hook_seconds: "1",
        ..DEFAULT
    };
    let hosts = three_hosts(&server, &ledger, &setup);
    let (crawl, urls) = add_crawl(&hosts[0], "", 24);
    common::wait_until("hooks to run", CRAWL_WAIT, || {
        (ledger_lines(&ledger).len() >= 4).then_some(())
    });

    server.stop();
    common::wait_until("a host to see the outage", CRAWL_WAIT, || {
        let status = hosts[0].ctl(&["status"]);
        let status = String::from_utf8_lossy(&status.stdout).to_string();
        status.contains("DATABASE UNAVAILABLE").then_some(())
    });
    server.start_again();

    let store = shared_store(&server);
    wait_sealed(&store, crawl);
    assert_each_hook_succeeded_once(&store, crawl, &ledger);
    let starts = ledger_lines(&ledger)
        .into_iter()
        .filter(|e| e.event == "start")
        .count();
    assert_eq!(starts, urls.len(), "no hook ran twice for the outage");
    wait_settled(&store);
}

/// A small deterministic generator (xorshift), so that a torture run can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// The daemon of a host started with [`TestDaemon::launch_in_own_pid_namespace`]: the first
/// process of its namespace, `unshare`'s only child (as this process sees it).
fn namespace_init(host: &TestDaemon) -> i32 {
    let unshare = host.pid();
    let children = std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children"))
        .unwrap_or_default();
    children
        .split_whitespace()
        .next()
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("unshare {unshare} has no child"))
}

/// kill -9 of a random host's whole tree (its namespace's first process: the kernel kills the
/// rest) at random moments, each host started again at once: its start-up finds its own rows
/// lost and recovers its work, the others go on; nothing is lost, no hook runs again after its
/// success, nothing is left running, every row is final. The seed is printed
/// (`ABXD_TORTURE_SEED` replays a run).
#[test]
fn kill_9_of_random_hosts_loses_nothing_and_runs_no_success_again() {
    let Some(server) = fleet_server() else {
        return;
    };
    let seed: u64 = std::env::var("ABXD_TORTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| abxd::store::now_ms() as u64 | 1);
    println!("torture seed: {seed} (replay with ABXD_TORTURE_SEED={seed})");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    let setup = Setup {
        hook_seconds: "0.5",
        ..DEFAULT
    };
    let mut hosts = three_hosts(&server, &ledger, &setup);
    let (crawl, _) = add_crawl(&hosts[0], "", 30);
    let store = shared_store(&server);

    let mut kills = Vec::new();
    while kills.len() < 6 {
        let sealed = store.crawls().get(crawl).unwrap().unwrap().status;
        if sealed == abxd::domain::WorkStatus::Sealed {
            break;
        }
        // A random moment: the point of the test, not a wait for something.
        let delay = 100 + rng.below(900);
        std::thread::sleep(Duration::from_millis(delay));
        let victim = rng.below(NAMES.len() as u64) as usize;
        let init = namespace_init(&hosts[victim]);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(init),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        hosts[victim].wait_exit();
        common::wait_until(
            "the killed host's processes to be gone",
            common::WAIT,
            || {
                common::tagged_pids(&hosts[victim].tag)
                    .is_empty()
                    .then_some(())
            },
        );
        kills.push((NAMES[victim], delay));
        hosts[victim].launch_in_own_pid_namespace();
    }
    println!("kills (host, ms after the previous one): {kills:?}");
    assert!(
        kills.len() >= 4,
        "only {} kills before the crawl ended",
        kills.len()
    );
    wait_sealed(&store, crawl);
    assert_each_hook_succeeded_once(&store, crawl, &ledger);
    wait_settled(&store);
    common::assert_every_row_final(&store.processes().crawl_processes(crawl).unwrap());
}

/// A crawl whose crawl-scoped hook runs in the background (a session its snapshots' hooks reach
/// on its own host, as Chrome launched for a crawl) keeps its snapshots on its host: the other
/// hosts, with free slots, run none of them.
#[test]
fn a_crawl_with_a_crawl_scoped_session_keeps_its_snapshots_on_its_host() {
    let Some(server) = fleet_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    let hosts = three_hosts(&server, &ledger, &DEFAULT);
    let (crawl, _) = add_crawl_of(&hosts[0], "pinned", 12, "ledger,session");
    let store = shared_store(&server);
    wait_sealed(&store, crawl);
    assert_each_hook_succeeded_once(&store, crawl, &ledger);
    let ran_on: BTreeSet<String> = ledger_lines(&ledger).into_iter().map(|e| e.host).collect();
    assert_eq!(ran_on.len(), 1, "the snapshots ran on {ran_on:?}");
    let session = store
        .processes()
        .crawl_processes(crawl)
        .unwrap()
        .into_iter()
        .find(|r| r.kind == abxd::domain::Kind::Hook && r.snapshot_id.is_none())
        .expect("the session's row");
    assert_eq!(ran_on.into_iter().next(), session.machine_id);
    wait_settled(&store);
}

/// A host gone for good (kill -9 of its whole tree mid-crawl, never started again) keeps its
/// rows live, shown as unknown. `abxd machine forget` refuses it while it was heard within the
/// lease, and refuses this machine and an unknown one; once it is silent, forgetting it ends its
/// rows, recovers its work and removes it from the machines, and another host then finishes
/// the crawl, every hook succeeding once, nothing started again after its success.
#[test]
fn a_host_gone_for_good_is_forgotten_and_another_finishes_its_work() {
    let Some(server) = fleet_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    let lease = "[timeouts]\nlease = \"4s\"\n";
    let slow = Setup {
        hook_seconds: "30",
        extra: lease,
        ..DEFAULT
    };
    let mut gone = host(&server, "host-gone", &ledger, &slow);
    let (crawl, _) = add_crawl(&gone, "", 3);
    common::wait_until("a hook of the host to run", common::WAIT, || {
        ledger_lines(&ledger)
            .iter()
            .any(|e| e.event == "start")
            .then_some(())
    });
    let init = nix::unistd::Pid::from_raw(namespace_init(&gone));
    nix::sys::signal::kill(init, nix::sys::signal::Signal::SIGKILL).unwrap();
    gone.wait_exit();
    let store = shared_store(&server);
    assert!(!live_worker_rows(&store, "host-gone").is_empty());

    let quick = Setup {
        extra: lease,
        ..DEFAULT
    };
    let mut keeper = TestDaemon::prepare(&host_config(&server, "host-keeper", &ledger, &quick));
    let forget = |id: &str| {
        keeper
            .abxd_command(&["machine", "forget", id])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap()
    };
    let early = forget("host-gone");
    let said = String::from_utf8_lossy(&early.stderr);
    assert_eq!(early.status.code(), Some(1), "{said}");
    assert!(said.contains("machine host-gone was heard"), "{said}");
    for (id, why) in [
        ("host-keeper", "host-keeper is this machine"),
        ("nosuch", "no machine nosuch is registered"),
    ] {
        let refused = forget(id);
        let said = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{said}");
        assert!(said.contains(why), "{said}");
    }
    assert!(
        !live_worker_rows(&store, "host-gone").is_empty(),
        "nothing changed"
    );

    common::wait_until("the host to be silent for the lease", CRAWL_WAIT, || {
        let heard = store.machines().all().unwrap();
        let gone = heard.iter().find(|m| m.id == "host-gone").unwrap();
        (store.shared_now() - gone.heartbeat_at > 4_000).then_some(())
    });
    let forgot = forget("host-gone");
    let said = String::from_utf8_lossy(&forgot.stdout);
    assert!(
        forgot.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&forgot.stderr)
    );
    assert!(said.contains("forgot machine host-gone"), "{said}");
    assert!(said.contains("requeue snapshot"), "{said}");
    let filter = abxd::store::ProcessFilter {
        machine_id: Some("host-gone".into()),
        ..Default::default()
    };
    let rows = store.processes().list(&filter).unwrap();
    common::assert_every_row_final(&rows);
    assert!(rows.iter().any(|r| r
        .end_detail_text()
        .as_deref()
        .is_some_and(|d| d.contains("forgotten by an operator"))));
    assert!(store
        .machines()
        .all()
        .unwrap()
        .iter()
        .all(|m| m.id != "host-gone"));

    keeper.launch_in_own_pid_namespace();
    wait_sealed(&store, crawl);
    assert_each_hook_succeeded_once(&store, crawl, &ledger);
    let done_by: BTreeSet<String> = ledger_lines(&ledger)
        .into_iter()
        .filter(|e| e.event == "done")
        .map(|e| e.host)
        .collect();
    assert_eq!(done_by, BTreeSet::from(["host-keeper".to_string()]));
}
