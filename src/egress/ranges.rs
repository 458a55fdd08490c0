//! The addresses a page from the web may not steer abxd at, as one table of networks: the cloud
//! metadata addresses (never), and loopback, private, unique-local, link-local, carrier-grade
//! NAT, unspecified and broadcast addresses (unless the crawl's own seeds are on one). The URL
//! rule (`url_rule`) checks discovered URLs against it; the egress policy (`egress::program`)
//! has the kernel check every connect and send of a hook's tree against the same table.
//!
//! Invariants: one table, read by both; an IPv4-mapped IPv6 address is classed as its IPv4
//! address; the metadata addresses come first, so they are classed as metadata though they lie
//! in a wider range.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reach {
    /// A cloud metadata endpoint: it hands out credentials. Never reachable.
    Metadata,
    Loopback,
    /// RFC 1918, and IPv6 unique local (fc00::/7).
    Private,
    LinkLocal,
    /// 100.64.0.0/10.
    CarrierNat,
    Unspecified,
    Broadcast,
}

impl Reach {
    pub const ALL: [Reach; 7] = [
        Reach::Metadata,
        Reach::Loopback,
        Reach::Private,
        Reach::LinkLocal,
        Reach::CarrierNat,
        Reach::Unspecified,
        Reach::Broadcast,
    ];

    /// Its place in [`Reach::ALL`] (where a program counts its refusals).
    pub fn index(self) -> usize {
        Reach::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Reach::Metadata => "metadata_address",
            Reach::Loopback => "loopback",
            Reach::Private => "private",
            Reach::LinkLocal => "link_local",
            Reach::CarrierNat => "carrier_nat",
            Reach::Unspecified => "unspecified",
            Reach::Broadcast => "broadcast",
        }
    }
}

/// A network: an address and how many of its leading bits count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net<A> {
    pub addr: A,
    pub prefix: u8,
}

impl Net<Ipv4Addr> {
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let mask = mask_v4(self.prefix);
        u32::from(ip) & mask == u32::from(self.addr) & mask
    }
}

impl Net<Ipv6Addr> {
    pub fn contains(&self, ip: Ipv6Addr) -> bool {
        let mask = mask_v6(self.prefix);
        u128::from(ip) & mask == u128::from(self.addr) & mask
    }
}

/// The mask of a `prefix`-bit IPv4 network, in host order.
pub fn mask_v4(prefix: u8) -> u32 {
    match prefix {
        0 => 0,
        p => u32::MAX << (32 - u32::from(p.min(32))),
    }
}

/// The mask of a `prefix`-bit IPv6 network, in host order.
pub fn mask_v6(prefix: u8) -> u128 {
    match prefix {
        0 => 0,
        p => u128::MAX << (128 - u32::from(p.min(128))),
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8, reach: Reach) -> (Net<Ipv4Addr>, Reach) {
    (
        Net {
            addr: Ipv4Addr::new(a, b, c, d),
            prefix,
        },
        reach,
    )
}

/// The IPv4 networks that are not public, the metadata address first.
pub const V4: [(Net<Ipv4Addr>, Reach); 9] = [
    v4(169, 254, 169, 254, 32, Reach::Metadata),
    v4(127, 0, 0, 0, 8, Reach::Loopback),
    v4(10, 0, 0, 0, 8, Reach::Private),
    v4(172, 16, 0, 0, 12, Reach::Private),
    v4(192, 168, 0, 0, 16, Reach::Private),
    v4(169, 254, 0, 0, 16, Reach::LinkLocal),
    v4(100, 64, 0, 0, 10, Reach::CarrierNat),
    v4(0, 0, 0, 0, 32, Reach::Unspecified),
    v4(255, 255, 255, 255, 32, Reach::Broadcast),
];

const fn v6(segments: [u16; 8], prefix: u8, reach: Reach) -> (Net<Ipv6Addr>, Reach) {
    let [a, b, c, d, e, f, g, h] = segments;
    (
        Net {
            addr: Ipv6Addr::new(a, b, c, d, e, f, g, h),
            prefix,
        },
        reach,
    )
}

/// The IPv6 networks that are not public (IPv4-mapped addresses aside: see [`classify`]), the
/// metadata address (AWS's) first.
pub const V6: [(Net<Ipv6Addr>, Reach); 5] = [
    v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254], 128, Reach::Metadata),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, Reach::Loopback),
    v6([0; 8], 128, Reach::Unspecified),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, Reach::Private),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, Reach::LinkLocal),
];

/// The IPv4-mapped IPv6 network (::ffff:0:0/96): its addresses are classed as IPv4 ones.
pub const V4_MAPPED: Net<Ipv6Addr> = Net {
    addr: Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0),
    prefix: 96,
};

/// Why `ip` is not public, or `None` if it may be.
pub fn classify(ip: IpAddr) -> Option<Reach> {
    match ip {
        IpAddr::V4(ip) => V4.iter().find(|(net, _)| net.contains(ip)).map(|(_, r)| *r),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(mapped) => classify(IpAddr::V4(mapped)),
            None => V6.iter().find(|(net, _)| net.contains(ip)).map(|(_, r)| *r),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_address_is_classed_and_mapped_forms_as_their_ipv4() {
        let cases = [
            ("169.254.169.254", Some(Reach::Metadata)),
            ("::ffff:169.254.169.254", Some(Reach::Metadata)),
            ("fd00:ec2::254", Some(Reach::Metadata)),
            ("127.0.0.53", Some(Reach::Loopback)),
            ("::ffff:127.0.0.1", Some(Reach::Loopback)),
            ("::1", Some(Reach::Loopback)),
            ("10.1.2.3", Some(Reach::Private)),
            ("172.31.255.255", Some(Reach::Private)),
            ("172.32.0.1", None),
            ("192.168.1.1", Some(Reach::Private)),
            ("fd12::1", Some(Reach::Private)),
            ("169.254.1.1", Some(Reach::LinkLocal)),
            ("fe80::1", Some(Reach::LinkLocal)),
            ("100.64.0.1", Some(Reach::CarrierNat)),
            ("100.128.0.1", None),
            ("0.0.0.0", Some(Reach::Unspecified)),
            ("::", Some(Reach::Unspecified)),
            ("255.255.255.255", Some(Reach::Broadcast)),
            ("93.184.216.34", None),
            ("2606:2800:220:1::1", None),
        ];
        for (ip, reach) in cases {
            assert_eq!(classify(ip.parse().unwrap()), reach, "{ip}");
        }
    }

    #[test]
    fn masks_cover_their_prefix_only() {
        assert_eq!(mask_v4(0), 0);
        assert_eq!(mask_v4(8), 0xff00_0000);
        assert_eq!(mask_v4(32), u32::MAX);
        assert_eq!(mask_v6(7), 0xfe << 120);
        assert_eq!(mask_v6(128), u128::MAX);
    }
}
