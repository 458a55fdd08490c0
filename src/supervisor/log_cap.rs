//! The cap on a child's log files (`limits.max_log_bytes`): checked at each descendant scan and
//! at the child's end, a log past the cap is truncated through a descriptor that never follows a
//! symbolic link, leaving a line that says so.

use std::path::Path;

/// Truncates a log file that grew past `max` bytes, leaving a line that says so. The child keeps
/// writing to it (it appends), so its size stays bounded by `max` plus what it writes between
/// two scans.
pub(super) fn cap_log(path: &Path, max: u64) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.len() <= max {
        return;
    }
    // Through a descriptor opened without following a link: a planted symbolic link is never
    // truncated.
    let truncated = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .and_then(|mut file| {
            file.set_len(0)?;
            writeln!(
                file,
                "[abxd: log truncated: it passed limits.max_log_bytes ({max} bytes)]"
            )
        });
    match truncated {
        Ok(()) => log::warn!("{} passed {max} bytes: truncated", path.display()),
        Err(err) => log::error!("cannot truncate {}: {err}", path.display()),
    }
}
