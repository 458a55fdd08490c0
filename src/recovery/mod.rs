//! Recovery: reconciling the process table with reality, and recovering interrupted work.
//!
//! Reconciliation runs on every start, before any work is claimed, in one pass over the live
//! rows: a row whose process is gone, reused or from an earlier boot becomes `lost` (nothing is
//! signalled); a live process whose supervising parent is gone — its previous incarnation crashed
//! — roots an orphan tree, torn down whole by the teardown map (marker scan included). Then, and
//! also at run time when a worker dies, work without a live owner is recovered: a snapshot whose
//! results are all final is sealed, any other is requeued and its interrupted results run again
//! (a result interrupted `limits.max_result_attempts` times ends failed instead); a crawl whose
//! snapshots are all sealed is sealed, any other is requeued. A result that succeeded is never
//! touched.
//!
//! Invariants: the plan is computed read-only, so `abxd recover --dry-run` prints exactly what
//! the daemon then does; process evidence (identity) decides first, an expired lease only where
//! no owner row exists.

mod describe;
mod forget;
mod work;

pub use describe::describe;
pub use forget::{forget_machine, ForgetError, Forgotten};
#[cfg(test)]
use work::MAX_BACKOFF;
pub use work::{apply_work, backoff, plan_work, recover_ownerless, take_over_silent, WorkPlan};

use crate::config::Config;
use crate::domain::Kind;
use crate::identity;
use crate::liveness;
use crate::marker;
use crate::proctree;
use crate::store::{Store, StoreError};
use std::collections::{BTreeMap, BTreeSet};

/// A live row whose process is not there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostRow {
    pub row: i64,
    pub pid: Option<i32>,
    pub why: String,
}

/// A tree of live processes left by a previous incarnation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrphanTree {
    pub row: i64,
    pub pids: Vec<i32>,
}

/// A process of abxd's own user whose environment cannot be read (it made itself
/// non-dumpable), so its marker cannot be: unknown, never taken as absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenProcess {
    pub process: proctree::Found,
    /// The hook row whose process group it is in: it is that hook's, recorded below it and torn
    /// down as an orphan. `None`: nothing ties it to a row; reported, left alone.
    pub hook: Option<i64>,
}

/// What reconciling the process table does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciliation {
    pub lost: Vec<LostRow>,
    pub orphans: Vec<OrphanTree>,
    pub hidden: Vec<HiddenProcess>,
}

