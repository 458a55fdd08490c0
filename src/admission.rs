//! Admission: whether a new crawl or snapshot may start now, by what the host has — the memory
//! left (measured: the host's `MemAvailable`, and under every ancestor cgroup of abxd's with a
//! bound — v2 `memory.max`, v1 `memory.limit_in_bytes` — what is left below it, page cache the
//! kernel drops first counted as free) against `[limits] memory_floor`; with a floor set, the
//! time all work stalled on memory (PSI `full avg10`, the host's and abxd's cgroups') against
//! [`STALL_LIMIT`]; and the browsers alive against `[limits] max_browsers` when the start would
//! launch one.
//!
//! A snapshot must also leave room for itself: what one snapshot of the crawl costs is learned
//! while they run ([`Growth`]: how far the memory left fell below what was left when none ran,
//! per snapshot running, at its peak), as ArchiveBox 0.9's runner learns it. Until one snapshot
//! was seen to its end (or for [`WARM_UP`]), a snapshot is taken to cost a prior
//! ([`Bounds::snapshot_prior`]: `[limits] snapshot_memory`, else the hooks' `MEMORY_LIMIT`, else
//! abx-plugins' default of 2 GiB), so a host with memory to spare starts a crawl's snapshots
//! side by side from the first; after, by what was measured. Either way one starts only while
//! what is left covers the floor, its own cost, and what those running may still grow to it.
//!
//! Invariants: a decision is a pure function of what was measured (`decide`); what runs is never
//! stopped by it, only what starts waits; with nothing of the pool running, a start waits for the
//! floor and the pressure alone (so a crawl moves as soon as the host does); a measurement that cannot be made admits (a host
//! without `/proc/meminfo` is not one abxd can reason about, and a supervisor that stops working
//! for want of a number helps no one) — and says so in its reason.

use crate::disk::{self, mib};
use std::path::{Path, PathBuf};

/// How often work waiting for admission looks again.
pub const POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// Memory left for new work, and where the tightest bound is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub available: u64,
    /// `None`: the host's `MemAvailable`; else the cgroup whose `memory.max` bounds it.
    pub cgroup: Option<PathBuf>,
    /// The share (%) of the last 10 s in which all work stalled on memory (PSI's `full avg10`),
    /// the most of the host's and abxd's cgroups'; `None` where the kernel does not say.
    pub stalled: Option<Stall>,
}

/// A share of time stalled on memory, in hundredths of a percent (PSI prints two decimals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stall(pub u32);

impl std::fmt::Display for Stall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:02} %", self.0 / 100, self.0 % 100)
    }
}

/// Above this much of the last 10 s stalled on memory, nothing new starts: the host is already
/// reclaiming hard (ArchiveBox 0.9 stops adding load at the same share).
pub const STALL_LIMIT: Stall = Stall(10_00);

/// What admission looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    pub memory: Option<Memory>,
    /// Browser processes alive on this host (main processes, not their helpers).
    pub browsers: u32,
    /// What the pool's running snapshots take (nothing, for starts that are not snapshots).
    pub load: Load,
    /// The least free space where abxd writes (`None`: not measured).
    pub disk: Option<crate::disk::Disk>,
}

/// What a pool's running snapshots take of the memory, as [`Growth`] measured it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Load {
    /// Snapshots running now.
    pub running: u32,
    /// How far the memory left fell since none ran.
    pub grown: u64,
    /// What one snapshot costs at its peak; `None` until one was seen to its end.
    pub cost: Option<u64>,
}

/// What one snapshot costs, learned from the memory left as the pool's snapshots run: the peak,
/// per snapshot running, of how far it fell below what was left when none ran. (Memory others
/// on the host take meanwhile counts against the crawl: the error is on the side of starting
/// fewer.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Growth {
    /// The memory left when the pool last had nothing running.
    baseline: Option<u64>,
    /// The most one snapshot took since then.
    peak: u64,
    /// What one snapshot costs, once one was seen to its end; only ever raised after.
    cost: Option<u64>,
    /// Whether a snapshot was seen running since the baseline.
    seen: bool,
}

