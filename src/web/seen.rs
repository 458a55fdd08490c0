//! Which rows a moment (an end, a hook's start) has brought to the metrics already: each scrape
//! reads whole only the rows from the newest moment counted on; of the [`OVERLAP_MS`] before
//! it — where a row committed late with an older moment lands — it reads a count and a sum of
//! ids, and the index's entries only when those differ from what it knows.
//!
//! Invariant: a row is counted once: its (moment, id) stays known while a later read could
//! return it; every entry a read returned, from the overlap on, is known afterwards, whether or
//! not its row was this machine's to count; so the overlap's entries, while none lands late,
//! are exactly those known.

use std::collections::BTreeSet;

/// How far back each scrape looks again, for rows whose moment was committed after a later one's.
pub const OVERLAP_MS: i64 = 10 * 60 * 1000;

/// An entry of a moment's index: the moment (unix ms) and the row's id.
pub type Entry = (i64, i64);

/// The rows of one moment seen so far.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// The newest moment of a row counted (unix ms).
    mark: i64,
    /// (moment, id) of the rows read from the overlap before `mark` on.
    known: BTreeSet<Entry>,
}

impl Seen {
    /// The overlap a read looks at again, as entries: from (inclusive) and until (exclusive);
    /// rows from `until` on are read whole.
    pub fn overlap(&self) -> (i64, i64) {
        ((self.mark - OVERLAP_MS).max(0), self.mark)
    }

    /// How many entries it knows of the overlap, and the sum of their ids: equal to the
    /// store's when no row landed there late.
    pub fn overlap_sum(&self) -> (i64, i64) {
        let (from, until) = self.overlap();
        let known = self.known.range((from, i64::MIN)..(until, i64::MIN));
        known.fold((0, 0), |(count, sum), &(_, id)| (count + 1, sum + id))
    }

    /// The entries of `overlap` (moment, id) not known: rows committed late.
    pub fn unread(&self, overlap: &[Entry]) -> Vec<Entry> {
        (overlap.iter().copied())
            .filter(|entry| !self.known.contains(entry))
            .collect()
    }

    /// Whether the row (moment `at`, `id`) is new: then it is known from now on, and counts.
    pub fn first_time(&mut self, at: i64, id: i64) -> bool {
        let new = self.known.insert((at, id));
        if new {
            self.mark = self.mark.max(at);
        }
        new
    }

    /// Ends a read that returned the entries `entries` (another machine's as well, so that none
    /// is read again), forgetting what falls out of the next overlap.
    pub fn read(&mut self, entries: &[Entry]) {
        self.known.extend(entries.iter().copied());
        let keep_from = self.overlap().0;
        self.known.retain(|&(at, _)| at >= keep_from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_counts_once_and_one_committed_late_is_found_among_the_entries() {
        let mut seen = Seen::default();
        assert_eq!(seen.overlap(), (0, 0));
        assert!(seen.first_time(1_000_000, 1));
        assert!(seen.first_time(1_001_000, 2));
        seen.read(&[]);
        // The next read takes rows from the newest moment on whole (row 2 again), and of the
        // overlap before it a count and a sum: they match while nothing lands late.
        assert_eq!(seen.overlap(), (1_001_000 - OVERLAP_MS, 1_001_000));
        assert_eq!(seen.overlap_sum(), (1, 1));
        assert!(!seen.first_time(1_001_000, 2));
        // Row 3 committed late with an older moment: the store's sum differs, and its entries
        // show which.
        let overlap = [(999_000, 3), (1_000_000, 1)];
        assert_eq!(seen.unread(&overlap), vec![(999_000, 3)]);
        assert!(seen.first_time(999_000, 3));
        seen.read(&[(999_000, 3)]);
        assert_eq!(seen.overlap_sum(), (2, 4));
        assert!(seen.unread(&overlap).is_empty());
    }

    #[test]
    fn an_entry_read_but_not_counted_is_known_and_old_ones_are_forgotten() {
        let mut seen = Seen::default();
        assert!(seen.first_time(OVERLAP_MS * 3, 9));
        // Another machine's row after the mark: learnt as an entry, never counted, and part of
        // the overlap's sum once the mark passes it.
        seen.read(&[(OVERLAP_MS * 3 + 5, 4)]);
        assert!(seen.first_time(OVERLAP_MS * 3 + 10, 10));
        seen.read(&[]);
        assert_eq!(seen.overlap_sum(), (2, 13));
        // Once the mark moves an overlap on, they are forgotten: no later read returns them.
        assert!(seen.first_time(OVERLAP_MS * 5, 11));
        seen.read(&[]);
        assert_eq!(seen.known.len(), 1);
        assert_eq!(seen.overlap_sum(), (0, 0));
    }
}
