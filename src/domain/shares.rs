//! Fair shares: how a host's snapshot budget (`[limits] max_snapshots`) is dealt out among the
//! crawls it runs — whose turn the next free slot is.
//!
//! Invariants: no claim is allowed while the budget is spent; slots go out in weighted
//! round-robin (stride) order — a crawl's next slot comes at `(running + 1) / weight`, the earliest
//! first, ties to the older crawl — so a crawl that just arrived takes the next slot that frees
//! beside one that holds them all, and a crawl of `--priority 1` holds twice the slots of one of
//! 0 while both want more; a claim goes ahead only if the free slots exceed what the crawls
//! ahead of it in that order still want (never more than their own cap each), so a crawl that
//! wants nothing reserves nothing and no slot stays idle while anyone can use it; snapshots lent
//! to other hosts' crawls take only what no crawl of this host wants.

/// One crawl the host runs, as the deal sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contender {
    pub crawl: i64,
    /// Its `--priority` (0 unless set).
    pub priority: i64,
    /// Its snapshots this host runs now.
    pub running: u32,
    /// The most of its snapshots that may run at once (`--crawl-max-concurrent-snapshots`, else
    /// `[limits] max_snapshot_workers`).
    pub cap: u32,
    /// Whether it has a snapshot due to start (a claim of its own would look for one).
    pub wants: bool,
}

/// Whose turn the next slot is, for one claimer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// The claimer may take a slot now.
    Yours,
    /// Every slot of the budget runs a snapshot.
    Spent { running: u32 },
    /// The free slots are owed to crawls ahead of the claimer.
    Owed { free: u32, owed: u32 },
}

/// Said after "new snapshots wait for" (`abxctl show`, `abxctl status`).
impl std::fmt::Display for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Turn::Yours => write!(f, "a turn: another claim holds the site it would start on"),
            Turn::Spent { running } => write!(
                f,
                "a turn: all {running} snapshot slots of this host run (limits.max_snapshots)"
            ),
            Turn::Owed { free, owed } => write!(
                f,
                "a turn: the {free} free snapshot slots of this host are owed to crawls ahead \
                 of this one ({owed} by their shares)"
            ),
        }
    }
}

/// The share weight of a crawl of `priority`: `priority + 1` from 0 up (1, 2, 3 …), and
/// `1 / (1 - priority)` below (½, ⅓ …) — so 1 takes twice the slots of 0, and −1 half.
pub fn weight(priority: i64) -> f64 {
    let priority = priority.clamp(-1_000_000, 1_000_000) as f64;
    match priority >= 0.0 {
        true => priority + 1.0,
        false => 1.0 / (1.0 - priority),
    }
}

/// Whether crawl `claimer` (`None`: the pool that runs snapshots lent to other hosts' crawls)
/// may take a slot of a budget of `budget`, of which `running` run now (every snapshot this host
/// runs, lent ones too), among the host's `crawls`.
pub fn turn(budget: u32, running: u32, claimer: Option<i64>, crawls: &[Contender]) -> Turn {
    if running >= budget {
        return Turn::Spent { running };
    }
    let free = budget - running;
    let me = claimer.and_then(|id| crawls.iter().find(|c| c.crawl == id));
    let owed: u32 = crawls
        .iter()
        .filter(|other| other.wants && Some(other.crawl) != claimer)
        .map(|other| ahead_of(other, me))
        .sum();
    match free > owed {
        true => Turn::Yours,
        false => Turn::Owed { free, owed },
    }
}

