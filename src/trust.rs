//! Which files and directories abxd trusts: its own, written by nobody else (sshd's
//! StrictModes). The data dir (`config::environment`), the database and its `-wal` and `-shm`
//! (`store::engine::file`) are checked by this rule; log files and the database are never
//! reached through a symbolic link (`logs`, `store::engine::file`).
//!
//! Invariant: one rule, written once: a path is trusted only if abxd's user owns it and neither
//! group nor others can write it.

/// What is wrong with a file or directory abxd trusts, owned by `owner` with `mode`, for abxd
/// running as `me`: owned by someone else, or writable by group or others.
pub fn ownership_problem(owner: u32, mode: u32, me: u32) -> Option<String> {
    if owner != me {
        return Some(format!(
            "is owned by uid {owner}, not by abxd's user (uid {me}): chown {me} it"
        ));
    }
    (mode & 0o022 != 0).then(|| {
        format!(
            "is writable by group or others (mode {:04o}): anyone who can write there can plant \
             files abxd opens; chmod go-w it",
            mode & 0o7777
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_dir_others_can_write_or_someone_else_owns_is_a_problem() {
        assert_eq!(ownership_problem(100, 0o40750, 100), None);
        assert_eq!(ownership_problem(100, 0o40700, 100), None);
        assert!(ownership_problem(100, 0o40770, 100)
            .unwrap()
            .contains("mode 0770"));
        assert!(ownership_problem(100, 0o40757, 100)
            .unwrap()
            .contains("chmod go-w"));
        assert!(ownership_problem(0, 0o40750, 100)
            .unwrap()
            .contains("owned by uid 0"));
    }
}
