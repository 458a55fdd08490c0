//! What a running crawl's snapshots wait for, as its crawl worker says it (`crawls.admission`),
//! for `abxctl status`: admission decides in each crawl worker, and the daemon that answers
//! `status` is another process.
//!
//! Invariant: written only when what the worker's snapshots wait for changes (a wait begins or
//! ends), never per look; a sealed crawl's is never shown, whatever it last said.

use crate::store::engine::sql::args;
use crate::store::Crawls;
use crate::store::StoreError;

impl Crawls<'_> {
    /// Says what crawl `crawl_id`'s snapshots wait for (`None`: nothing), for `abxctl status`.
    pub fn note_admission(&self, crawl_id: i64, waits_for: Option<&str>) -> Result<(), StoreError> {
        self.store.write(|tx| {
            tx.execute(
                "UPDATE crawls SET admission = ?2 WHERE id = ?1",
                &args![crawl_id, waits_for],
            )?;
            Ok(())
        })
    }

    /// The crawls not sealed whose snapshots wait for admission, with what they wait for.
    pub fn admission_waits(&self) -> Result<Vec<(i64, String)>, StoreError> {
        let rows = self.store.db().query(
            "SELECT id, admission FROM crawls WHERE status != 'sealed' AND admission IS NOT NULL \
             ORDER BY id",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect::<Result<_, crate::store::engine::sql::SqlError>>()?)
    }
}
