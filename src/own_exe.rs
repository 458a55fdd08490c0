//! This process's own executable, and how abxd runs it again: a daemon starts its workers as the
//! very file it runs itself, through `/proc/self/exe`, so a package upgrade that replaced or
//! removed the file on disk neither stops the running daemon from starting workers nor gives it
//! workers of another version (which might not speak its protocol or read its schema).
//!
//! Invariant: a worker is named as the file it was asked to run (`argv[0]`), never `exe` nor
//! `… (deleted)`: `top`, `pgrep abxd` and `systemctl status` show what it is.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The command that runs `program`. This process's own executable (a worker of the daemon) is
/// run as the very file this process runs, through `/proc/self/exe`, named as asked: a package
/// upgrade that replaced or removed the file on disk does not keep the running daemon from
/// starting workers — of its own version, which speak its protocol and read its schema.
pub(crate) fn command_for(program: &str) -> Command {
    let own = own_executable().is_some_and(|exe| exe.as_os_str() == program);
    if !own {
        return Command::new(program);
    }
    let mut command = Command::new("/proc/self/exe");
    command.arg0(program);
    command
}

/// The path this process's executable was started from — also after the file was removed or
/// replaced there (when the kernel's link says `… (deleted)`): what a worker of this daemon is
/// asked to run, by [`command_for`].
pub fn own_executable() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let text = exe.to_str()?;
    Some(PathBuf::from(
        text.strip_suffix(" (deleted)").unwrap_or(text),
    ))
}

/// For `main`: a process started through `/proc/self/exe` ([`command_for`]) is named `exe` by
/// the kernel; it takes the base name of the file it was asked to run (its `argv[0]`) instead,
/// so `top`, `pgrep abxd` and `systemctl status` show what it is.
pub fn take_own_name() {
    let Some(arg0) = std::env::args_os().next() else {
        return;
    };
    let Some(name) = Path::new(&arg0).file_name() else {
        return;
    };
    // (The kernel keeps 15 bytes of it.)
    let name: Vec<u8> = name.as_encoded_bytes().iter().copied().take(15).collect();
    if let Ok(name) = std::ffi::CString::new(name) {
        let _ = nix::sys::prctl::set_name(&name);
    }
}
