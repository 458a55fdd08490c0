#!/usr/bin/env python3
"""A crash in the middle of a real crawl, with real browsers: the crawl of benches/realsite.py
(python3.11-doc on loopback, ArchiveBox's plugins at its pins, 4 snapshots at once), run by
abxd's daemon and by ArchiveBox 0.9.73; at a third of the way (snapshots sealed of those known),
kill -9 of the tool's own processes — abxd's daemon and workers; ArchiveBox's runner (the
`archivebox` and `abx-dl` processes) — never of the hooks and browsers; then a restart:
`abxd` again, `archivebox run --crawl-id=ID` (ArchiveBox's own way to go on with a crawl).

    benches/realsite_crash.py --crawl library         the large crawl (what BENCHMARKS.md shows)
    benches/realsite_crash.py --crawl smoke           a handful of pages
    options: --tools abxd,archivebox  --at 0.33  --concurrency 4  --out DIR

Per tool it reports: browsers alive just before the restart (left by the kill), browsers of
before the restart still alive 2 s after it began (orphans the restart did not take back), the
peak of browsers alive; hooks that had succeeded and ran again for the same snapshot (and, apart,
crawl-wide hooks run again: a crawl's browser must be launched anew); pages missing at the end
(snapshots known and not archived); the wall time from the first start to the end, and the time
from the kill to the restart's first new hook; processes left 5 s after the end. Runs as root, as
realsite.py does; nothing is asserted. Writes OUT/crash.json.
"""

import argparse
import calendar
import glob
import shutil
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realsite  # noqa: E402  (the site, the user, the plugins, sampling)

TICKS = os.sysconf("SC_CLK_TCK")


def uptime_ticks():
    return int(float(open("/proc/uptime").read().split()[0]) * TICKS)


def started_ticks(pid):
    stat = realsite.read(f"/proc/{pid}/stat").decode()
    return int(stat[stat.rfind(")") + 2:].split()[19]) if stat else None


def argv_of(pid):
    return realsite.read(f"/proc/{pid}/cmdline").decode(errors="replace").split("\0")


def browsers(tag, started_before=None):
    """The tagged browsers (main processes) alive; only those started before a time, if given."""
    found = []
    for pid in realsite.tagged(tag):
        argv = argv_of(pid)
        name = os.path.basename(argv[0]).lower()
        if name in realsite.BROWSERS and not any(a.startswith("--type=") for a in argv):
            start = started_ticks(pid)
            if started_before is None or (start is not None and start < started_before):
                found.append(pid)
    return found


def kill9(tag, is_runner):
    """SIGKILL to every tagged process `is_runner` says is the tool's own, until none is left
    (one the tool started while the others were being killed is killed too); returns how many."""
    killed = set()
    for _ in range(20):
        pids = [pid for pid in realsite.tagged(tag) if is_runner(pid) and pid not in killed]
        if not pids:
            break
        for pid in pids:
            if pid in realsite.tagged(tag):  # (still that process: its environment says so)
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        time.sleep(0.05)
    return len(killed)


