//! The egress programs handed to the kernel: loaded through `bpf(2)` (`BPF_PROG_LOAD`, with the
//! verifier's log when it refuses one) and attached to a cgroup (`BPF_PROG_ATTACH`, with
//! `BPF_F_ALLOW_MULTI`, so a program attached below runs too), where they judge every connect
//! and UDP send of every process in it and below it — a hook's whole tree, whatever it forks.
//!
//! Invariants: a program attached stays attached while its cgroup lives (the kernel holds it;
//! the descriptors here may close); a failure says which step and the kernel's reason.

use super::program::{program_v4, program_v6, Insn, Policy};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

const BPF_PROG_LOAD: i64 = 5;
const BPF_PROG_ATTACH: i64 = 8;
const BPF_PROG_TYPE_CGROUP_SOCK_ADDR: u32 = 18;
const BPF_F_ALLOW_MULTI: u32 = 2;

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

/// Loads the program of `policy` for `hook`.
pub fn load(policy: &Policy, hook: Hook) -> Result<OwnedFd, EgressError> {
    let code: Vec<Insn> = match hook.is_v4() {
        true => program_v4(policy),
        false => program_v6(policy),
    };
    let license = c"GPL";
    let mut log = vec![0u8; 64 * 1024];
    let mut name = [0u8; 16];
    name[..10].copy_from_slice(b"abxd_egres");
    let mut attr = LoadAttr {
        prog_type: BPF_PROG_TYPE_CGROUP_SOCK_ADDR,
        insn_cnt: code.len() as u32,
        insns: code.as_ptr() as u64,
        license: license.as_ptr() as u64,
        prog_name: name,
        expected_attach_type: hook as u32,
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
            Err(EgressError::Load { hook, cause, log })
        }
    }
}

/// Attaches the programs of `policy` to the cgroup at `cgroup` (a cgroup v2 directory), one for
/// each of [`Hook::ALL`].
pub fn attach(policy: &Policy, cgroup: &Path) -> Result<(), EgressError> {
    let dir = std::fs::File::open(cgroup).map_err(|cause| EgressError::Attach {
        hook: Hook::Connect4,
        cgroup: cgroup.to_path_buf(),
        cause,
    })?;
    for hook in Hook::ALL {
        let program = load(policy, hook)?;
        let mut attr = AttachAttr {
            target_fd: dir.as_raw_fd() as u32,
            attach_bpf_fd: program.as_raw_fd() as u32,
            attach_type: hook as u32,
            attach_flags: BPF_F_ALLOW_MULTI,
            ..Default::default()
        };
        bpf(BPF_PROG_ATTACH, &mut attr).map_err(|cause| EgressError::Attach {
            hook,
            cgroup: cgroup.to_path_buf(),
            cause,
        })?;
    }
    Ok(())
}
