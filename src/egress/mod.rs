//! Egress: where a crawl's hooks may connect. The addresses a page may not steer abxd at are one
//! table (`ranges`), which the URL rule reads for discovered URLs; a crawl's policy (`policy`)
//! is built on it, written as cgroup BPF programs (`program`) and handed to the kernel
//! (`kernel`), which refuses every connect and send of a hook's tree that the policy refuses —
//! but on loopback to the ports the crawl's own processes listen on (its browser's DevTools),
//! which a `SOCK_OPS` program on the crawl's cgroup records as they start listening. A crawl
//! worker puts its crawl's policy in force on its cgroup (`crawl`) before any hook starts.
//!
//! Invariant: one table of non-public networks, read by every check of an address.

pub mod crawl;
pub mod kernel;
pub mod policy;
pub mod program;
pub mod ranges;
