//! The egress programs handed to the kernel: loaded through `bpf(2)` (`BPF_PROG_LOAD`, with the
//! verifier's log when it refuses one) and attached to a crawl's cgroup (`BPF_PROG_ATTACH`),
//! where they judge every connect and UDP send of every process below it — every hook's whole
//! tree, whatever it forks. The policy is attached with `BPF_F_ALLOW_OVERRIDE`: the cgroup of a
//! worker below (its `supervisor` leaf) gets a program that lets everything through
//! ([`Exemption`]), which the kernel then runs there instead — abxd's own processes reach their
//! database wherever it is — while what systemd attached above (`IPAddressDeny=`, with
//! `BPF_F_ALLOW_MULTI`) still runs for all.
//!
//! Invariants: a program attached stays attached while its cgroup lives (the kernel holds it;
//! the descriptors here may close); a failure says which step and the kernel's reason; a
//! worker's leaf is exempted before the worker enters it.

use super::program::{
    program_let_through, program_listeners, program_v4, program_v6, Insn, Maps, Policy,
};
use super::ranges::Reach;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

const BPF_MAP_CREATE: i64 = 0;
const BPF_MAP_LOOKUP_ELEM: i64 = 1;
const BPF_PROG_LOAD: i64 = 5;
const BPF_PROG_ATTACH: i64 = 8;
const BPF_PROG_TYPE_CGROUP_SOCK_ADDR: u32 = 18;
const BPF_PROG_TYPE_SOCK_OPS: u32 = 13;
const BPF_CGROUP_SOCK_OPS: u32 = 3;
const BPF_MAP_TYPE_HASH: u32 = 1;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
/// How many ports a crawl's own processes may listen on, and be reached at, on loopback.
const MAX_LISTENERS: u32 = 1024;
const BPF_F_ALLOW_OVERRIDE: u32 = 1;

/// Where a program hooks in (`enum bpf_attach_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    Connect4 = 10,
    Connect6 = 11,
    Sendmsg4 = 14,
    Sendmsg6 = 15,
}

impl Hook {
    pub const ALL: [Hook; 4] = [
        Hook::Connect4,
        Hook::Connect6,
        Hook::Sendmsg4,
        Hook::Sendmsg6,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Hook::Connect4 => "IPv4 connect",
            Hook::Connect6 => "IPv6 connect",
            Hook::Sendmsg4 => "IPv4 send",
            Hook::Sendmsg6 => "IPv6 send",
        }
    }

    fn is_v4(self) -> bool {
        matches!(self, Hook::Connect4 | Hook::Sendmsg4)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    #[error("cannot open cgroup {}: {cause}", cgroup.display())]
    Cgroup {
        cgroup: std::path::PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot make the map of a crawl's own listeners: {0}")]
    Map(std::io::Error),
    #[error("cannot make the map of a crawl's refused connects: {0}")]
    RefusalsMap(std::io::Error),
    #[error("the kernel refused the program that records a crawl's own listeners: {cause}{log}")]
    LoadListeners { cause: std::io::Error, log: String },
    #[error("cannot attach the program that records a crawl's own listeners to {}: {cause}", cgroup.display())]
    AttachListeners {
        cgroup: std::path::PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot exempt a worker's cgroup {} from its crawl's egress policy: {cause}", cgroup.display())]
    Exempt {
        cgroup: std::path::PathBuf,
        cause: std::io::Error,
    },
    #[error("the kernel refused the egress program for {}: {cause}{log}", hook.as_str())]
    Load {
        hook: Hook,
        cause: std::io::Error,
        log: String,
    },
    #[error(
        "cannot attach the egress program for {} to {}: {cause}",
        hook.as_str(),
        cgroup.display()
    )]
    Attach {
        hook: Hook,
        cgroup: std::path::PathBuf,
        cause: std::io::Error,
    },
}

/// `union bpf_attr` for `BPF_PROG_LOAD`, as far as it is used (the rest zero).
#[repr(C)]
#[derive(Default)]
struct LoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
    rest: [u64; 8],
}

/// `union bpf_attr` for `BPF_MAP_CREATE`.
#[repr(C)]
#[derive(Default)]
struct MapAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    rest: [u32; 27],
}

