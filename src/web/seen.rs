//! Which rows a moment (an end, a hook's start) has brought to the metrics already: each scrape
//! reads whole only the rows from the newest moment counted on. A row committed late, with an
//! older moment, is told by the store's kept count of rows that ever had the moment — read as
//! of the same moment as the rows — grown by more than the rows counted: only then does a
//! scrape read the entries of the [`OVERLAP_MS`] before the mark, where such a row lands.
//!
//! Invariant: a row is counted once: its (moment, id) stays known while a later read could
//! return it. What the kept count exceeds the rows counted by after a read (rows pruned before
//! any read, or later than the overlap) is what no read will find; more than that is a row to
//! look for.

use std::collections::BTreeSet;

/// How far back a scrape looks for a row whose moment was committed after a later one's.
pub const OVERLAP_MS: i64 = 10 * 60 * 1000;

/// An entry of a moment's index: the moment (unix ms) and the row's id.
pub type Entry = (i64, i64);

/// The rows of one moment seen so far.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// The newest moment of a row counted (unix ms).
    mark: i64,
    /// (moment, id) of the rows counted, or read as entries, from the overlap before `mark` on.
    known: BTreeSet<Entry>,
    /// The rows counted.
    counted: i64,
    /// What the store's kept count exceeded `counted` by after the last read (none before it).
    beyond: Option<i64>,
}

impl Seen {
    /// The overlap before the mark: from (inclusive) and until (exclusive); rows from `until`
    /// on are read whole.
    pub fn overlap(&self) -> (i64, i64) {
        ((self.mark - OVERLAP_MS).max(0), self.mark)
    }

    /// Whether a row was committed late, as the store's kept count `total` (read as of the same
    /// moment as the rows) tells: it grew by more than the rows counted.
    pub fn missed_some(&self, total: i64) -> bool {
        self.beyond
            .is_some_and(|beyond| total - self.counted > beyond)
    }

    /// The entries of `overlap` (moment, id) not known: rows committed late, or another
    /// machine's.
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
            self.counted += 1;
        }
        new
    }

    /// Ends a read made as of the moment the kept count was `total`, that looked at the entries
    /// `learnt` (another machine's among them, so that none is looked at again), forgetting
    /// what falls out of the next overlap.
    pub fn read(&mut self, total: i64, learnt: &[Entry]) {
        self.beyond = Some(total - self.counted);
        self.known.extend(learnt.iter().copied());
        let keep_from = self.overlap().0;
        self.known.retain(|&(at, _)| at >= keep_from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_counts_once_and_one_committed_late_is_looked_for_only_then() {
        let mut seen = Seen::default();
        assert_eq!(seen.overlap(), (0, 0));
        // The first read takes every row whole; the kept count also holds a row pruned before.
        assert!(seen.first_time(1_000_000, 1));
        assert!(seen.first_time(1_001_000, 2));
        assert!(!seen.missed_some(3));
        seen.read(3, &[]);
        // Nothing late: the count grew by the rows read from the mark on (row 2 again, row 4).
        assert_eq!(seen.overlap(), (1_001_000 - OVERLAP_MS, 1_001_000));
        assert!(!seen.first_time(1_001_000, 2));
        assert!(seen.first_time(1_002_000, 4));
        assert!(!seen.missed_some(4));
        seen.read(4, &[]);
        // Row 3 committed late with an older moment: the count says so, the overlap's entries
        // say which.
        assert!(seen.missed_some(5));
        let overlap = [(999_000, 3), (1_000_000, 1), (1_001_000, 2)];
        assert_eq!(seen.unread(&overlap), vec![(999_000, 3)]);
        assert!(seen.first_time(999_000, 3));
        seen.read(5, &[(999_000, 3)]);
        assert!(!seen.missed_some(5));
        assert!(seen.unread(&overlap).is_empty());
    }

    #[test]
    fn a_row_no_read_can_find_is_looked_for_once_and_old_entries_are_forgotten() {
        let mut seen = Seen::default();
        assert!(seen.first_time(OVERLAP_MS * 3, 9));
        seen.read(1, &[]);
        // A row committed later than the overlap reaches: looked for once, not found, then
        // part of what no read will find.
        assert!(seen.missed_some(2));
        seen.read(2, &[(OVERLAP_MS * 3 - 5, 4)]);
        assert!(!seen.missed_some(2));
        // Another machine's entry, learnt in that look, is known until the mark moves an
        // overlap on.
        assert!(seen.unread(&[(OVERLAP_MS * 3 - 5, 4)]).is_empty());
        assert!(seen.first_time(OVERLAP_MS * 5, 11));
        seen.read(3, &[]);
        assert_eq!(seen.known.len(), 1);
    }
}