/// How long the first snapshot of a crawl is watched, at most, before what it took so far is
/// its cost (see [`Growth::settle`]).
pub const WARM_UP: std::time::Duration = std::time::Duration::from_secs(30);

impl Growth {
    /// Notes that `left` bytes are left with `running` snapshots running; returns the load.
    pub fn observe(&mut self, left: u64, running: u32) -> Load {
        if running == 0 {
            self.baseline = Some(left);
            self.peak = 0;
            self.seen = false;
            return Load {
                running,
                grown: 0,
                cost: self.cost,
            };
        }
        let baseline = *self.baseline.get_or_insert(left);
        self.seen = true;
        let grown = baseline.saturating_sub(left);
        let each = grown / u64::from(running);
        self.peak = self.peak.max(each);
        if let Some(cost) = &mut self.cost {
            *cost = (*cost).max(each);
        }
        Load {
            running,
            grown,
            cost: self.cost,
        }
    }

    /// One of the pool's snapshots ended: the first seen running sets the cost to the most one
    /// took (nothing, for snapshots too light to move the memory); one that ended unseen leaves
    /// it to the next.
    pub fn snapshot_ended(&mut self) {
        self.settle();
    }

    /// Takes the most one snapshot was seen to take as the cost, if none is known yet and one
    /// was seen running: at the first end, or once the first has been watched for [`WARM_UP`]
    /// (a snapshot that runs for minutes must not hold the crawl's others back for as long).
    pub fn settle(&mut self) {
        if self.cost.is_none() && self.seen {
            self.cost = Some(self.peak);
        }
    }

    /// What one snapshot costs, if known.
    pub fn cost(&self) -> Option<u64> {
        self.cost
    }
}

/// The configured bounds (`[limits]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Start nothing new while less memory than this is left (0: no floor).
    pub memory_floor: u64,
    /// Launch no browser while this many are alive (0: no cap).
    pub max_browsers: u32,
    /// What a snapshot is taken to cost until one was measured (see the module's text).
    pub snapshot_prior: u64,
    /// Start nothing new while less space than this is free where abxd writes (`disk`).
    pub min_free_space: u64,
}

/// abx-plugins' own `MEMORY_LIMIT` for a hook, when nothing sets one: 2 GiB.
pub const DEFAULT_SNAPSHOT_PRIOR: u64 = 2 << 30;

/// What a snapshot is taken to cost before one was measured: `configured` (`[limits]
/// snapshot_memory`), else `memory_limit` (the hooks' `MEMORY_LIMIT`, as they get it; 0 or
/// unreadable: none), else [`DEFAULT_SNAPSHOT_PRIOR`].
pub fn snapshot_prior(configured: Option<u64>, memory_limit: Option<&str>) -> u64 {
    configured
        .or_else(|| memory_limit?.trim().parse::<u64>().ok().filter(|&n| n > 0))
        .unwrap_or(DEFAULT_SNAPSHOT_PRIOR)
}

/// Whether to start, or why not, in words an operator reads in `abxctl status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Admit,
    Wait(String),
}