/// `union bpf_attr` for `BPF_MAP_LOOKUP_ELEM`.
#[repr(C)]
#[derive(Default)]
struct ElemAttr {
    map_fd: u32,
    pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// `union bpf_attr` for `BPF_PROG_ATTACH`.
#[repr(C)]
#[derive(Default)]
struct AttachAttr {
    target_fd: u32,
    attach_bpf_fd: u32,
    attach_type: u32,
    attach_flags: u32,
    replace_bpf_fd: u32,
    rest: [u32; 11],
}

fn bpf<T>(command: i64, attr: &mut T) -> std::io::Result<i64> {
    // SAFETY: `attr` is a zero-padded `union bpf_attr` prefix for `command`, alive for the call;
    // the pointers in it point at buffers that outlive the call.
    let result = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_bpf,
            command,
            attr as *mut T,
            std::mem::size_of::<T>(),
        )
    };
    match result {
        -1 => Err(std::io::Error::last_os_error()),
        n => Ok(n),
    }
}

/// The ports a crawl's own processes listen on (a hash map of the kernel's, port to 1): its
/// cgroup's `SOCK_OPS` program fills it, its connect programs read it. Dropped with the crawl.
#[derive(Debug)]
pub struct Listeners(OwnedFd);

impl Listeners {
    pub fn new() -> Result<Listeners, EgressError> {
        let mut attr = MapAttr {
            map_type: BPF_MAP_TYPE_HASH,
            key_size: 4,
            value_size: 4,
            max_entries: MAX_LISTENERS,
            ..Default::default()
        };
        let fd = bpf(BPF_MAP_CREATE, &mut attr).map_err(EgressError::Map)?;
        // SAFETY: a successful BPF_MAP_CREATE returns a new descriptor that we own.
        Ok(Listeners(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
    }

    fn fd(&self) -> i32 {
        self.0.as_raw_fd()
    }
}

/// How many connects and sends a crawl's programs refused, by [`Reach`] (an array map of the
/// kernel's, one count for each of [`Reach::ALL`]): read by its crawl worker as it goes.
#[derive(Debug)]
pub struct Refusals(OwnedFd);

impl Refusals {
    pub fn new() -> Result<Refusals, EgressError> {
        let mut attr = MapAttr {
            map_type: BPF_MAP_TYPE_ARRAY,
            key_size: 4,
            value_size: 8,
            max_entries: Reach::ALL.len() as u32,
            ..Default::default()
        };
        let fd = bpf(BPF_MAP_CREATE, &mut attr).map_err(EgressError::RefusalsMap)?;
        // SAFETY: a successful BPF_MAP_CREATE returns a new descriptor that we own.
        Ok(Refusals(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
    }

    /// The counts so far, in the order of [`Reach::ALL`] (a count that cannot be read is 0).
    pub fn counts(&self) -> [u64; Reach::ALL.len()] {
        let mut counts = [0u64; Reach::ALL.len()];
        for (index, count) in counts.iter_mut().enumerate() {
            let key = index as u32;
            let mut attr = ElemAttr {
                map_fd: self.0.as_raw_fd() as u32,
                key: &key as *const u32 as u64,
                value: count as *mut u64 as u64,
                ..Default::default()
            };
            if bpf(BPF_MAP_LOOKUP_ELEM, &mut attr).is_err() {
                *count = 0;
            }
        }
        counts
    }
}

/// Loads `code` as a program of `prog_type` for `expected_attach_type`; on a refusal, the
/// kernel's reason and the verifier's log.
fn load_code(
    code: &[Insn],
    prog_type: u32,
    expected_attach_type: u32,
) -> Result<OwnedFd, (std::io::Error, String)> {
    let license = c"GPL";
    let mut log = vec![0u8; 64 * 1024];
    let mut name = [0u8; 16];
    name[..10].copy_from_slice(b"abxd_egres");
    let mut attr = LoadAttr {
        prog_type,
        insn_cnt: code.len() as u32,
        insns: code.as_ptr() as u64,
        license: license.as_ptr() as u64,
        prog_name: name,
        expected_attach_type,
        ..Default::default()
    };
    let loaded = bpf(BPF_PROG_LOAD, &mut attr).or_else(|_| {
        // (Again with the verifier's log, to say why.)
        attr.log_level = 1;
        attr.log_size = log.len() as u32;
        attr.log_buf = log.as_mut_ptr() as u64;
        bpf(BPF_PROG_LOAD, &mut attr)
    });
    match loaded {
        // SAFETY: a successful BPF_PROG_LOAD returns a new descriptor that we own.
        Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) }),
        Err(cause) => {
            let said = String::from_utf8_lossy(&log);
            let said = said.trim_end_matches('\0').trim();
            let log = match said.is_empty() {
                true => String::new(),
                false => format!("\n{said}"),
            };
            Err((cause, log))
        }
    }
}

/// Loads the program of `policy` for `hook` (loopback ports in `listeners` let through, each
/// refusal counted in `refusals`).
fn load(
    policy: &Policy,
    hook: Hook,
    listeners: Option<&Listeners>,
    refusals: Option<&Refusals>,
) -> Result<OwnedFd, EgressError> {
    let maps = Maps {
        listeners: listeners.map(Listeners::fd),
        refusals: refusals.map(|r| r.0.as_raw_fd()),
    };
    let code: Vec<Insn> = match hook.is_v4() {
        true => program_v4(policy, maps),
        false => program_v6(policy, maps),
    };
    load_code(&code, BPF_PROG_TYPE_CGROUP_SOCK_ADDR, hook as u32)
        .map_err(|(cause, log)| EgressError::Load { hook, cause, log })
}

fn attach_one(dir: &std::fs::File, program: &OwnedFd, attach_type: u32) -> std::io::Result<()> {
    let mut attr = AttachAttr {
        target_fd: dir.as_raw_fd() as u32,
        attach_bpf_fd: program.as_raw_fd() as u32,
        attach_type,
        attach_flags: BPF_F_ALLOW_OVERRIDE,
        ..Default::default()
    };
    bpf(BPF_PROG_ATTACH, &mut attr).map(drop)
}

fn open_cgroup(cgroup: &Path) -> Result<std::fs::File, EgressError> {
    std::fs::File::open(cgroup).map_err(|cause| EgressError::Cgroup {
        cgroup: cgroup.to_path_buf(),
        cause,
    })
}

/// Attaches to the cgroup at `cgroup` the program that records in `listeners` each port a
/// process there starts listening on (a crawl's cgroup: every hook of the crawl is below it).
pub fn record_listeners(listeners: &Listeners, cgroup: &Path) -> Result<(), EgressError> {
    let failed = |cause| EgressError::AttachListeners {
        cgroup: cgroup.to_path_buf(),
        cause,
    };
    let dir = open_cgroup(cgroup)?;
    let program = load_code(
        &program_listeners(listeners.fd()),
        BPF_PROG_TYPE_SOCK_OPS,
        0,
    )
    .map_err(|(cause, log)| EgressError::LoadListeners { cause, log })?;
    attach_one(&dir, &program, BPF_CGROUP_SOCK_OPS).map_err(failed)
}

/// Attaches the programs of `policy` to the cgroup at `cgroup` (a cgroup v2 directory), one for
/// each of [`Hook::ALL`]; loopback ports in `listeners` are let through, and each refusal is
/// counted in `refusals`.
pub fn attach(
    policy: &Policy,
    cgroup: &Path,
    listeners: Option<&Listeners>,
    refusals: Option<&Refusals>,
) -> Result<(), EgressError> {
    let failed = |hook, cause| EgressError::Attach {
        hook,
        cgroup: cgroup.to_path_buf(),
        cause,
    };
    let dir = open_cgroup(cgroup)?;
    for hook in Hook::ALL {
        let program = load(policy, hook, listeners, refusals)?;
        attach_one(&dir, &program, hook as u32).map_err(|cause| failed(hook, cause))?;
    }
    Ok(())
}

/// The programs that let everything through, one for each of [`Hook::ALL`], loaded once by a
/// crawl worker and attached to the cgroup of each worker below its crawl's.
#[derive(Debug)]
pub struct Exemption(Vec<(Hook, OwnedFd)>);

impl Exemption {
    pub fn load() -> Result<Exemption, EgressError> {
        let code = program_let_through();
        let programs = (Hook::ALL.into_iter())
            .map(|hook| {
                load_code(&code, BPF_PROG_TYPE_CGROUP_SOCK_ADDR, hook as u32)
                    .map(|fd| (hook, fd))
                    .map_err(|(cause, log)| EgressError::Load { hook, cause, log })
            })
            .collect::<Result<_, _>>()?;
        Ok(Exemption(programs))
    }

    /// Exempts the cgroup at `cgroup` (a worker's leaf, before the worker enters it).
    pub fn apply(&self, cgroup: &Path) -> Result<(), EgressError> {
        let dir = open_cgroup(cgroup)?;
        for (hook, program) in &self.0 {
            attach_one(&dir, program, *hook as u32).map_err(|cause| EgressError::Exempt {
                cgroup: cgroup.to_path_buf(),
                cause,
            })?;
        }
        Ok(())
    }
}

/// Whether this process may load egress programs (the capabilities, and a kernel with cgroup
/// BPF): what `abxctl status` says, and what a crawl that must be protected needs.
pub fn probe() -> Result<(), EgressError> {
    Exemption::load().map(drop)
}