def wait_for(what, check, timeout, every=0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    realsite.die(f"timed out waiting for {what}")


def query(db, sql, args=()):
    """Rows of a read of another program's SQLite database (None while it cannot be read)."""
    if not os.path.exists(db):
        return None
    try:
        # (Not mode=ro: a read-only connection cannot join a live WAL database.)
        conn = sqlite3.connect(db, timeout=10)
        try:
            return conn.execute(sql, args).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as err:
        print(f"(cannot read {db}: {err})", file=sys.stderr)
        return None


# ---- the tools -----------------------------------------------------------------------------

class Abxd:
    """abxd's daemon in HOME, its crawl added by `abxctl add`."""

    def __init__(self, work, env, concurrency):
        self.home = os.path.join(work, "abxd-crash")
        os.makedirs(self.home)
        os.chmod(self.home, 0o755)
        self.exe = realsite.EXE or os.path.join(realsite.ROOT, "target/release/abxd")
        self.ctl = os.path.join(os.path.dirname(self.exe), "abxctl")
        self.config = os.path.join(self.home, "supervisor.toml")
        with open(self.config, "w") as f:
            f.write(f'[hooks]\nuser = "{realsite.USER}"\n'
                    f"[limits]\nmax_snapshot_workers = {concurrency}\n{realsite.UNHELD}")
        self.env = {**env, "HOME": self.home}
        self.db = os.path.join(self.home, "data/abxd.sqlite3")
        self.crawl = None

    def start(self, tag, url, max_urls):
        self.daemon = self.launch(tag)
        wait_for("abxd's socket", lambda: subprocess.run(
            [self.ctl, "--config", self.config, "status"], env=self.env,
            capture_output=True).returncode == 0, 30)
        argv = [self.ctl, "--config", self.config, "add", "--json", "--depth", "1",
                "--plugins", realsite.PLUGINS]
        if max_urls:
            argv += ["--max-urls", str(max_urls)]
        out = subprocess.run(argv + [url], env=self.env, check=True, capture_output=True,
                             text=True).stdout
        self.crawl = json.loads(out)["crawl_id"]

    def launch(self, tag):
        log = open(os.path.join(self.home, "abxd.log"), "a")
        return subprocess.Popen([self.exe, "--config", self.config],
                                env={**self.env, realsite.TAG_ENV: tag}, cwd=self.home,
                                stdout=log, stderr=subprocess.STDOUT)

    def progress(self):
        rows = query(self.db, "SELECT status = 'sealed', count(*) FROM snapshots "
                              "WHERE crawl_id = ? GROUP BY 1", (self.crawl,))
        counts = dict(rows or [])
        return counts.get(1, 0), sum(counts.values())

    def is_runner(self, pid):
        try:
            return os.readlink(f"/proc/{pid}/exe") == os.path.realpath(self.exe)
        except OSError:
            return False

    def resume(self, tag):
        self.daemon.wait()  # (reaped: it was killed)
        self.daemon = self.launch(tag)

    def done(self):
        rows = query(self.db, "SELECT status FROM crawls WHERE id = ?", (self.crawl,))
        return bool(rows) and rows[0][0] == "sealed"

    def stop(self):
        self.daemon.send_signal(signal.SIGTERM)
        self.daemon.wait(timeout=120)

    def hook_runs(self):
        """(snapshot or None, hook, exit code) of every hook run, in order."""
        rows = query(self.db, "SELECT snapshot_id, argv, exit_code FROM processes "
                              "WHERE kind = 'hook' AND crawl_id = ? ORDER BY id", (self.crawl,))
        return [(s, os.path.basename(json.loads(a)[0]), e) for s, a, e in rows]

    def first_hook_after(self, wall):
        rows = query(self.db, "SELECT min(started_at) FROM processes WHERE kind = 'hook' "
                              "AND started_at > ?", (int(wall * 1000),))
        return rows[0][0] / 1000 if rows and rows[0][0] else None

    def pages(self):
        return realsite.pages(glob_indexes(os.path.join(
            self.home, "data/crawls/*/snapshots/*/index.jsonl")))


class ArchiveBox:
    """`archivebox add` as the unprivileged user; resumed by `archivebox run --crawl-id`."""

    def __init__(self, work, env, concurrency):
        # (Short: ArchiveBox puts Unix sockets below its collection, whose paths are bounded.)
        self.home = os.path.join(work, "ab")
        os.makedirs(self.home)
        shutil.chown(self.home, realsite.USER, realsite.USER)
        self.env = {**env, "HOME": self.home}
        self.bin = os.path.join(realsite.ARCHIVEBOX_VENV, "bin/archivebox")
        self.concurrency = concurrency
        self.db = os.path.join(self.home, "index.sqlite3")
        for argv in ([self.bin, "init"],
                     [self.bin, "config", "--set", "SEARCH_BACKEND_ENGINE=ripgrep"],
                     [self.bin, "config", "--set", "SEARCH_BACKEND_SONIC_ENABLED=False"]):
            realsite.run(realsite.as_user(argv, self.env), cwd=self.home,
                         stdout=subprocess.DEVNULL)

    def start(self, tag, url, max_urls):
        argv = [self.bin, "add", "--depth=1", f"--plugins={realsite.PLUGINS}",
                f"--crawl-max-concurrent-snapshots={self.concurrency}"]
        if max_urls:
            argv.append(f"--max-urls={max_urls}")
        self.runner = self.launch(tag, argv + [url])

    def launch(self, tag, argv):
        log = open(os.path.join(self.home, "..", "archivebox.log"), "a")
        return subprocess.Popen(realsite.as_user(argv, {**self.env, realsite.TAG_ENV: tag}),
                                cwd=self.home, stdout=log, stderr=subprocess.STDOUT)

    def progress(self):
        rows = query(self.db, "SELECT status = 'sealed', count(*) FROM core_snapshot GROUP BY 1")
        counts = dict(rows or [])
        return counts.get(1, 0), sum(counts.values())

    def is_runner(self, pid):
        argv = " ".join(argv_of(pid)[:3])
        return "bin/archivebox" in argv or "bin/abx-dl" in argv

    def resume(self, tag):
        self.runner.wait()
        crawl = query(self.db, "SELECT id FROM crawls_crawl")[0][0]
        crawl = str(crawl).replace("-", "")
        crawl = f"{crawl[:8]}-{crawl[8:12]}-{crawl[12:16]}-{crawl[16:20]}-{crawl[20:]}"
        self.runner = self.launch(tag, [self.bin, "run", f"--crawl-id={crawl}"])

    def done(self):
        return self.runner.poll() is not None

    def stop(self):
        self.runner.wait(timeout=120)

    def hook_runs(self):
        rows = query(self.db, "SELECT p.cmd, p.exit_code, p.pwd FROM machine_process p "
                              "WHERE p.process_type = 'hook' ORDER BY p.created_at")
        runs = []
        for cmd, exit_code, pwd in rows:
            # (A snapshot's hooks run in its plugin's dir below the snapshot's; a crawl's in
            # the crawl's.)
            snapshot = os.path.dirname(pwd) if "/snapshots/" in pwd else None
            runs.append((snapshot, os.path.basename(json.loads(cmd)[0]), exit_code))
        return runs

    def first_hook_after(self, wall):
        rows = query(self.db, "SELECT min(started_at) FROM machine_process "
                              "WHERE process_type = 'hook' AND started_at > ?",
                     # (With the fraction: a hook of the same second, before the kill, is not
                     # one the restart started.)
                     (time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(wall))
                      + f".{int(wall % 1 * 1e6):06d}",))
        if not rows or not rows[0][0]:
            return None
        stamp = rows[0][0].replace("T", " ").split("+")[0]
        whole, _, frac = stamp.partition(".")
        return calendar.timegm(time.strptime(whole, "%Y-%m-%d %H:%M:%S")) + float(f"0.{frac or 0}")

    def pages(self):
        return realsite.pages(glob_indexes(os.path.join(
            self.home, "archive/users/*/snapshots/*/*/*/index.jsonl")))


