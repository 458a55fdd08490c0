//! What belongs to a tree being torn down: the processes in its rows' cgroups, the procfs
//! descendants of its known members, and — where no cgroup contains it — every process carrying
//! the marker of one of its rows: found among this process's own children (and their
//! descendants) when everything that leaves the tree is re-parented here (a child subreaper
//! tearing down one of its child rows: nothing of the tree can be anywhere else), else by
//! reading every process's environment.
//!
//! Invariant: within one turn of the loop ([`DeadlineMap::start_sharing_scans`]) the marker scan,
//! which reads every process's environment, is made once and shared by every tree; a caller that
//! needs a scan made after some moment (`fresh_after`) gets a new one.

use super::DeadlineMap;
use crate::cgroup::Cgroup;
use crate::identity::PidRef;
use crate::marker;
use crate::proctree::{self, Found};
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

impl DeadlineMap {
    /// From now until [`DeadlineMap::stop_sharing_scans`], one marker scan is shared by every
    /// enumeration (see the invariants): for one turn of the loop.
    pub fn start_sharing_scans(&mut self) {
        self.shared_scan = Some(None);
    }

    pub fn stop_sharing_scans(&mut self) {
        self.shared_scan = None;
    }

    /// The processes carrying a marker of one of `rows`, from a scan made after `fresh_after`:
    /// this turn's shared scan if there is one that recent, else a new one.
    fn marked(&mut self, rows: &[i64], fresh_after: Option<Instant>) -> Vec<Found> {
        let Some(shared) = &mut self.shared_scan else {
            return marker::marked(&self.instance, rows)
                .into_values()
                .flatten()
                .collect();
        };
        let stale = |(at, _): &(Instant, _)| fresh_after.is_some_and(|after| *at <= after);
        if shared.as_ref().is_none_or(stale) {
            *shared = Some((Instant::now(), marker::marked_any(&self.instance)));
        }
        let (_, by_row) = shared.as_ref().expect("just made");
        rows.iter()
            .filter_map(|row| by_row.get(row))
            .flatten()
            .cloned()
            .collect()
    }

    /// Live processes not in `known` that descend from `known`, carry a marker of `rows` (by a
    /// marker scan made after `fresh_after`) or live in a cgroup of tree `root`, each pinned
    /// (`None`: it ended before it could be).
    pub(super) fn enumerate(
        &mut self,
        root: i64,
        known: &[i32],
        rows: &[i64],
        fresh_after: Option<Instant>,
    ) -> Vec<(Found, Option<PidRef>)> {
        let known_set: HashSet<i32> = known.iter().copied().collect();
        let mut found: BTreeMap<i32, Found> = BTreeMap::new();
        // (Descendants are pinned as they are found; the rest below, once all are known.)
        let mut pinned: BTreeMap<i32, (Found, PidRef)> = BTreeMap::new();
        // (The cgroups nest like the tree: reading the outermost ones reads them all.)
        let contained: Vec<i32> = self
            .trees
            .get(&root)
            .into_iter()
            .flat_map(|tree| {
                crate::cgroup::outermost(tree.cgroups.values().map(|(_, cgroup)| cgroup))
            })
            .flat_map(Cgroup::procs)
            .filter(|pid| !known_set.contains(pid))
            .collect();
        for process in contained.into_iter().filter_map(proctree::read) {
            found.insert(process.identity.pid, process);
        }
        for (process, pidfd) in proctree::descendants_pinned(known) {
            pinned.insert(process.identity.pid, (process, pidfd));
        }
        // A tree whose root is contained in a cgroup has all of itself in cgroups: no marker
        // scan (which reads every process's environment) is needed.
        let (contained, leavers_come_here) = self.trees.get(&root).map_or((false, false), |tree| {
            (tree.cgroups.contains_key(&root), tree.leavers_come_here)
        });
        if leavers_come_here && !contained {
            // What left the tree was re-parented here: this process's children carrying a
            // marker of the tree, with their descendants.
            let me = std::process::id() as i32;
            let ours: Vec<i32> = proctree::children_of(me)
                .into_iter()
                .filter(|pid| {
                    !found.contains_key(pid)
                        && !pinned.contains_key(pid)
                        && !known_set.contains(pid)
                })
                .collect();
            let left: Vec<Found> = marker::marked_among(&self.instance, &ours, rows)
                .into_values()
                .flatten()
                .collect();
            let left_pids: Vec<i32> = left.iter().map(|p| p.identity.pid).collect();
            for process in left.into_iter().chain(proctree::descendants_of(&left_pids)) {
                found.insert(process.identity.pid, process);
            }
        } else if !contained {
            for process in self.marked(rows, fresh_after) {
                found.insert(process.identity.pid, process);
            }
        }
        // What was not pinned as it was found is pinned now; by pid, as the tree grew.
        let mut all: BTreeMap<i32, (Found, Option<PidRef>)> = pinned
            .into_iter()
            .map(|(pid, (process, pidfd))| (pid, (process, Some(pidfd))))
            .collect();
        for (pid, process) in found {
            all.entry(pid)
                .or_insert_with(|| match proctree::pin_found(&process) {
                    Some((pinned, pidfd)) => (pinned, Some(pidfd)),
                    None => (process, None),
                });
        }
        all.into_iter()
            .filter(|(pid, _)| !known_set.contains(pid))
            .map(|(_, member)| member)
            .collect()
    }
}
