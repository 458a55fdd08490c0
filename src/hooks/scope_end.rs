//! A scope's end: its background hooks get SIGTERM with their timeout as grace, in waves —
//! dependents before the plugins they require (`order`), each wave once the one before it is
//! gone.
//!
//! Invariant: a background hook is signalled at its scope's end once, and only after every
//! hook of a plugin that requires its plugin has ended.

use super::{order, Ending, HookRunner};
use crate::domain::EndReason;
use crate::signal::Signal;
use crate::store::Store;
use crate::supervisor::{RunsHooks, Supervisor};
use std::time::Instant;

impl HookRunner {
    /// Ends the scope: background hooks still alive get SIGTERM with their timeout as grace —
    /// at once, or, in a scope of background hooks only, once each had its timeout to finish.
    pub fn end_scope<O: RunsHooks>(&mut self, supervisor: &mut Supervisor<O>, store: &Store) {
        if self.ending != Ending::NotYet {
            return;
        }
        let longest = self
            .running
            .values()
            .map(|r| r.prepared.timeout)
            .max()
            .unwrap_or_default();
        // abx-dl waits so only at the end of a snapshot; a crawl's end stops its hooks at once.
        let crawl_scope = self.scope.snapshot.is_none();
        if self.has_foreground || self.running.is_empty() || crawl_scope {
            self.stop_background(supervisor, store);
        } else {
            self.ending = Ending::StopAt(Instant::now() + longest);
        }
    }

    pub(super) fn stop_background<O: RunsHooks>(
        &mut self,
        supervisor: &mut Supervisor<O>,
        store: &Store,
    ) {
        self.ending = Ending::Stopped;
        self.stop_wave(supervisor, store);
    }

    /// Stops the next wave of background hooks once the one before it is gone (`order`).
    pub(super) fn stop_wave<O: RunsHooks>(
        &mut self,
        supervisor: &mut Supervisor<O>,
        store: &Store,
    ) {
        let stopping = |row: &i64| self.stopped_at_end.contains(row);
        if self.running.keys().any(stopping) {
            return;
        }
        let left: Vec<order::Stopping<'_>> = (self.running.iter())
            .map(|(&row, run)| order::Stopping {
                row,
                plugin: &run.prepared.hook.plugin,
                requires: &run.prepared.requires,
            })
            .collect();
        for row in order::stop_now(&left) {
            let running = &self.running[&row];
            log::info!(
                "{}: its scope ended, stopping it",
                running.prepared.hook.file_name
            );
            self.stopped_at_end.insert(row);
            let grace = running.prepared.timeout;
            supervisor.stop(store, row, Signal::TERM, grace, EndReason::Killed);
        }
    }
}
