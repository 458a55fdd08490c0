//! The vocabulary every layer speaks: what a process is and where it is in its life, why a row
//! ended, how a reaped process ended, where work and results are, claims and leases, a crawl's
//! request (its spec) and rules and the limits that end it, when a schedule fires, whose turn a
//! free snapshot slot is.
//!
//! Invariant: nothing here does I/O or knows about persistence; each string-valued enum has one
//! word per variant, the same in SQL, JSON and on screen (`words`, proved by the tests below for
//! every variant of every enum).

mod crawl;
mod machine;
mod politeness;
mod process;
mod rules;
mod schedule;
mod shares;
mod spec;
mod words;
mod work;

pub use crawl::{Added, Crawl, HookResult, Snapshot, WorkCounts, WorkTally};
pub use machine::Machine;
pub use politeness::{cool_down, retry_after, throttle_recorded, HostLimits, Throttle};
pub use process::{EndDetail, EndReason, ExitOutcome, Kind, ProcessRow, Pruned, Status};
pub use rules::{CrawlRules, Egress, Limit, Pattern, UrlScope};
pub use schedule::{Cadence, Cron, Schedule};
pub use shares::{turn, weight, Contender, Turn};
pub use spec::{split_tags, ArchiveBoxCrawl, CrawlOptions, CrawlSpec, RedoSnapshot};
pub use words::Word;
pub use work::{
    Claim, CrawlOutcome, CrawlState, ExportStatus, Lease, PageStart, Queue, Refusal, ResultStatus,
    RetryScope, SnapshotState, WorkStatus,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant of `T`: its word parses back to it, is what `Display` and JSON say, and no
    /// two variants share a word.
    fn words_agree<
        T: Word + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
    >() {
        let mut seen = std::collections::BTreeSet::new();
        for &variant in T::ALL {
            let word = variant.as_str();
            assert!(seen.insert(word), "{}: {word:?} twice", T::NAME);
            assert_eq!(variant.to_string(), word, "{}: Display", T::NAME);
            assert_eq!(
                serde_json::to_value(variant).unwrap(),
                serde_json::Value::String(word.to_string()),
                "{}: JSON",
                T::NAME
            );
            assert_eq!(word.parse::<T>(), Ok(variant), "{}: FromStr", T::NAME);
            let read: T = serde_json::from_value(serde_json::Value::String(word.into())).unwrap();
            assert_eq!(read, variant, "{}: JSON read back", T::NAME);
        }
        let unknown = "no such word".parse::<T>().unwrap_err();
        assert!(unknown.contains(T::ALL[0].as_str()), "{unknown}");
    }

    #[test]
    fn every_word_is_the_same_in_display_json_and_parsing() {
        words_agree::<Kind>();
        words_agree::<Status>();
        words_agree::<CrawlState>();
        words_agree::<SnapshotState>();
        words_agree::<EndReason>();
        words_agree::<Queue>();
        words_agree::<WorkStatus>();
        words_agree::<CrawlOutcome>();
        words_agree::<ResultStatus>();
        words_agree::<Refusal>();
        words_agree::<UrlScope>();
        words_agree::<Egress>();
        words_agree::<Limit>();
    }

    #[test]
    fn a_result_with_no_results_is_noresults_everywhere() {
        let word = ResultStatus::NoResults;
        assert_eq!(serde_json::to_string(&word).unwrap(), "\"noresults\"");
        assert_eq!(word.to_string(), "noresults");
    }

    #[test]
    fn end_details_read_back_as_what_they_were() {
        let details = [
            EndDetail::MemoryLimit,
            EndDetail::Unkillable {
                after_secs: 10,
                state: 'D',
                wchan: "x".into(),
            },
            EndDetail::Said("gone at recovery".into()),
        ];
        for detail in details {
            assert_eq!(EndDetail::parse(&detail.to_string()), detail);
            assert_eq!(
                serde_json::to_value(&detail).unwrap(),
                serde_json::Value::String(detail.to_string())
            );
        }
        assert_eq!(
            EndDetail::Unkillable {
                after_secs: 10,
                state: 'D',
                wchan: "x".into()
            }
            .to_string(),
            "unkillable: alive 10 s after SIGKILL (state D, waiting in x)"
        );
    }
}