/// Finds the lost rows and the orphan trees. `this_orchestrator` is the row of the running
/// daemon (not an orphan of anything).
pub fn reconcile(
    store: &Store,
    instance: &str,
    this_orchestrator: Option<i64>,
) -> Result<Reconciliation, StoreError> {
    let live = store.processes().live_rows()?;
    let mut plan = Reconciliation::default();
    let mut alive: BTreeSet<i64> = BTreeSet::new();
    let candidates: Vec<&crate::store::LiveRow> = live
        .iter()
        .filter(|r| Some(r.id) != this_orchestrator)
        .collect();
    let identities: Vec<&identity::Identity> = candidates
        .iter()
        .filter_map(|r| r.identity.as_ref())
        .collect();
    let mut checked = liveness::why_all_gone(&identities).into_iter();
    for row in candidates {
        let why = match &row.identity {
            None => Some("never started: no process was recorded".to_string()),
            Some(_) => checked.next().flatten(),
        };
        match why {
            Some(why) => plan.lost.push(LostRow {
                row: row.id,
                pid: row.identity.as_ref().map(|id| id.pid),
                why,
            }),
            None => {
                alive.insert(row.id);
            }
        }
    }
    // One marker scan for the whole reconciliation (each reads every process's environment).
    let marker::Scan {
        by_row: marked,
        unreadable,
    } = marker::scan_any(instance);
    // A live process whose parent row is not alive roots an orphan tree. (A live orchestrator row
    // is a running daemon — the data-dir lock allows only one — never an orphan.)
    let mut covered: BTreeSet<i64> = BTreeSet::new();
    for row in live.iter().filter(|r| alive.contains(&r.id)) {
        let parent_alive = row
            .parent_id
            .is_some_and(|p| alive.contains(&p) || Some(p) == this_orchestrator);
        if parent_alive || row.kind == Kind::Orchestrator {
            continue;
        }
        let subtree = store.processes().live_subtree(row.id)?;
        covered.extend(subtree.iter().map(|r| r.id));
        plan.orphans.push(OrphanTree {
            row: row.id,
            pids: tree_pids(&marked, &subtree),
        });
    }
    // Processes that only their marker ties to us (their rows are final, or they double-forked
    // away), unless a live, supervised row above them will see to them.
    let supervised: BTreeSet<i64> = alive
        .difference(&covered)
        .copied()
        .chain(this_orchestrator)
        .collect();
    for (row, processes) in marked {
        if covered.contains(&row) || has_ancestor_in(store, row, &supervised)? {
            continue;
        }
        plan.orphans.push(OrphanTree {
            row,
            pids: processes.iter().map(|p| p.identity.pid).collect(),
        });
    }
    for process in unreadable {
        if store
            .processes()
            .live_row_by_pid(process.identity.pid)?
            .is_some()
        {
            continue; // a recorded process: its row speaks for it
        }
        let hook = store.processes().hook_row_by_group(process.pgid)?;
        if let Some(row) = hook {
            if has_ancestor_in(store, row, &supervised)? && !covered.contains(&row) {
                continue; // a live supervisor above it sees to it
            }
        }
        plan.hidden.push(HiddenProcess { process, hook });
    }
    Ok(plan)
}

/// Whether row `row` or one of its ancestors is in `rows`.
fn has_ancestor_in(store: &Store, row: i64, rows: &BTreeSet<i64>) -> Result<bool, StoreError> {
    let mut current = Some(row);
    while let Some(id) = current {
        if rows.contains(&id) {
            return Ok(true);
        }
        current = store.processes().get(id)?.and_then(|r| r.parent_id);
    }
    Ok(false)
}

/// The pids alive in an orphan subtree now: its rows, their descendants, the processes `marked`
/// with one of its rows.
fn tree_pids(
    marked: &BTreeMap<i64, Vec<proctree::Found>>,
    subtree: &[crate::store::ProcessRow],
) -> Vec<i32> {
    let mut pids: BTreeSet<i32> = subtree
        .iter()
        .filter(|r| {
            r.identity
                .as_ref()
                .is_some_and(|id| identity::check(id).is_alive())
        })
        .filter_map(|r| r.pid)
        .collect();
    let roots: Vec<i32> = pids.iter().copied().collect();
    pids.extend(
        proctree::descendants_of(&roots)
            .iter()
            .map(|f| f.identity.pid),
    );
    for row in subtree {
        pids.extend(
            marked
                .get(&row.id)
                .into_iter()
                .flatten()
                .map(|f| f.identity.pid),
        );
    }
    pids.into_iter().collect()
}

/// Makes the lost rows final.
pub fn apply_lost(store: &Store, lost: &[LostRow]) -> Result<(), StoreError> {
    let rows: Vec<(i64, &str)> = lost.iter().map(|l| (l.row, l.why.as_str())).collect();
    liveness::finish_lost(store, &rows)
}

/// Records each hidden process tied to a hook row as a `child` row below it and returns those
/// rows: orphan trees to tear down (their rows carry their identity, so the teardown finds them
/// without their marker).
pub fn adopt_hidden(store: &Store, hidden: &[HiddenProcess]) -> Result<Vec<i64>, StoreError> {
    let mut rows = Vec::new();
    for hidden in hidden {
        if let Some(hook) = hidden.hook {
            rows.push(store.processes().record_descendant(hook, &hidden.process)?);
        }
    }
    Ok(rows)
}

