//! The words of the work queue: the two leased queues, where a crawl, a snapshot or a hook's
//! result is, how a crawl ended, and a claim of a row with its fencing token and lease.
//!
//! Invariant: plain values, as in `domain::process`; what a claim guards and how a lease is
//! renewed is the store's (`store::work`), not theirs.

use super::words::words;
use std::time::Duration;

words!(
    /// The two leased queues, which share their claim / renew / requeue / seal logic; each word
    /// is what one row of it is called.
    Queue {
        Crawls => "crawl",
        Snapshots => "snapshot",
    }
);

words!(
    /// Where a crawl or a snapshot is: waiting (or backing off), owned by a worker, or done.
    WorkStatus {
        Queued => "queued",
        Started => "started",
        Sealed => "sealed",
    }
);

words!(
    /// How a sealed crawl ended.
    CrawlOutcome {
        Finished => "finished",
        Cancelled => "cancelled",
        /// A crawl hook it could not go on without failed: one that exited before it was ready,
        /// or a crawl resource other plugins require (the shared browser) that died.
        Failed => "failed",
    }
);

words!(
    /// Where the export of a crawl into an ArchiveBox collection is: waiting for the crawl to
    /// seal (or for its turn), under way, in ArchiveBox's index, or stopped by an error.
    ExportStatus {
        Queued => "queued",
        Running => "running",
        Imported => "imported",
        Failed => "failed",
    }
);

words!(
    /// Which crawls a listing shows (`abxctl crawls --status`): where they are — waiting,
    /// running, paused by an operator, sealed — or how a sealed one ended.
    CrawlState {
        Queued => "queued",
        Started => "started",
        Paused => "paused",
        Sealed => "sealed",
        Finished => "finished",
        Cancelled => "cancelled",
        Failed => "failed",
    }
);

words!(
    /// Which snapshots of a crawl `abxctl show --status` pages through: where they are, or those
    /// with a failed result.
    SnapshotState {
        Queued => "queued",
        Started => "started",
        Sealed => "sealed",
        Failed => "failed",
    }
);

/// Where a page of a listing starts: after an id (a cursor a program passes on), or at a number
/// of rows from the first (a page a person asks for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageStart {
    After(i64),
    Skip(u64),
}

impl ExportStatus {
    /// Whether the export is over (imported, or failed until it is asked again).
    pub fn is_final(self) -> bool {
        matches!(self, ExportStatus::Imported | ExportStatus::Failed)
    }
}

words!(
    /// Where the result of one hook is; the last five are final — four as the hook contract
    /// derives them from a hook's run (`abxd-hooks(7)`), and `cancelled`: open when its crawl was
    /// cancelled.
    ResultStatus {
        Queued => "queued",
        Started => "started",
        Succeeded => "succeeded",
        NoResults => "noresults",
        Failed => "failed",
        Skipped => "skipped",
        Cancelled => "cancelled",
    }
);

impl ResultStatus {
    /// Whether the result is final: the hook is not started again for it (but for a session a
    /// later run needs: see `hooks::sessions`).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ResultStatus::Succeeded
                | ResultStatus::NoResults
                | ResultStatus::Failed
                | ResultStatus::Skipped
                | ResultStatus::Cancelled
        )
    }
}

/// One claim of a crawl or snapshot: its fencing token is `epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Claim {
    pub queue: Queue,
    pub id: i64,
    pub epoch: i64,
}

impl std::fmt::Display for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} (epoch {})", self.queue, self.id, self.epoch)
    }
}

/// A lease held on one row of a queue by the process row `owner`, under `claim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub claim: Claim,
    pub owner: i64,
    pub duration: Duration,
}

words!(
    /// Why a URL a hook discovered was not made a snapshot (`url_rule`): counted per reason on
    /// its crawl, never dropped in silence.
    Refusal {
        /// Not http or https (`file:`, `javascript:`, `data:`, `ftp:`, …).
        Scheme => "scheme",
        /// Not a URL at all, or one without a host.
        Invalid => "invalid",
        /// A loopback, link-local, private or unspecified address, from a crawl whose seeds are
        /// all public.
        PrivateAddress => "private_address",
        /// A cloud metadata address (169.254.169.254, fd00:ec2::254): never.
        MetadataAddress => "metadata_address",
        /// Matched the crawl's `--url-denylist`.
        Denylist => "denylist",
        /// Matched nothing of the crawl's `--url-allowlist`.
        Allowlist => "allowlist",
        /// Outside the crawl's `--scope` (another host or domain than its seeds').
        Scope => "scope",
        /// The crawl has `--max-urls` snapshots already.
        MaxUrls => "max_urls",
        /// `--only-new`: another crawl archived it already.
        Archived => "archived",
        /// Egress (not a URL: a connect or send of a hook's tree the kernel refused): to a
        /// cloud metadata address.
        ConnectMetadata => "connect_metadata",
        /// … to a loopback address none of the crawl's own processes listens on.
        ConnectLoopback => "connect_loopback",
        /// … to a private address (RFC 1918, IPv6 ULA).
        ConnectPrivate => "connect_private",
        /// … to a link-local address.
        ConnectLinkLocal => "connect_link_local",
        /// … to a carrier-grade NAT address.
        ConnectCarrierNat => "connect_carrier_nat",
        /// … to an unspecified address.
        ConnectUnspecified => "connect_unspecified",
        /// … to a broadcast address.
        ConnectBroadcast => "connect_broadcast",
    }
);

/// Which results of a crawl `retry` runs again (a success is never run again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryScope {
    /// Failed and cancelled results (also those interrupted too often: they ended failed).
    Failed,
    /// Every result that did not succeed: also `noresults` and `skipped`.
    All,
}
