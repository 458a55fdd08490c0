//! Whether the kernel can hold crawls' hooks to their egress policy on this host, settled at
//! start: what `abxctl status` says, and why a restricted crawl is refused at `add` where it
//! cannot (each crawl worker puts its crawl's policy in force: `worker::egress`).
//!
//! Invariant: a restricted crawl is never accepted here without a way to restrict it.

use crate::cgroup::Containment;
use crate::config::Config;

/// Whether crawls' egress can be restricted under `containment`, or why not.
pub(super) fn can_restrict(containment: &Containment) -> Result<(), String> {
    let verdict = match containment.scope() {
        None => Err(format!(
            "abxd has no cgroup of its own to hold hooks in ({})",
            containment.describe()
        )),
        Some(_) => crate::egress::kernel::probe().map_err(|err| {
            format!("{err} (abxd needs CAP_BPF and CAP_NET_ADMIN, or root, and a kernel with cgroup BPF)")
        }),
    };
    match &verdict {
        Ok(()) => log::info!("egress: restricted crawls are held to their policy by the kernel"),
        Err(why) => log::warn!("egress: cannot be restricted: {why}"),
    }
    verdict
}

/// What `abxctl status` says of egress.
pub(super) fn describe(config: &Config, verdict: &Result<(), String>) -> String {
    let default = config.crawl.egress;
    match (verdict, default) {
        (_, crate::domain::Egress::Unrestricted) => {
            "unrestricted by default ([crawl] egress): hooks reach whatever the host reaches".into()
        }
        (Ok(()), _) => {
            "restricted: each crawl's hooks reach only public networks, the networks it \
                        allows and the resolvers (kernel-enforced)"
                .into()
        }
        (Err(why), _) => format!(
            "NOT IN FORCE: {why}; restricted crawls are refused (set [crawl] egress = \
             \"unrestricted\" to crawl unprotected)"
        ),
    }
}

/// Why a crawl with these `rules` is refused here, if it is: it must be restricted and cannot.
pub(super) fn refusal(
    rules: &crate::domain::CrawlRules,
    verdict: &Result<(), String>,
) -> Option<String> {
    let why = verdict.as_ref().err().filter(|_| rules.restricted())?;
    Some(format!(
        "its hooks' egress cannot be restricted: {why}; nothing was queued (set [crawl] egress = \
         \"unrestricted\", or `--egress unrestricted`, to crawl unprotected)"
    ))
}