/// Whether a start that launches a browser when `launches_browser` may happen now.
pub fn decide(bounds: Bounds, measured: &Measured, launches_browser: bool) -> Decision {
    if let Some(why) = (measured.disk.as_ref()).and_then(|d| disk::short(d, bounds.min_free_space))
    {
        return Decision::Wait(why);
    }
    if let Some(memory) = &measured.memory {
        if memory.available < bounds.memory_floor {
            let below = match &memory.cgroup {
                Some(dir) => format!("left below the memory limit of {}", dir.display()),
                None => "MemAvailable".to_string(),
            };
            return Decision::Wait(format!(
                "memory: {} {below}, under memory_floor {}",
                mib(memory.available),
                mib(bounds.memory_floor)
            ));
        }
        if let Some(stalled) = memory
            .stalled
            .filter(|&s| bounds.memory_floor > 0 && s >= STALL_LIMIT)
        {
            return Decision::Wait(format!(
                "memory: pressure: all work stalled on memory {stalled} of the last 10 s, at or \
                 over {STALL_LIMIT}"
            ));
        }
        if let Some(why) = no_room_for_one_more(bounds, memory, measured.load) {
            return Decision::Wait(why);
        }
    }
    if launches_browser && bounds.max_browsers > 0 && measured.browsers >= bounds.max_browsers {
        return Decision::Wait(format!(
            "browsers: {} alive, max_browsers {}",
            measured.browsers, bounds.max_browsers
        ));
    }
    Decision::Admit
}

/// Why one more snapshot does not fit beside those running (see the module's text), if it
/// does not.
fn no_room_for_one_more(bounds: Bounds, memory: &Memory, load: Load) -> Option<String> {
    if bounds.memory_floor == 0 || load.running == 0 {
        return None;
    }
    let (cost, known) = match load.cost {
        Some(measured) => (measured, "measured"),
        None => (bounds.snapshot_prior, "until one is measured"),
    };
    let still_to_grow = (cost.saturating_mul(u64::from(load.running))).saturating_sub(load.grown);
    let needed = (bounds.memory_floor)
        .saturating_add(still_to_grow)
        .saturating_add(cost);
    (memory.available < needed).then(|| {
        format!(
            "memory: {} left, under memory_floor {} + {} a snapshot costs ({known}) + {} the {} \
             running may still take",
            mib(memory.available),
            mib(bounds.memory_floor),
            mib(cost),
            mib(still_to_grow),
            load.running
        )
    })
}

/// What admission sees, in one line: memory left and browsers alive.
pub fn describe(bounds: Bounds, measured: &Measured) -> String {
    let memory = match &measured.memory {
        Some(memory) => {
            let left = match &memory.cgroup {
                None => format!("{} available", mib(memory.available)),
                Some(dir) => format!("{} left below {}", mib(memory.available), dir.display()),
            };
            match memory.stalled {
                Some(stalled) => format!("{left}, stalled {stalled} of the last 10 s"),
                None => left,
            }
        }
        None => "memory not measured".to_string(),
    };
    let floor = match bounds.memory_floor {
        0 => "no floor".to_string(),
        floor => format!("floor {}", mib(floor)),
    };
    let cap = match bounds.max_browsers {
        0 => "no cap".to_string(),
        cap => format!("cap {cap}"),
    };
    let disk = (measured.disk.as_ref()).map(|d| disk::describe(d, bounds.min_free_space));
    let disk = disk.map(|said| format!("; {said}")).unwrap_or_default();
    let browsers = measured.browsers;
    format!("{memory} ({floor}); {browsers} browsers ({cap}){disk}")
}

/// The cgroups abxd runs in whose memory bounds can be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnCgroups {
    /// Its cgroup v2 (bounded by `memory.max` on a unified host: systemd's `MemoryMax=`).
    pub v2: Option<PathBuf>,
    /// Its cgroup in a v1 `memory` hierarchy (a hybrid or v1 host; a container's limit).
    pub v1_memory: Option<PathBuf>,
}

impl OwnCgroups {
    /// This process's.
    pub fn find() -> OwnCgroups {
        OwnCgroups {
            v2: crate::cgroup::own_cgroup().ok().map(|c| c.dir),
            v1_memory: crate::cgroup::own_v1_memory_dir(),
        }
    }
}

/// How one cgroup version names a memory bound, what is charged against it, and the page cache
/// the kernel drops first (in `memory.stat`).
struct Files {
    limit: &'static str,
    usage: &'static str,
    inactive_file: &'static str,
}

