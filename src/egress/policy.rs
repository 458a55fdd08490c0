//! A crawl's egress policy: which networks its hooks may reach, from its seeds (a crawl seeded
//! on a non-public address may stay there, as the URL rule lets its links), the networks the
//! operator allowed, and the host's resolvers (reachable on port 53 even on loopback, and on
//! nothing else).
//!
//! Invariants: pure (the resolvers are read by [`resolvers_of`] from resolv.conf's text); the
//! metadata addresses are refused whatever is allowed; a network is written `ADDR/PREFIX` or as
//! one address.

use super::program::Policy;
use super::ranges::{classify, Net, Reach, V4, V6};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A network of either family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    V4(Net<Ipv4Addr>),
    V6(Net<Ipv6Addr>),
}

impl std::str::FromStr for Network {
    type Err = String;

    fn from_str(text: &str) -> Result<Network, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text, None),
        };
        let addr: IpAddr = addr.trim().parse().map_err(|_| {
            format!("{text:?} is not a network: write an address, or ADDRESS/PREFIX (10.1.0.0/16)")
        })?;
        let most = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => most,
            Some(prefix) => match prefix.trim().parse::<u8>() {
                Ok(n) if n <= most => n,
                _ => return Err(format!("{text:?}: the prefix must be 0 to {most}")),
            },
        };
        Ok(match addr {
            IpAddr::V4(addr) => Network::V4(Net { addr, prefix }),
            IpAddr::V6(addr) => Network::V6(Net { addr, prefix }),
        })
    }
}

impl std::fmt::Display for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Network::V4(net) => write!(f, "{}/{}", net.addr, net.prefix),
            Network::V6(net) => write!(f, "{}/{}", net.addr, net.prefix),
        }
    }
}

/// The policy of a crawl whose seeds are on a non-public address (`seeds_local`) or not, with
/// the networks the operator `allowed` and the host's `resolvers`.
pub fn for_crawl(seeds_local: bool, allowed: &[Network], resolvers: &[IpAddr]) -> Policy {
    let refused = |reach: Reach| !seeds_local || reach == Reach::Metadata;
    let mut policy = Policy {
        refused_v4: V4.iter().copied().filter(|(_, r)| refused(*r)).collect(),
        refused_v6: V6.iter().copied().filter(|(_, r)| refused(*r)).collect(),
        ..Policy::default()
    };
    for resolver in resolvers.iter().filter(|ip| classify(**ip).is_some()) {
        match *resolver {
            IpAddr::V4(addr) => (policy.allowed_v4).push((Net { addr, prefix: 32 }, Some(53))),
            IpAddr::V6(addr) => match addr.to_ipv4_mapped() {
                Some(addr) => (policy.allowed_v4).push((Net { addr, prefix: 32 }, Some(53))),
                None => (policy.allowed_v6).push((Net { addr, prefix: 128 }, Some(53))),
            },
        }
    }
    for network in allowed {
        match *network {
            Network::V4(net) => policy.allowed_v4.push((net, None)),
            Network::V6(net) => policy.allowed_v6.push((net, None)),
        }
    }
    policy
}

/// The resolvers resolv.conf's `text` names (`nameserver ADDR`, a zone index dropped).
pub fn resolvers_of(text: &str) -> Vec<IpAddr> {
    (text.lines())
        .filter_map(|line| line.trim().strip_prefix("nameserver"))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter_map(|addr| addr.split('%').next()?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_are_read_as_written_and_nonsense_is_named() {
        let net: Network = "10.1.0.0/16".parse().unwrap();
        assert_eq!(net.to_string(), "10.1.0.0/16");
        assert_eq!(
            "fd00::1".parse::<Network>().unwrap().to_string(),
            "fd00::1/128"
        );
        assert_eq!(
            "192.168.1.2".parse::<Network>().unwrap().to_string(),
            "192.168.1.2/32"
        );
        let said = "10.1.0.0/33".parse::<Network>().unwrap_err();
        assert!(said.contains("prefix must be 0 to 32"), "{said}");
        let said = "intranet".parse::<Network>().unwrap_err();
        assert!(said.contains("is not a network"), "{said}");
    }

    #[test]
    fn a_public_crawl_refuses_every_range_a_local_one_only_the_metadata() {
        let public = for_crawl(false, &[], &[]);
        assert_eq!(public.refused_v4.len(), V4.len());
        assert_eq!(public.refused_v6.len(), V6.len());
        let local = for_crawl(true, &[], &[]);
        assert!(local.refused_v4.iter().all(|(_, r)| *r == Reach::Metadata));
        assert!(local.refused_v6.iter().all(|(_, r)| *r == Reach::Metadata));
        assert_eq!(local.refused_v4.len(), 1);
    }

    #[test]
    fn loopback_resolvers_are_reachable_on_port_53_and_allowed_networks_on_any() {
        let resolvers = resolvers_of(
            "# generated\nnameserver 127.0.0.53\nnameserver 8.8.8.8\nnameserver fe80::1%eth0\n\
             options edns0\n",
        );
        assert_eq!(resolvers.len(), 3);
        let allowed = ["10.1.0.0/16".parse().unwrap()];
        let policy = for_crawl(false, &allowed, &resolvers);
        assert_eq!(
            policy.allowed_v4,
            [
                (
                    Net {
                        addr: Ipv4Addr::new(127, 0, 0, 53),
                        prefix: 32
                    },
                    Some(53)
                ),
                (
                    Net {
                        addr: Ipv4Addr::new(10, 1, 0, 0),
                        prefix: 16
                    },
                    None
                ),
            ],
            "a public resolver needs no rule"
        );
        assert_eq!(policy.allowed_v6.len(), 1);
    }
}
