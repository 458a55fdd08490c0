//! The containment a daemon runs under: cgroup v2 below its scope, or procfs, and why.
//!
//! Invariant: the daemon's scope is `<own cgroup>/abxd-<marker namespace>` (database and boot),
//! the daemon lives in its `supervisor` leaf, and what a previous incarnation of the same boot
//! left in it is killed and removed only once recovery ran (`take_stale`, then `stale::Emptying`).

use super::{own_cgroup, subdirs, Cgroup, Mode, SUPERVISOR_LEAF};

/// The containment in force for a daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containment {
    /// Every worker and hook in a cgroup of its own below `scope`.
    Cgroup {
        /// `<own cgroup>/abxd-<instance>`: the daemon lives in its `supervisor` leaf.
        scope: Cgroup,
        /// Where the daemon was started (it goes back there at a clean stop).
        origin: Cgroup,
        /// The controllers enabled below the scope.
        controllers: Vec<String>,
        /// The cgroups a previous incarnation left in the scope: emptied and removed once
        /// recovery ran.
        stale: Vec<Cgroup>,
    },
    /// Procfs scans and markers only, and why.
    Procfs { why: String },
}

impl Containment {
    /// What `abxctl status` and the start-up log say.
    pub fn describe(&self) -> String {
        match self {
            Containment::Cgroup {
                scope, controllers, ..
            } => {
                let controllers = if controllers.is_empty() {
                    "none enabled".to_string()
                } else {
                    controllers.join(", ")
                };
                format!(
                    "cgroup v2 at {} (controllers: {controllers})",
                    scope.dir.display()
                )
            }
            Containment::Procfs { why } => format!("procfs ({why})"),
        }
    }

    /// The cgroup the daemon's children go below, under cgroup containment.
    pub fn scope(&self) -> Option<&Cgroup> {
        match self {
            Containment::Cgroup { scope, .. } => Some(scope),
            Containment::Procfs { .. } => None,
        }
    }

    /// The cgroups a previous incarnation left in the scope, handed over once (to be emptied
    /// by an [`Emptying`](super::Emptying)).
    pub fn take_stale(&mut self) -> Vec<super::Cgroup> {
        match self {
            Containment::Cgroup { stale, .. } => std::mem::take(stale),
            Containment::Procfs { .. } => Vec::new(),
        }
    }

    /// At a clean stop: the daemon goes back to the cgroup it was started in and its scope is
    /// removed (what is empty of it).
    pub fn leave(&self) {
        if let Containment::Cgroup { scope, origin, .. } = self {
            if let Err(err) = origin.enter(std::process::id() as i32) {
                log::warn!("cannot go back to cgroup {}: {err}", origin.dir.display());
                return;
            }
            scope.remove();
        }
    }
}

/// Sets up the daemon's containment as `mode` asks: finds its own cgroup, makes its scope
/// `<own>/abxd-<instance>` (keeping what a previous incarnation left there as `stale`), moves
/// this process into the scope's `supervisor` leaf and enables the controllers it can. With
/// `auto`, falls back to procfs saying why; with `cgroup`, that reason is the error.
pub fn establish(mode: Mode, instance: &str) -> Result<Containment, String> {
    if mode == Mode::Procfs {
        let why = "containment = \"procfs\" in the config".to_string();
        return Ok(Containment::Procfs { why });
    }
    match establish_cgroup(instance) {
        Ok(containment) => Ok(containment),
        Err(why) if mode == Mode::Auto => Ok(Containment::Procfs { why }),
        Err(why) => Err(format!("containment = \"cgroup\", but {why}")),
    }
}

fn establish_cgroup(instance: &str) -> Result<Containment, String> {
    let origin = own_cgroup()?;
    let scope = Cgroup::at(origin.dir.join(format!("abxd-{instance}")));
    let existed = scope.dir.exists();
    let scope = origin
        .child(&format!("abxd-{instance}"))
        .map_err(|err| format!("cannot create a cgroup in {}: {err}", origin.dir.display()))?;
    let stale: Vec<Cgroup> = if existed {
        subdirs(&scope.dir)
            .into_iter()
            .filter(|dir| dir.file_name().is_some_and(|n| n != SUPERVISOR_LEAF))
            .map(Cgroup::at)
            .collect()
    } else {
        Vec::new()
    };
    let leaf = scope
        .child(SUPERVISOR_LEAF)
        .and_then(|leaf| leaf.enter(std::process::id() as i32).map(|()| leaf));
    if let Err(err) = leaf {
        if !existed {
            scope.remove();
        }
        return Err(format!(
            "cannot move abxd into a cgroup of {}: {err}",
            origin.dir.display()
        ));
    }
    // Controllers reach the scope only through its parent: enabled there too, where the parent
    // is abxd's own (delegated) cgroup — never on the hierarchy's root.
    if origin
        .dir
        .parent()
        .is_some_and(|p| p.join("cgroup.procs").exists())
    {
        origin.enable_controllers();
    }
    let controllers = scope.enable_controllers();
    Ok(Containment::Cgroup {
        scope,
        origin,
        controllers,
        stale,
    })
}
