#!/usr/bin/env python3
"""abxd's admission under a memory budget: the crawl of benches/realsite.py (python3.11-doc on
loopback, ArchiveBox's plugins at its pins) at twice the concurrency (8 snapshots at once), run
in a cgroup whose memory limit is the budget, with `[limits] memory_floor` set.

    benches/realsite_budget.py --budget 1G --floor 256M --crawl tutorial --concurrency 8

The cgroup is a v2 one with the memory controller where the host has it (a unified host), else
one of the v1 memory hierarchy (a hybrid host, as this project's CI machines are): abxd reads
either limit. It reports, beside realsite.py's figures, the budget, the cgroup's peak charge
(memory.peak / memory.max_usage_in_bytes: page cache included), the OOM kills the kernel made
in it (memory.events / memory.oom_control: the goal is 0), and how often and for how long
admission held starts back (from abxd's log). Runs as root; writes OUT/budget.json.
"""

import argparse
import glob
import json
import os
import re
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realsite  # noqa: E402

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size(text):
    return int(text[:-1]) * UNITS[text[-1].upper()] if text[-1].isalpha() else int(text)


class BudgetCgroup:
    """A memory cgroup below this process's own, limited to `budget` bytes."""

    def __init__(self, budget):
        name = f"abxd-realsite-{os.getpid()}"
        v2 = self.v2_parent()
        if v2:
            self.version, self.dir = 2, os.path.join(v2, name)
            os.mkdir(self.dir)
            open(os.path.join(self.dir, "memory.max"), "w").write(str(budget))
        else:
            own = [line.split(":", 2)[2].strip() for line in open("/proc/self/cgroup")
                   if line.split(":", 2)[1].split(",").count("memory")]
            if not own:
                realsite.die("no memory controller: neither cgroup v2's nor a v1 hierarchy")
            self.version = 1
            self.dir = os.path.join("/sys/fs/cgroup/memory", own[0].lstrip("/"), name)
            os.mkdir(self.dir)
            open(os.path.join(self.dir, "memory.limit_in_bytes"), "w").write(str(budget))

    @staticmethod
    def v2_parent():
        """This process's v2 cgroup, if the memory controller can be had below it."""
        for line in open("/proc/self/mountinfo"):
            if " - cgroup2 " in line:
                mount = line.split()[4]
                own = [l[3:].strip() for l in open("/proc/self/cgroup") if l.startswith("0::")]
                parent = os.path.join(mount, own[0].lstrip("/")) if own else None
                control = os.path.join(parent or "", "cgroup.subtree_control")
                if parent and "memory" in realsite.read(control).decode():
                    return parent
        return None

    def join(self):
        """(In the child, before it execs.)"""
        procs = "cgroup.procs" if self.version == 2 else "tasks"
        with open(os.path.join(self.dir, procs), "w") as f:
            f.write(str(os.getpid()))

    def figures(self):
        read = lambda name: realsite.read(os.path.join(self.dir, name)).decode()
        if self.version == 2:
            peak = int(read("memory.peak") or 0)
            oom = re.search(r"^oom_kill (\d+)", read("memory.events"), re.M)
        else:
            peak = int(read("memory.max_usage_in_bytes") or 0)
            oom = re.search(r"^oom_kill (\d+)", read("memory.oom_control"), re.M)
        return {"cgroup": self.dir, "peak_charge_mib": peak >> 20,
                "oom_kills": int(oom.group(1)) if oom else None}

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.dir)
                return
            except OSError:
                time.sleep(0.2)


def admission(home):
    """What admission did: how many times it held starts back, the first reasons and the last
    (from abxd's and its crawl workers' logs: a crawl's snapshots are admitted by its worker),
    and the most snapshots that ran at once (from the process table)."""
    logs = [os.path.join(home, "..", "abxd.log"), *glob.glob(os.path.join(home, "data/logs/*.stderr.log"))]
    waits = [w for log in logs
             for w in re.findall(r"admission waits for (.*)", realsite.read(log).decode(errors="replace"))]
    db = sqlite3.connect(os.path.join(home, "data/abxd.sqlite3"))
    spans = db.execute("SELECT started_at, ended_at FROM processes WHERE kind = 'snapshot_worker' "
                       "AND started_at IS NOT NULL").fetchall()
    db.close()
    edges = sorted(e for start, end in spans for e in ((start, 1), (end or 2**62, -1)))
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return {"waits": len(waits), "first": waits[:3], "last": waits[-1:],
            "most_snapshots_at_once": most}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawl", choices=realsite.CRAWLS, default="tutorial")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--budget", default="1G")
    parser.add_argument("--floor", default="256M")
    parser.add_argument("--out")
    args = parser.parse_args()
    out, env, server, base = realsite.prepare(args.out, "budget-")
    budget = BudgetCgroup(size(args.budget))
    try:
        seed, max_urls = realsite.CRAWLS[args.crawl]
        print(f"== abxd: {base + seed} at depth 1, {args.concurrency} at once, in {budget.dir} "
              f"(limit {args.budget}), memory_floor {args.floor}")
        # (Admission's waits are logged at info: the run's log is warnings only otherwise.)
        env = {**env, "RUST_LOG": "warn,abxd::pool::gate=info"}
        figures = realsite.run_abxd(out, env, base + seed, max_urls, args.concurrency,
                                    f"budget-{os.getpid()}",
                                    limits=f'memory_floor = "{args.floor}"\n',
                                    preexec=budget.join)
        figures.update(budget.figures())
        figures["admission"] = admission(os.path.join(out, "abxd"))
    finally:
        server.terminate()
        server.wait()
        budget.remove()
    figures["budget_mib"] = size(args.budget) >> 20
    figures["distinct_pages"] = len({u.split("#")[0] for u in figures["pages"]})
    figures["statuses"] = realsite.statuses(figures)
    figures["pages_per_min"] = round(figures["distinct_pages"] * 60 / figures["wall_s"], 1)
    json.dump(figures, open(os.path.join(out, "budget.json"), "w"), indent=1, default=list)
    for key in ("exit", "distinct_pages", "wall_s", "pages_per_min", "budget_mib", "peak_pss_mib",
                "peak_charge_mib", "oom_kills", "peak_browsers", "left_after_5s", "admission"):
        print(f"{key:18}{figures[key]}")
    print(f"\nstatuses: {figures['statuses']}\n{out}/budget.json")


if __name__ == "__main__":
    main()
