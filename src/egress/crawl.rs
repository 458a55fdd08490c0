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

/// A crawl's policy in force: what exempts the workers its worker starts, the counts of what
/// it refuses, and the map of its own listeners (for a policy put in force again).
#[derive(Debug)]
pub struct InForce {
    pub exemption: Exemption,
    pub refusals: Refusals,
    pub listeners: Listeners,
}

/// Puts `policy` in force on the crawl's cgroup `crawl_cgroup`, whose leaf `own_leaf` (the
/// crawl worker's) is exempted first.
pub fn put_in_force(
    policy: &super::program::Policy,
    crawl_cgroup: &Path,
    own_leaf: &Path,
) -> Result<InForce, EgressError> {
    let exemption = Exemption::load()?;
    exemption.apply(own_leaf)?;
    let listeners = Listeners::new()?;
    let refusals = Refusals::new()?;
    record_listeners(&listeners, crawl_cgroup)?;
    attach(policy, crawl_cgroup, Some(&listeners), Some(&refusals))?;
    Ok(InForce {
        exemption,
        refusals,
        listeners,
    })
}

/// Replaces the policy in force on `crawl_cgroup` by `policy` (an attach over one made with
/// `BPF_F_ALLOW_OVERRIDE` replaces it), with the same maps.
pub fn put_in_force_again(
    policy: &super::program::Policy,
    crawl_cgroup: &Path,
    in_force: (&Listeners, &Refusals),
) -> Result<(), EgressError> {
    attach(policy, crawl_cgroup, Some(in_force.0), Some(in_force.1))
}
