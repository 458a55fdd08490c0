//! Egress: where a crawl's hooks may connect. The addresses a page may not steer abxd at are one
//! table (`ranges`), which the URL rule reads for discovered URLs; the kernel's share — a cgroup
//! BPF program on each hook's tree, refusing every connect and send to those addresses — is
//! built on the same table.
//!
//! Invariant: one table of non-public networks, read by every check of an address.

pub mod kernel;
pub mod policy;
pub mod program;
pub mod ranges;
