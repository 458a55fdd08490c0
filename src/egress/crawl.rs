//! A crawl's policy put in force on its cgroup, by its crawl worker before any hook starts:
//! the worker's own leaf exempted first (the worker is abxd: it reaches its database wherever
//! it is), then the program that records the crawl's own listeners, then the policy — which
//! from then on holds every hook of the crawl, and every snapshot worker's hooks below it.
//!
//! Invariant: the policy is built from the crawl's seeds, the networks its rules allow and the
//! host's resolvers (`policy::for_crawl`); nothing of a crawl runs under a half-attached one
//! (the worker refuses the crawl if any step fails).

use super::kernel::{attach, record_listeners, EgressError, Exemption, Listeners, Refusals};
use super::policy::{for_crawl, resolvers_of, Network};
use std::path::Path;

/// Where the host's resolvers are named.
const RESOLV_CONF: &str = "/etc/resolv.conf";

/// The policy of a crawl whose seeds are local (`seeds_local`) or not, allowing `allowed`
/// (networks as the rules keep them, checked at `add`), with the host's resolvers.
pub fn policy_of(seeds_local: bool, allowed: &[String]) -> super::program::Policy {
    let allowed: Vec<Network> = allowed.iter().filter_map(|n| n.parse().ok()).collect();
    let resolvers = resolvers_of(&std::fs::read_to_string(RESOLV_CONF).unwrap_or_default());
    for_crawl(seeds_local, &allowed, &resolvers)
}

/// Puts `policy` in force on the crawl's cgroup `crawl_cgroup`, whose leaf `own_leaf` (the
/// crawl worker's) is exempted first; returns the exemption for the workers it starts and the
/// counts of what it refuses. (The map of the crawl's own listeners lives as long as the
/// programs that read and fill it.)
pub fn put_in_force(
    policy: &super::program::Policy,
    crawl_cgroup: &Path,
    own_leaf: &Path,
) -> Result<(Exemption, Refusals), EgressError> {
    let exemption = Exemption::load()?;
    exemption.apply(own_leaf)?;
    let listeners = Listeners::new()?;
    let refusals = Refusals::new()?;
    record_listeners(&listeners, crawl_cgroup)?;
    attach(policy, crawl_cgroup, Some(&listeners), Some(&refusals))?;
    Ok((exemption, refusals))
}
