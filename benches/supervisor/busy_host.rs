//! Benchmark 7: abxd's CPU on a busy host (thousands of unrelated processes), cgroup and procfs.

use crate::harness::*;
use crate::procfs::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `n` unrelated processes (`sleep`) in a process group of their own, killed when dropped.
pub(crate) struct Crowd(Option<std::process::Child>);

impl Crowd {
    pub(crate) fn of(n: usize) -> Crowd {
        if n == 0 {
            return Crowd(None);
        }
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let script = format!(
            "i=0; while [ $i -lt {n} ]; do sleep 3600 & i=$((i+1)); done; echo ready; wait"
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        Crowd(Some(child))
    }
}

impl Drop for Crowd {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            // The group is the shell's own (process_group(0)): its sleeps, nothing else.
            let group = nix::unistd::Pid::from_raw(-(child.id() as i32));
            let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
        }
    }
}

/// (7) Supervision on a busy host: 8 snapshots at once, each a hook sleeping with 3 children,
/// with 0 and thousands of unrelated processes on the host, under each containment: the CPU of
/// every abxd process (daemon and workers) over a while, as % of one core, beside the 0-case.
pub(crate) fn busy_host(s: &Sizes, figures: &mut Figures) {
    for containment in ["cgroup", "procfs"] {
        let mut quiet = None;
        for &n in s.crowds {
            let crowd = Crowd::of(n);
            let dir = scratch_dir();
            let plugin = dir.path().join("bench-plugins/sleeper");
            std::fs::create_dir_all(&plugin).unwrap();
            let hook = plugin.join("on_Snapshot__10_sleep.sh");
            std::fs::write(
                &hook,
                "#!/bin/sh\nsleep 600 & sleep 600 & sleep 600 & wait\n",
            )
            .unwrap();
            std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            let daemon = quiet_daemon(
                dir.path(),
                &format!(
                    "[paths]\nplugins_dirs = [{:?}]\n[limits]\nmax_snapshot_workers = 8\nmemory_floor = 0\n\
                     containment = {containment:?}\n[plugins.sleeper]\ntimeout = \"600s\"\n{}",
                    dir.path().join("bench-plugins").display().to_string(),
                    // (Under procfs the kernel cannot hold hooks to an egress policy.)
                    crate::common::egress_for(containment),
                ),
            );
            let mut args = vec!["add".to_string(), "--plugins".into(), "sleeper".into()];
            args.extend((0..8).map(|i| format!("http://127.0.0.1:9/{i}")));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            assert!(daemon.ctl(&args).status.success());
            // Until every hook's three children are recorded: the tree is complete.
            let deadline = Instant::now() + Duration::from_secs(60);
            let abxd_pids = loop {
                let ps = daemon.ctl(&["ps", "--json"]);
                let json: serde_json::Value = serde_json::from_slice(&ps.stdout).unwrap();
                let rows = json["processes"].as_array().cloned().unwrap_or_default();
                let of_kind = |kind: &str| {
                    rows.iter()
                        .filter(|r| r["kind"] == kind)
                        .filter_map(|r| r["pid"].as_i64())
                        .map(|p| p as i32)
                        .collect::<Vec<i32>>()
                };
                if of_kind("child").len() >= 24 {
                    let mut pids = of_kind("orchestrator");
                    pids.extend(of_kind("crawl_worker"));
                    pids.extend(of_kind("snapshot_worker"));
                    break pids;
                }
                assert!(Instant::now() < deadline, "the 8 hooks did not start");
                std::thread::sleep(Duration::from_millis(100));
            };
            if n == 0 {
                let pss: f64 = abxd_pids.iter().map(|&p| pss_uss_mib(p).0).sum();
                figures.add(
                    &format!(
                        "7 PSS of all abxd processes, 8 snapshot workers, {containment} (MiB)"
                    ),
                    pss,
                    None,
                );
            }
            let cpu_ns = || abxd_pids.iter().map(|&p| cpu_ns(p)).sum::<u64>();
            let before = cpu_ns();
            std::thread::sleep(s.busy);
            let used = cpu_ns() - before;
            let percent = 100.0 * used as f64 / s.busy.as_nanos() as f64;
            let name = format!(
                "7 abxd CPU (% of a core), 8 sleeping snapshots, {n} unrelated processes, {containment}"
            );
            let baseline_name = format!("the same with 0 unrelated processes, {containment}");
            match quiet {
                None => figures.add(&name, percent, None),
                Some(zero) => figures.add(&name, percent, Some((baseline_name.as_str(), zero))),
            }
            quiet.get_or_insert(percent);
            drop(daemon);
            drop(crowd);
        }
    }
}