/// `abxd recover --dry-run`: what recovery would do now, without doing it.
pub fn dry_run(config: &Config) -> Result<Vec<String>, StoreError> {
    let store = Store::open_read_only_at(&config.database)?;
    let instance = store.marker_namespace()?;
    let reconciliation = reconcile(&store, &instance, None)?;
    let mut dead: BTreeSet<i64> = reconciliation.lost.iter().map(|l| l.row).collect();
    for orphan in &reconciliation.orphans {
        dead.extend(
            store
                .processes()
                .live_subtree(orphan.row)?
                .iter()
                .map(|r| r.id),
        );
    }
    let work = plan_work(&store, config, None, &dead)?;
    Ok(describe(&reconciliation, &work))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Claim, Kind, Queue, ResultStatus};
    use crate::store::NewProcess;
    use std::path::Path;
    use std::time::Duration;

    const LEASE: Duration = Duration::from_secs(60);

    /// A store in a temp dir and a config with `max_result_attempts = 2`.
    fn setup() -> (tempfile::TempDir, Store, Config) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("abxd.sqlite3")).unwrap();
        let config = Config::parse(
            Path::new("/etc/abxd/supervisor.toml"),
            "[limits]\nmax_result_attempts = 2\n",
        )
        .unwrap();
        (dir, store, config)
    }

    /// A worker row (never started: for the plan, a dead owner once listed in `dead`).
    fn worker(store: &Store, kind: Kind) -> i64 {
        store
            .processes()
            .insert(&NewProcess {
                parent_id: None,
                kind,
                crawl_id: None,
                snapshot_id: None,
                result_id: None,
                argv: vec!["abxd".into()],
                cwd: "/".into(),
                timeout_ms: None,
            })
            .unwrap()
    }

    /// A crawl of one snapshot, both claimed by (now dead) workers; returns their claims and
    /// the workers' rows.
    fn claimed(store: &Store) -> (Claim, Claim, BTreeSet<i64>) {
        let crawl = store
            .crawls()
            .add(
                &crate::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 0),
                None,
            )
            .unwrap();
        let crawl_claim = store
            .queue()
            .claim(Queue::Crawls, None, LEASE, None)
            .unwrap()
            .unwrap();
        assert_eq!(crawl_claim.id, crawl);
        let crawl_worker = worker(store, Kind::CrawlWorker);
        assert!(store.queue().set_owner(crawl_claim, crawl_worker).unwrap());
        let snapshot = store
            .crawls()
            .add_snapshot(crawl, "http://a/", 0)
            .unwrap()
            .unwrap();
        let claim = store
            .queue()
            .claim(Queue::Snapshots, Some(crawl), LEASE, None)
            .unwrap()
            .unwrap();
        assert_eq!(claim.id, snapshot);
        let snapshot_worker = worker(store, Kind::SnapshotWorker);
        assert!(store.queue().set_owner(claim, snapshot_worker).unwrap());
        (
            crawl_claim,
            claim,
            BTreeSet::from([crawl_worker, snapshot_worker]),
        )
    }

    /// A result of `hook` in the snapshot, started `attempts` times and left as it is.
    fn started(store: &Store, crawl: i64, snapshot: i64, hook: &str, attempts: u32) -> i64 {
        let result = store
            .results()
            .result_for(crawl, Some(snapshot), "p", hook)
            .unwrap();
        for _ in 0..attempts {
            store.results().start(result.id, None).unwrap();
        }
        result.id
    }

    #[test]
    fn interrupted_results_run_again_finished_ones_never_and_the_work_is_requeued() {
        let (_dir, store, config) = setup();
        let (crawl_claim, snapshot_claim, dead) = claimed(&store);
        let (crawl, snapshot) = (crawl_claim.id, snapshot_claim.id);
        let done = started(&store, crawl, snapshot, "a", 1);
        store
            .results()
            .finish(done, ResultStatus::Succeeded, None, &[], 0)
            .unwrap();
        let interrupted = started(&store, crawl, snapshot, "b", 1);
        let plan = plan_work(&store, &config, None, &dead).unwrap();
        assert_eq!(
            plan,
            WorkPlan {
                retry_results: vec![interrupted],
                requeue_snapshots: vec![snapshot_claim],
                requeue_crawls: vec![crawl_claim],
                ..WorkPlan::default()
            }
        );
    }

    #[test]
    fn a_result_interrupted_too_often_fails_and_then_its_snapshot_and_crawl_are_sealed() {
        let (_dir, store, config) = setup();
        let (crawl_claim, snapshot_claim, dead) = claimed(&store);
        let (crawl, snapshot) = (crawl_claim.id, snapshot_claim.id);
        let worn = started(&store, crawl, snapshot, "a", 2);
        let crawl_hook = store
            .results()
            .result_for(crawl, None, "p", "bg")
            .unwrap()
            .id;
        store.results().start(crawl_hook, None).unwrap();
        let plan = plan_work(&store, &config, None, &dead).unwrap();
        assert_eq!(
            plan,
            WorkPlan {
                fail_results: vec![(worn, 2), (crawl_hook, 1)],
                seal_snapshots: vec![snapshot_claim],
                seal_crawls: vec![crawl_claim],
                ..WorkPlan::default()
            }
        );
        apply_work(&store, &config, &plan, false).unwrap();
        assert!(plan_work(&store, &config, None, &dead).unwrap().is_empty());
    }

    #[test]
    fn work_whose_owner_lives_is_left_alone_and_a_plan_is_scoped_by_crawl() {
        let (_dir, store, config) = setup();
        let (crawl_claim, snapshot_claim, dead) = claimed(&store);
        let (crawl, snapshot) = (crawl_claim.id, snapshot_claim.id);
        started(&store, crawl, snapshot, "a", 1);
        // The owners run (this test's process and a child stand for them): nothing to do.
        let child = KilledOnDrop(
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap(),
        );
        let pids = [std::process::id() as i32, child.0.id() as i32];
        for (&owner, pid) in dead.iter().zip(pids) {
            let running = identity::of_unreaped_child(pid).unwrap();
            store
                .processes()
                .record_spawned(
                    owner,
                    &running,
                    pid,
                    (None, None),
                    rustix::process::getuid().as_raw(),
                )
                .unwrap();
        }
        let plan = plan_work(&store, &config, None, &BTreeSet::new()).unwrap();
        assert!(plan.is_empty(), "{plan:?}");
        let elsewhere = plan_work(&store, &config, Some(crawl + 1), &dead).unwrap();
        assert!(elsewhere.is_empty(), "{elsewhere:?}");
    }

    #[test]
    fn work_claimed_by_a_process_that_died_before_it_started_the_worker_is_recovered_at_once() {
        let (_dir, store, config) = setup();
        store
            .crawls()
            .add(
                &crate::domain::CrawlSpec::of_urls(vec!["http://a/".into()], 0),
                None,
            )
            .unwrap();
        // The claimer's row: its process is gone (never recorded), the lease still runs.
        let claimer = worker(&store, Kind::Orchestrator);
        let claim = store
            .queue()
            .claim(Queue::Crawls, None, LEASE, Some(claimer))
            .unwrap()
            .unwrap();
        let plan = plan_work(&store, &config, None, &BTreeSet::new()).unwrap();
        assert_eq!(plan.requeue_crawls, vec![claim]);
    }

    /// A child killed and reaped when the test ends, also when it fails.
    struct KilledOnDrop(std::process::Child);

    impl Drop for KilledOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn back_off_doubles_with_each_restart_up_to_ten_minutes() {
        let (_dir, _store, config) = setup();
        let base = config.timeouts.retry_backoff;
        assert_eq!(backoff(&config, 0), base);
        assert_eq!(backoff(&config, 3), base * 8);
        assert_eq!(backoff(&config, 40), MAX_BACKOFF);
    }
}