def glob_indexes(pattern):
    return glob.glob(pattern)


# ---- one crash -----------------------------------------------------------------------------

def damaged(pages, seed):
    """The site's own pages (on the seed's host: links that leave the machine fail on both sides
    without a crash) with a plugin that failed, and which: what a crash cost in outputs."""
    host = seed.split("/")[2]
    return {url: sorted(p for p, (statuses, _) in results.items() if "failed" in statuses)
            for url, results in sorted(pages.items())
            if url.split("/")[2] == host
            and any("failed" in statuses for statuses, _ in results.values())}


def reran(runs):
    """Hooks that succeeded and ran again for the same snapshot; crawl-wide ones apart; and
    which hooks they were (a browser or tab session started again, and what set it up, is told
    apart from work done twice by its name)."""
    succeeded, again, which = set(), {"snapshot": 0, "crawl": 0}, {}
    for snapshot, hook, exit_code in runs:
        key = (snapshot, hook)
        if key in succeeded:
            again["crawl" if snapshot is None else "snapshot"] += 1
            which[hook] = which.get(hook, 0) + 1
        if exit_code == 0:
            succeeded.add(key)
    return {**again, "hooks": which}


def crash(tool, url, max_urls, at, tag):
    sampler = realsite.Sampler(tag, None)
    sampler.start()
    started = time.monotonic()
    tool.start(tag, url, max_urls)
    sealed, known = wait_for(
        f"a third of the snapshots sealed ({type(tool).__name__})",
        lambda: (lambda s, k: (s, k) if k > 1 and s >= max(1, at * k) else None)(
            *tool.progress()), 3600, every=1)
    killed = kill9(tag, tool.is_runner)
    # (After the kill went round: a hook a dying worker started meanwhile is not the restart's.)
    killed_at = time.time()
    time.sleep(1)
    left_by_kill = len(browsers(tag))
    restart_ticks, restarted_at = uptime_ticks(), time.monotonic()
    tool.resume(tag)
    time.sleep(2)
    old_after_2s = len(browsers(tag, started_before=restart_ticks))
    wait_for("the crawl to end after the restart", tool.done, 4 * 3600, every=2)
    tool.stop()
    wall = time.monotonic() - started
    sampler.stopped.set()
    sampler.join()
    time.sleep(5)
    left = [pid for pid in realsite.tagged(tag) if pid != os.getpid()]
    for pid in left:
        if pid in realsite.tagged(tag):
            os.kill(pid, signal.SIGKILL)
    first_new = tool.first_hook_after(killed_at)
    pages = tool.pages()
    missing = query(tool.db, "SELECT count(*) FROM snapshots WHERE status != 'sealed'") \
        if isinstance(tool, Abxd) else \
        query(tool.db, "SELECT count(*) FROM core_snapshot WHERE status != 'sealed'")
    return {
        "local_pages_with_failures": damaged(pages, url),
        "killed_at_sealed": f"{sealed}/{known}",
        "processes_killed": killed,
        "browsers_alive_before_restart": left_by_kill,
        "browsers_of_before_alive_2s_after_restart": old_after_2s,
        "peak_browsers": sampler.peak_browsers,
        "peak_pss_mib": sampler.peak_pss >> 20,
        "succeeded_hooks_run_again": reran(tool.hook_runs()),
        "snapshots_not_archived": missing[0][0] if missing else None,
        "pages": len({u.split("#")[0] for u in pages}),
        "wall_s": round(wall, 1),
        "kill_to_first_new_hook_s": round(first_new - killed_at, 1) if first_new else None,
        "restart_to_end_s": round(time.monotonic() - restarted_at, 1),
        "left_after_5s": len(left),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawl", choices=realsite.CRAWLS, default="library")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--tools", default="abxd,archivebox")
    parser.add_argument("--at", type=float, default=1 / 3)
    parser.add_argument("--out")
    args = parser.parse_args()
    out, env, server, base = realsite.prepare(args.out, "crash-")
    seed, max_urls = realsite.CRAWLS[args.crawl]
    results = {"crawl": args.crawl, "url": base + seed, "at": args.at,
               "concurrency": args.concurrency}
    try:
        for name in args.tools.split(","):
            tool = {"abxd": Abxd, "archivebox": ArchiveBox}[name](out, env, args.concurrency)
            print(f"== {name}: {base + seed}, kill -9 at {args.at:.0%} of the snapshots sealed")
            results[name] = crash(tool, base + seed, max_urls, args.at, f"crash-{name}-{os.getpid()}")
            print(json.dumps(results[name], indent=1))
    finally:
        server.terminate()
        server.wait()
    json.dump(results, open(os.path.join(out, "crash.json"), "w"), indent=1)
    print(f"\n{out}/crash.json")


if __name__ == "__main__":
    main()
