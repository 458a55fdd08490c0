//! Fencing: the token of a claim, and the writes of work it guards.
//!
//! Invariants: a crawl's or snapshot's epoch changes whenever the row changes hands — claimed,
//! put back, sealed — and only in the statement that changes it, conditional on the epoch it
//! read; a store fenced to a claim (a worker's) commits a write of work only in a transaction
//! that found the claim's row at the claim's epoch and kept it there until the commit (the row
//! is read `FOR SHARE`). So a worker that lost its lease — paused past it, cut off, taken over
//! by another host — writes nothing for work it no longer holds, however late it comes back.

use crate::domain::Claim;
use crate::store::engine::sql::{args, Db};
use crate::store::work::table;
use crate::store::{Store, StoreError};

/// Fails the transaction of `tx` unless the row of `claim` is still at its epoch, holding it
/// there until the transaction ends.
fn check(claim: Claim, tx: &Db) -> Result<(), StoreError> {
    let sql = format!(
        "SELECT epoch FROM {} WHERE id = ?1{}",
        table(claim.queue),
        tx.dialect().for_share()
    );
    let now: Option<i64> = tx.query_value(&sql, &args![claim.id])?;
    if now == Some(claim.epoch) {
        return Ok(());
    }
    Err(StoreError::Fenced { claim, now })
}

impl Store {
    /// From now on every write of work this store makes is taken only while `claim` holds:
    /// what a worker does first, with the claim it works for.
    pub fn fence_to(&self, claim: Claim) {
        self.fence.set(Some(claim));
    }

    /// The claim this store's writes of work are fenced to, if any.
    pub fn fence(&self) -> Option<Claim> {
        self.fence.get()
    }

    /// Moves the fence along when its own row changed hands in a write of this store (its
    /// owner sealed it and goes on writing what its end still brings).
    pub(in crate::store) fn follow_fence(&self, from: Claim, to_epoch: i64) {
        if self.fence.get() == Some(from) {
            self.fence.set(Some(Claim {
                epoch: to_epoch,
                ..from
            }));
        }
    }

    /// [`Store::write`] for a write of work (results, seals, new snapshots, claims and puts
    /// back): refused as [`StoreError::Fenced`] when the store's fence no longer holds.
    pub(crate) fn write_work<T>(
        &self,
        f: impl FnOnce(&Db) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let fence = self.fence.get();
        self.write(|tx| {
            if let Some(claim) = fence {
                check(claim, tx)?;
            }
            f(tx)
        })
    }
}