const V2: Files = Files {
    limit: "memory.max",
    usage: "memory.current",
    inactive_file: "inactive_file",
};

const V1: Files = Files {
    limit: "memory.limit_in_bytes",
    usage: "memory.usage_in_bytes",
    inactive_file: "total_inactive_file",
};

/// A v1 limit this high is no limit (the kernel's "unlimited" is just under 2^63).
const V1_UNLIMITED: u64 = 1 << 62;

/// The memory left for new work: the host's `MemAvailable`, or less where a cgroup abxd runs in
/// (or one of its ancestors) has a bound with less left below it. What is charged counts the
/// page cache the kernel drops first (`inactive_file`) as free, as `MemAvailable` does: a crawl
/// writes much that is never read again, and a cgroup full of it is not full.
pub fn memory(own: &OwnCgroups) -> Option<Memory> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let pressures = (own.v2.iter().flat_map(|d| d.ancestors()))
        .map(|dir| dir.join("memory.pressure"))
        .chain([PathBuf::from("/proc/pressure/memory")]);
    let stalled = pressures
        .filter_map(|path| full_stall(&std::fs::read_to_string(path).ok()?))
        .max();
    let mut tightest = Memory {
        available: mem_available(&meminfo)?,
        cgroup: None,
        stalled,
    };
    let dirs = (own.v2.iter().flat_map(|d| d.ancestors()).map(|d| (d, &V2))).chain(
        own.v1_memory
            .iter()
            .flat_map(|d| d.ancestors())
            .map(|d| (d, &V1)),
    );
    for (dir, files) in dirs {
        let Some(left) = left_below(dir, files) else {
            continue; // (no bound here)
        };
        if left < tightest.available {
            tightest = Memory {
                available: left,
                cgroup: Some(dir.to_path_buf()),
                stalled,
            };
        }
    }
    Some(tightest)
}

/// What is left below the memory bound of the cgroup at `dir`, if it has one.
fn left_below(dir: &Path, files: &Files) -> Option<u64> {
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).ok();
    let limit: u64 = read(files.limit)?.trim().parse().ok()?; // ("max": no bound)
    if limit >= V1_UNLIMITED {
        return None;
    }
    let usage: u64 = read(files.usage)?.trim().parse().ok()?;
    let droppable = read("memory.stat")
        .and_then(|stat| {
            stat.lines().find_map(|line| {
                let (key, value) = line.split_once(' ')?;
                (key == files.inactive_file).then(|| value.trim().parse().ok())?
            })
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(droppable)))
}

