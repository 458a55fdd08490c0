//! Who may talk to the daemon: checked on every connection from its peer credentials
//! (SO_PEERCRED), behind the socket's own mode.
//!
//! Invariants: root, the daemon's own user and members of `control.group` may make any request;
//! with `control.public_read`, anyone else may make read-only requests (and the socket is made
//! world-connectable for that); everyone else is answered "permission denied" with the rule, and
//! the attempt is logged.

use nix::unistd::{Gid, Uid, User};

/// What a connection may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Full,
    ReadOnly,
    Denied,
}

#[derive(Debug, Clone)]
pub struct Policy {
    daemon_uid: Uid,
    group: Option<(String, Gid)>,
    public_read: bool,
}

impl Policy {
    /// The policy for `group` (a group name) and `public_read`. Fails naming an unknown group.
    pub fn new(group: Option<&str>, public_read: bool) -> Result<Policy, String> {
        let group = match group {
            None => None,
            Some(name) => Some((name.to_string(), crate::config::group_id(name)?)),
        };
        Ok(Policy {
            daemon_uid: Uid::effective(),
            group,
            public_read,
        })
    }

    pub fn group_id(&self) -> Option<Gid> {
        self.group.as_ref().map(|(_, gid)| *gid)
    }

    pub fn public_read(&self) -> bool {
        self.public_read
    }

    /// What a peer with user `uid` and primary group `gid` may do.
    pub fn access(&self, uid: u32, gid: u32) -> Access {
        let uid = Uid::from_raw(uid);
        if uid.is_root() || uid == self.daemon_uid || self.in_group(uid, Gid::from_raw(gid)) {
            Access::Full
        } else if self.public_read {
            Access::ReadOnly
        } else {
            Access::Denied
        }
    }

    fn in_group(&self, uid: Uid, primary: Gid) -> bool {
        let Some((_, group)) = &self.group else {
            return false;
        };
        if primary == *group {
            return true;
        }
        let Ok(Some(user)) = User::from_uid(uid) else {
            return false;
        };
        let Ok(name) = std::ffi::CString::new(user.name) else {
            return false;
        };
        nix::unistd::getgrouplist(&name, primary).is_ok_and(|groups| groups.contains(group))
    }

    /// The rule, for a "permission denied" answer.
    pub fn rule(&self) -> String {
        let user = User::from_uid(self.daemon_uid)
            .ok()
            .flatten()
            .map(|u| u.name)
            .unwrap_or_else(|| self.daemon_uid.to_string());
        let group = self
            .group
            .as_ref()
            .map(|(name, _)| format!(" and members of group {name}"))
            .unwrap_or_default();
        format!("only root, user {user}{group} may use this abxd (control.group)")
    }
}
