//! The end of a worker's work: sealing it — unless the worker was interrupted or its work
//! changed hands — and adding what its writes found of a busy database to its machine's counts.
//!
//! Invariant: only work really finished is sealed, through the fence of its claim; a sealed
//! crawl's directory is taken back from the hook user (`hook_user::take_back`); the counts are a
//! report (best effort), never the reason a worker fails.

use super::{Context, WorkerError, EXIT_DONE, EXIT_INTERRUPTED};
use crate::domain::Queue;

impl<O: crate::supervisor::RunsHooks> Context<O> {
    /// Seals the work unless interrupted; returns the exit code. What this worker's writes
    /// found of a busy database is added to its machine's counts (`/metrics`) as it goes.
    pub(super) fn finish(mut self, queue: Queue, id: i64) -> Result<i32, WorkerError> {
        let code = self.seal(queue, id);
        let counts = crate::store::write_counts();
        if counts != (0, 0) {
            let machine = crate::identity::machine_id();
            // (Best effort: a count is a report, not the work.)
            if let Err(err) = self
                .store
                .machines()
                .add_worker_write_counts(machine, counts)
            {
                log::warn!("its busy writes are not counted: {err}");
            }
        }
        code
    }

    fn seal(&mut self, queue: Queue, id: i64) -> Result<i32, WorkerError> {
        if self.interrupted {
            return Ok(EXIT_INTERRUPTED);
        }
        let Some(claim) = self.store.fence() else {
            return Ok(EXIT_INTERRUPTED);
        };
        debug_assert_eq!((claim.queue, claim.id), (queue, id));
        let (ended_by, failed) = (self.ended_by, self.failed);
        let sealed = self.persist(|store| match ended_by {
            Some(limit) => store.crawls().seal_ended_by(claim, limit),
            None if failed => store.crawls().seal_failed(claim),
            None => store.queue().seal(claim),
        })?;
        match sealed {
            Some(true) => {}
            // (Refused by the fence, or sealed by someone else since: not this worker's.)
            Some(false) | None => return Ok(EXIT_INTERRUPTED),
        }
        log::info!("{queue} {id} sealed");
        if let (Queue::Crawls, Some(user)) = (queue, &self.run_as) {
            let dir = crate::hooks::crawl_dir(&self.config.data_dir, id);
            // (Best effort: the crawl is sealed either way; what is left open is said.)
            if let Err(err) = user.take_back(&dir, &self.config.data_dir) {
                log::warn!(
                    "cannot take {} back from {}: {err}",
                    dir.display(),
                    user.name
                );
            }
        }
        Ok(EXIT_DONE)
    }
}
