//! Starting a program as another user: the command a spawn builds, set to drop to a user, its
//! group and the groups beside it, with the umask what it makes gets.
//!
//! Invariant: the child is the user before it enters its working directory (one the user may
//! enter and abxd may not — a hook user's home — is entered as the user) and before it runs
//! anything else `pre_exec` adds after this.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Sets `command` to run as `ids` (user, group) holding `groups` beside them (none: no
/// supplementary group), with umask `umask`, in `cwd`.
pub fn exec_as(
    command: &mut Command,
    (uid, gid): (u32, u32),
    groups: &[u32],
    umask: u32,
    cwd: &Path,
) -> std::io::Result<()> {
    let umask = umask as nix::libc::mode_t;
    if groups.is_empty() {
        // (std drops the supplementary groups, then sets the group, then the user, then enters
        // the working directory — before `pre_exec` runs.)
        command.uid(uid).gid(gid);
        // SAFETY: between fork and exec only umask(2) runs: a system call that cannot fail,
        // async-signal-safe, no allocation, no lock.
        unsafe {
            command.pre_exec(move || {
                nix::libc::umask(umask);
                Ok(())
            });
        }
        return Ok(());
    }
    // (std's way to name the groups beside is not stable: the same steps by hand, and the
    // working directory entered after them — std enters it as abxd, before `pre_exec`.)
    let groups: Vec<nix::libc::gid_t> = groups.to_vec();
    let cwd = std::ffi::CString::new(cwd.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::other(format!("{} holds a NUL byte", cwd.display())))?;
    command.current_dir("/");
    // SAFETY: between fork and exec only setgroups, setgid, setuid, chdir and umask run: system
    // calls, async-signal-safe, on `groups` and `cwd` (allocated before the fork); no lock.
    unsafe {
        command.pre_exec(move || {
            let switched = nix::libc::setgroups(groups.len(), groups.as_ptr()) == 0
                && nix::libc::setgid(gid) == 0
                && nix::libc::setuid(uid) == 0
                && nix::libc::chdir(cwd.as_ptr()) == 0;
            if !switched {
                return Err(std::io::Error::last_os_error());
            }
            nix::libc::umask(umask);
            Ok(())
        });
    }
    Ok(())
}