/// How many slots `other` takes before `me`'s next one, in stride order (all it still may take
/// when `me` is the lent pool, or a crawl this host does not know as running).
fn ahead_of(other: &Contender, me: Option<&Contender>) -> u32 {
    let room = other.cap.saturating_sub(other.running);
    let Some(me) = me else {
        return room;
    };
    let mine = f64::from(me.running + 1) / weight(me.priority);
    let theirs = weight(other.priority);
    (1..=room)
        .take_while(|k| {
            let at = f64::from(other.running + k) / theirs;
            at < mine || (at == mine && other.crawl < me.crawl)
        })
        .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crawl(crawl: i64, priority: i64, running: u32, cap: u32, wants: bool) -> Contender {
        Contender {
            crawl,
            priority,
            running,
            cap,
            wants,
        }
    }

    #[test]
    fn nothing_is_claimed_while_the_budget_is_spent() {
        let alone = [crawl(1, 0, 4, 8, true)];
        assert_eq!(turn(4, 4, Some(1), &alone), Turn::Spent { running: 4 });
        assert_eq!(turn(4, 3, Some(1), &alone), Turn::Yours);
    }

    /// A crawl that holds every slot gives the next one that frees to a crawl just arrived.
    #[test]
    fn the_next_free_slot_goes_to_the_crawl_that_has_none() {
        let crawls = [crawl(1, 0, 3, 4, true), crawl(2, 0, 0, 4, true)];
        assert_eq!(
            turn(4, 3, Some(1), &crawls),
            Turn::Owed { free: 1, owed: 3 }
        );
        assert_eq!(turn(4, 3, Some(2), &crawls), Turn::Yours);
    }

    /// Two crawls of one priority take turns: the one with fewer running goes first, the older
    /// on a tie.
    #[test]
    fn equal_crawls_alternate() {
        let crawls = [crawl(1, 0, 1, 4, true), crawl(2, 0, 1, 4, true)];
        assert_eq!(
            turn(3, 2, Some(2), &crawls),
            Turn::Owed { free: 1, owed: 1 }
        );
        assert_eq!(turn(3, 2, Some(1), &crawls), Turn::Yours);
        assert_eq!(turn(4, 2, Some(2), &crawls), Turn::Yours);
    }

    /// `--priority 1` holds two slots of three beside a crawl of 0, whichever frees one.
    #[test]
    fn priority_weighs_the_shares() {
        let (high, low) = (2, 1);
        let at = |h: u32, l: u32| [crawl(low, 0, l, 3, true), crawl(high, 1, h, 3, true)];
        // Low ran all three; one ends: high takes it, then the next, then low keeps one.
        assert!(matches!(
            turn(3, 2, Some(low), &at(0, 2)),
            Turn::Owed { .. }
        ));
        assert_eq!(turn(3, 2, Some(high), &at(0, 2)), Turn::Yours);
        assert!(matches!(
            turn(3, 2, Some(low), &at(1, 1)),
            Turn::Owed { .. }
        ));
        assert_eq!(turn(3, 2, Some(high), &at(1, 1)), Turn::Yours);
        assert_eq!(turn(3, 2, Some(low), &at(2, 0)), Turn::Yours);
        // At two to one, a slot that frees goes back to whoever it came from.
        assert!(matches!(
            turn(3, 2, Some(high), &at(2, 0)),
            Turn::Owed { .. }
        ));
    }

    /// A crawl that wants nothing, or is at its cap, reserves nothing: no slot stays idle.
    #[test]
    fn what_nobody_else_wants_is_anyones() {
        let idle = [crawl(1, 0, 4, 8, true), crawl(2, 5, 0, 8, false)];
        assert_eq!(turn(6, 4, Some(1), &idle), Turn::Yours);
        let capped = [crawl(1, 0, 4, 8, true), crawl(2, 5, 1, 1, true)];
        assert_eq!(turn(6, 5, Some(1), &capped), Turn::Yours);
    }

    /// Snapshots lent to other hosts' crawls take only what this host's crawls do not want.
    #[test]
    fn lent_snapshots_take_the_leftovers() {
        let crawls = [crawl(1, 0, 2, 4, true)];
        assert_eq!(turn(4, 2, None, &crawls), Turn::Owed { free: 2, owed: 2 });
        assert_eq!(turn(5, 2, None, &crawls), Turn::Yours);
        let sated = [crawl(1, 0, 2, 4, false)];
        assert_eq!(turn(4, 2, None, &sated), Turn::Yours);
    }

    #[test]
    fn weights_grow_with_priority_and_shrink_below_zero() {
        assert_eq!(weight(0), 1.0);
        assert_eq!(weight(1), 2.0);
        assert_eq!(weight(-1), 0.5);
        assert!(weight(i64::MIN) > 0.0 && weight(i64::MAX).is_finite());
    }
}