/// PSI's `full avg10` of a pressure file (`/proc/pressure/memory`, a cgroup's
/// `memory.pressure`): "full avg10=12.34 avg60=… total=…".
fn full_stall(pressure: &str) -> Option<Stall> {
    let line = pressure.lines().find(|l| l.starts_with("full "))?;
    let avg10 = line
        .split_whitespace()
        .find_map(|f| f.strip_prefix("avg10="))?;
    let (whole, hundredths) = avg10.split_once('.').unwrap_or((avg10, "0"));
    let hundredths = format!("{hundredths:0<2}");
    Some(Stall(
        whole.parse::<u32>().ok()? * 100 + hundredths.get(..2)?.parse::<u32>().ok()?,
    ))
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// Whether `argv` is a browser's main process: Chrome or Chromium by its program's name, and
/// not one of its helpers (which carry `--type=`).
pub fn is_browser(argv: &[String]) -> bool {
    let Some(program) = argv.first() else {
        return false;
    };
    let name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let browser = [
        "chrome",
        "chromium",
        "chromium-browser",
        "google-chrome",
        "headless_shell",
    ]
    .contains(&name.as_str());
    browser && !argv.iter().any(|a| a.starts_with("--type="))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: Bounds = Bounds {
        memory_floor: 512 << 20,
        max_browsers: 2,
        snapshot_prior: DEFAULT_SNAPSHOT_PRIOR,
        min_free_space: 0,
    };

    fn measured(available_mib: u64, browsers: u32) -> Measured {
        Measured {
            memory: Some(Memory {
                available: available_mib << 20,
                cgroup: None,
                stalled: None,
            }),
            browsers,
            load: Load::default(),
            disk: None,
        }
    }

    #[test]
    fn a_start_waits_below_the_memory_floor_and_a_browser_at_the_cap() {
        assert_eq!(decide(BOUNDS, &measured(2048, 0), true), Decision::Admit);
        assert_eq!(
            decide(BOUNDS, &measured(300, 0), false),
            Decision::Wait("memory: 300 MiB MemAvailable, under memory_floor 512 MiB".into())
        );
        assert_eq!(
            decide(BOUNDS, &measured(2048, 2), true),
            Decision::Wait("browsers: 2 alive, max_browsers 2".into())
        );
        // A start that reuses a browser is not held by the cap.
        assert_eq!(decide(BOUNDS, &measured(2048, 5), false), Decision::Admit);
        // No floor, no cap: everything starts; nothing measured: everything starts.
        let open = Bounds {
            memory_floor: 0,
            max_browsers: 0,
            snapshot_prior: DEFAULT_SNAPSHOT_PRIOR,
            min_free_space: 0,
        };
        assert_eq!(decide(open, &measured(1, 99), true), Decision::Admit);
        let unmeasured = Measured {
            memory: None,
            browsers: 0,
            load: Load::default(),
            disk: None,
        };
        assert_eq!(decide(BOUNDS, &unmeasured, false), Decision::Admit);
    }

    #[test]
    fn a_snapshot_waits_for_room_for_its_measured_cost_beside_those_running() {
        const GIB: u64 = 1 << 30;
        const MIB: u64 = 1 << 20;
        let bounds = Bounds {
            memory_floor: 256 * MIB,
            max_browsers: 0,
            snapshot_prior: DEFAULT_SNAPSHOT_PRIOR,
            min_free_space: 0,
        };
        let with = |left: u64, load: Load| Measured {
            memory: Some(Memory {
                available: left,
                cgroup: None,
                stalled: None,
            }),
            browsers: 0,
            load,
            disk: None,
        };
        let mut growth = Growth::default();
        // Nothing runs: the first start waits for the floor alone.
        let load = growth.observe(GIB, 0);
        assert_eq!(decide(bounds, &with(GIB, load), false), Decision::Admit);
        // One runs and its cost is not known: the next is taken to cost the prior (2 GiB), which
        // 1 GiB left does not cover...
        let load = growth.observe(GIB - 100 * MIB, 1);
        assert_eq!(
            decide(bounds, &with(GIB - 100 * MIB, load), false),
            Decision::Wait(
                "memory: 924 MiB left, under memory_floor 256 MiB + 2048 MiB a snapshot costs \
                 (until one is measured) + 1948 MiB the 1 running may still take"
                    .into()
            )
        );
        // ... and 20 GiB does, for 8 at once: the 8th beside 7 at the prior.
        let mut roomy = Growth::default();
        roomy.observe(20 * GIB, 0);
        let load = roomy.observe(20 * GIB - 70 * MIB, 7);
        assert_eq!(load.cost, None);
        assert_eq!(
            decide(bounds, &with(20 * GIB - 70 * MIB, load), false),
            Decision::Admit
        );
        // It peaks at 300 MiB and ends: that is the cost.
        growth.observe(GIB - 300 * MIB, 1);
        growth.observe(GIB - 200 * MIB, 1);
        growth.snapshot_ended();
        assert_eq!(growth.cost(), Some(300 * MIB));
        // 1 GiB left with none running: one starts. Just started (nothing grown yet), it may
        // still take its 300 MiB: a second needs 256 + 300 + 300 MiB, which 1 GiB covers...
        let load = growth.observe(GIB, 0);
        assert_eq!(decide(bounds, &with(GIB, load), false), Decision::Admit);
        let load = growth.observe(GIB, 1);
        assert_eq!(decide(bounds, &with(GIB, load), false), Decision::Admit);
        // ... and a third, beside two that have not grown, does not.
        let load = growth.observe(GIB - 50 * MIB, 2);
        assert_eq!(
            decide(bounds, &with(GIB - 50 * MIB, load), false),
            Decision::Wait(
                "memory: 974 MiB left, under memory_floor 256 MiB + 300 MiB a snapshot costs \
                 (measured) + 550 MiB the 2 running may still take"
                    .into()
            )
        );
        // On a host with room, the measured cost lets every start through.
        let mut roomy = Growth::default();
        roomy.observe(20 * GIB, 0);
        roomy.observe(20 * GIB - 300 * MIB, 1);
        roomy.snapshot_ended();
        let load = roomy.observe(20 * GIB - 900 * MIB, 3);
        assert_eq!(
            decide(bounds, &with(20 * GIB - 900 * MIB, load), false),
            Decision::Admit
        );
        // (Each took its 300 MiB: the cost stands.)
        assert_eq!(roomy.cost(), Some(300 * MIB));
        // No floor: no reservation either.
        let open = Bounds {
            memory_floor: 0,
            max_browsers: 0,
            snapshot_prior: DEFAULT_SNAPSHOT_PRIOR,
            min_free_space: 0,
        };
        let load = Growth::default().observe(GIB, 3);
        assert_eq!(decide(open, &with(GIB, load), false), Decision::Admit);
    }

    #[test]
    fn the_prior_is_the_configured_cost_else_the_hooks_memory_limit_else_two_gib() {
        assert_eq!(snapshot_prior(Some(300 << 20), Some("1000")), 300 << 20);
        assert_eq!(snapshot_prior(None, Some(" 1073741824 ")), 1 << 30);
        assert_eq!(snapshot_prior(None, Some("0")), DEFAULT_SNAPSHOT_PRIOR);
        assert_eq!(snapshot_prior(None, Some("2G")), DEFAULT_SNAPSHOT_PRIOR);
        assert_eq!(snapshot_prior(None, None), DEFAULT_SNAPSHOT_PRIOR);
    }

    #[test]
    fn nothing_starts_while_work_stalls_on_memory_past_the_limit() {
        assert_eq!(
            full_stall("some avg10=30.00 avg60=1.00 avg300=0.00 total=9\nfull avg10=12.5 avg60=0.50 avg300=0.00 total=5\n"),
            Some(Stall(12_50))
        );
        assert_eq!(
            full_stall("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"),
            None
        );
        let stalled = |share: u32| Measured {
            memory: Some(Memory {
                available: 8 << 30,
                cgroup: None,
                stalled: Some(Stall(share)),
            }),
            browsers: 0,
            load: Load::default(),
            disk: None,
        };
        assert_eq!(decide(BOUNDS, &stalled(9_99), false), Decision::Admit);
        assert_eq!(
            decide(BOUNDS, &stalled(12_50), false),
            Decision::Wait(
                "memory: pressure: all work stalled on memory 12.50 % of the last 10 s, at or \
                 over 10.00 %"
                    .into()
            )
        );
        // No floor: admission is off, pressure included.
        let open = Bounds {
            memory_floor: 0,
            max_browsers: 0,
            snapshot_prior: DEFAULT_SNAPSHOT_PRIOR,
            min_free_space: 0,
        };
        assert_eq!(decide(open, &stalled(90_00), false), Decision::Admit);
    }

    #[test]
    fn a_snapshot_that_ended_unseen_leaves_the_cost_to_the_next() {
        let mut growth = Growth::default();
        growth.observe(1 << 30, 0);
        growth.snapshot_ended();
        assert_eq!(growth.cost(), None);
        // One seen running that moved nothing costs nothing (a light crawl is not held back).
        let mut light = Growth::default();
        light.observe(1 << 30, 0);
        light.observe(1 << 30, 1);
        light.snapshot_ended();
        assert_eq!(light.cost(), Some(0));
        // Measured against a baseline taken when none ran, and raised by a heavier one later.
        growth.observe(1 << 30, 1);
        growth.observe((1 << 30) - (10 << 20), 1);
        growth.snapshot_ended();
        assert_eq!(growth.cost(), Some(10 << 20));
        growth.observe(1 << 30, 0);
        growth.observe((1 << 30) - (60 << 20), 2);
        assert_eq!(growth.cost(), Some(30 << 20));
    }

    #[test]
    fn a_cgroups_memory_max_bounds_what_is_left() {
        let root = tempfile::tempdir().unwrap();
        let service = root.path().join("abxd.service");
        let worker = service.join("crawl-1");
        std::fs::create_dir_all(&worker).unwrap();
        std::fs::write(service.join("memory.max"), format!("{}\n", 1u64 << 30)).unwrap();
        std::fs::write(
            service.join("memory.current"),
            format!("{}\n", 800u64 << 20),
        )
        .unwrap();
        std::fs::write(worker.join("memory.max"), "max\n").unwrap();
        std::fs::write(worker.join("memory.current"), "4096\n").unwrap();
        let own = OwnCgroups {
            v2: Some(worker.clone()),
            v1_memory: None,
        };
        let left = memory(&own).unwrap();
        assert_eq!(left.available, 224 << 20);
        assert_eq!(left.cgroup.as_deref(), Some(service.as_path()));
        // The page cache the kernel drops first is not counted as used.
        std::fs::write(
            service.join("memory.stat"),
            format!("anon 1000\ninactive_file {}\nactive_file 7\n", 300u64 << 20),
        )
        .unwrap();
        assert_eq!(memory(&own).unwrap().available, 524 << 20);
    }

    #[test]
    fn a_v1_memory_cgroups_limit_bounds_what_is_left_and_unlimited_does_not() {
        let root = tempfile::tempdir().unwrap();
        let container = root.path().join("docker").join("c1");
        std::fs::create_dir_all(&container).unwrap();
        let write = |dir: &Path, file: &str, value: u64| {
            std::fs::write(dir.join(file), format!("{value}\n")).unwrap()
        };
        write(&container, "memory.limit_in_bytes", 2 << 30);
        write(&container, "memory.usage_in_bytes", 1900 << 20);
        std::fs::write(
            container.join("memory.stat"),
            format!(
                "cache 5\ninactive_file 1\ntotal_inactive_file {}\n",
                100u64 << 20
            ),
        )
        .unwrap();
        write(root.path(), "memory.limit_in_bytes", 9223372036854771712);
        write(root.path(), "memory.usage_in_bytes", 1 << 40);
        let own = OwnCgroups {
            v2: None,
            v1_memory: Some(container.clone()),
        };
        let left = memory(&own).unwrap();
        assert_eq!(left.available, 248 << 20);
        assert_eq!(left.cgroup.as_deref(), Some(container.as_path()));
    }

    #[test]
    fn browsers_are_their_main_processes_by_name() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(is_browser(&argv(&[
            "/usr/lib/chromium/chromium",
            "--headless=new"
        ])));
        assert!(is_browser(&argv(&["/opt/chrome/chrome"])));
        assert!(!is_browser(&argv(&[
            "/usr/lib/chromium/chromium",
            "--type=renderer"
        ])));
        assert!(!is_browser(&argv(&["node", "chrome_launch.js"])));
        assert!(!is_browser(&[]));
        assert_eq!(
            mem_available("MemTotal: 10 kB\nMemAvailable:  2048 kB\n"),
            Some(2 << 20)
        );
    }
}
