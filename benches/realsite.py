#!/usr/bin/env python3
"""abxd beside ArchiveBox 0.9.73 on a real site: the HTML of Debian's python3.11-doc, served on
127.0.0.1, crawled at depth 1 with ArchiveBox's own plugins (abx-plugins 1.13.162, from
ArchiveBox's virtualenv) by both tools, one after the other, in one session.

    benches/realsite.py --crawl tutorial              ~20 seed links, about 150 pages
    benches/realsite.py --crawl library               a few hundred pages
    benches/realsite.py --crawl smoke                 a handful of pages (what CI runs)
    options: --concurrency N (snapshots at once, both tools; 0: each tool's default)
             --tools abxd,archivebox,abxd-queue   --out DIR (default /var/tmp/abxd-realsite/<time>)
    abxd-queue: the same crawl queued in an ArchiveBox collection (`archivebox add --bg`) and run
    by abxd serving its queue in place of ArchiveBox's runner (`[archivebox] serve_queue`); its
    peak PSS and CPU count ArchiveBox's Python of each turn (a process below the daemon)
    ABXD_REALSITE_EXE=PATH runs that abxd instead of the release build (e.g. one built with
    symbols and frame pointers, to profile it with `perf record -a -g` during the run)

Needs what .ci/run installs (ArchiveBox's virtualenv under /var/cache/abxd-ci, node 22, chromium)
and python3.11-doc (installed here when missing). Runs as root: both tools' hooks run as the
unprivileged user `abxbench` (made when missing) — ArchiveBox must, and abxd is told to
(`--hooks-user`), so both do the same work under the same user. The registry here lacks the
chrome plugin's abxbus 2.5.74: both use a copy of the plugins with that pin lowered
(ABX_PLUGINS_DIR), as tests/archivebox_pins.rs does; ArchiveBox's default search backend
(sonic) cannot be had either: its collection uses ripgrep.

Per run it measures, sampling every process of the run twice a second (every process that
carries the run's tag in its environment, and every descendant of the tool's process): wall time and pages per minute; per plugin the
status counts; per page which plugins produced non-empty output, compared between the tools;
peak total PSS; peak number of browsers alive (Chrome's main processes); CPU seconds of the
whole run (the rusage of the tool's process, which reaps everything below it) and of abxd's
own processes (daemon and workers, sampled); processes left alive 5 s after the end (then
killed, by pid, after checking the tag). It prints a table and writes everything to
OUT/results.json. Nothing is asserted: the figures go to BENCHMARKS.md.
"""

import argparse
import collections
import glob
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SITE = "/usr/share/doc/python3.11/html"
ARCHIVEBOX_VENV = os.environ.get(
    "ABXD_ARCHIVEBOX_VENV", "/var/cache/abxd-ci/archivebox-0.9.73")
NODE_SHARED = "/var/cache/abxd-ci/node22"
USER = "abxbench"
PLUGINS = ("chrome,title,wget,favicon,htmltotext,parse_html_urls,screenshot,pdf,dom,"
           "headers,hashes")
REGISTRY_ABXBUS = "2.5.56"
CRAWLS = {
    "smoke": ("tutorial/index.html", 5),
    "tutorial": ("tutorial/index.html", 0),
    "library": ("library/index.html", 0),
}
TAG_ENV = "ABXD_REALSITE_TAG"
# Another build of abxd to run (one with symbols, for a profile), instead of the release build.
EXE = os.environ.get("ABXD_REALSITE_EXE")
BROWSERS = {"chrome", "chromium", "chromium-browser", "google-chrome", "headless_shell"}


def die(message):
    sys.exit(f"realsite.py: {message}")


def run(argv, **kwargs):
    subprocess.run(argv, check=True, **kwargs)


# ---- setup -------------------------------------------------------------------------------

def setup(work):
    """The site, the user, readable tools and the plugins copy; returns the environment."""
    if not os.path.isdir(SITE):
        run(["apt-get", "install", "-y", "-qq", "python3.11-doc"], stdout=subprocess.DEVNULL)
    try:
        pwd.getpwnam(USER)
    except KeyError:
        run(["useradd", "--system", "--create-home", "--home-dir", f"/var/lib/{USER}",
             "--shell", "/usr/sbin/nologin", USER])
    archivebox = os.path.join(ARCHIVEBOX_VENV, "bin/archivebox")
    if not os.access(archivebox, os.X_OK):
        die(f"no ArchiveBox at {archivebox} (.ci/run installs it)")
    if not os.path.isdir(NODE_SHARED):
        node_bin = os.environ.get("ABXD_NODE_BIN")  # <prefix>/node_modules/.bin
        if not node_bin:
            die("set ABXD_NODE_BIN to node 22's bin dir (.ci/run exports it)")
        # (The hooks' user must reach node: a copy where it can.)
        shutil.copytree(os.path.dirname(os.path.dirname(node_bin)), NODE_SHARED, symlinks=True)
    plugins = os.path.join(work, "plugins")
    site_packages = glob.glob(os.path.join(ARCHIVEBOX_VENV, "lib/python3*/site-packages"))[0]
    shutil.copytree(os.path.join(site_packages, "abx_plugins/plugins"), plugins,
                    ignore=shutil.ignore_patterns("__pycache__"))
    config = os.path.join(plugins, "chrome/config.json")
    manifest = json.load(open(config))
    for binary in manifest["required_binaries"]:
        if binary["name"] == "abxbus":
            binary["min_version"] = REGISTRY_ABXBUS
            binary["overrides"]["pnpm"]["install_args"] = [f"abxbus@{REGISTRY_ABXBUS}"]
            binary["overrides"]["pnpm"]["version"] = REGISTRY_ABXBUS
    json.dump(manifest, open(config, "w"), indent=2)
    print(f"(this registry lacks abxbus 2.5.74: both tools use {plugins}, "
          f"abxbus {REGISTRY_ABXBUS})")
    # One library of binaries for both, installed before either is timed (`abx-dl install`, as
    # an ArchiveBox user does once): neither run pays for an install.
    lib = os.path.join(work, "lib")
    os.makedirs(lib)
    shutil.chown(lib, USER, USER)
    env = {
        "PATH": f"{ARCHIVEBOX_VENV}/bin:{NODE_SHARED}/node_modules/.bin:/usr/local/bin:/usr/bin:/bin",
        "ABX_PLUGINS_DIR": plugins,
        "ABXPKG_LIB_DIR": lib,
        "CHROME_BINARY": "/usr/bin/chromium",
        "LANG": "C.UTF-8",
    }
    install = [os.path.join(ARCHIVEBOX_VENV, "bin/abx-dl"), "install", *PLUGINS.split(",")]
    run(as_user(install, {**env, "HOME": lib}), cwd=lib, stdout=subprocess.DEVNULL)
    return env


def prepare(out, prefix=""):
    """What every script here does first, as root: the run's directory (`out`, else a new one
    under /var/tmp/abxd-realsite named `prefix` and the time), abxd built (unless
    ABXD_REALSITE_EXE names a build), `setup`, and the site served. Returns (out, env, server,
    base URL)."""
    if os.geteuid() != 0:
        die("run as root (hooks and ArchiveBox run as the user abxbench)")
    # (A short path, world-traversable: ArchiveBox puts Unix sockets below its collection.)
    out = out or os.path.join("/var/tmp/abxd-realsite", prefix + time.strftime("%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    os.chmod(out, 0o755)
    if not EXE:
        run(["cargo", "build", "--release", "--quiet", "--bin", "abxd", "--bin", "abxctl"], cwd=ROOT)
    env = setup(out)
    server, base = serve_site()
    return out, env, server, base


def serve_site():
    """The site on a loopback port: (process, base URL)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1", "-d", SITE],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (...)"
    port = line.split(" port ")[1].split()[0]
    return server, f"http://127.0.0.1:{port}/"


# ---- sampling ------------------------------------------------------------------------------

def tagged(tag):
    """The pids whose environment carries TAG_ENV=tag."""
    needle = f"{TAG_ENV}={tag}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


def descendants(root):
    """The pids below `root` (by parent links, read from /proc), `root` among them."""
    children = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = read(f"/proc/{entry}/stat").decode(errors="replace")
            fields = stat[stat.rfind(")") + 2:].split()
            if len(fields) > 1:
                children[int(fields[1])].append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


class Sampler(threading.Thread):
    """Samples the run's processes twice a second: PSS, browsers, CPU of abxd's own."""

    def __init__(self, tag, own_exe):
        super().__init__(daemon=True)
        self.tag, self.own_exe = tag, own_exe
        # The tool's process, once started: its descendants are sampled with the tagged ones
        # (a process that does not inherit the tag, as ArchiveBox's Python of abxd's turns).
        self.root = None
        self.peak_pss = 0
        self.peak_browsers = 0
        # pid -> (role, last seen utime+stime in seconds) of abxd's own processes, the role
        # being its subcommand ("run", "worker crawl", "worker snapshot")
        self.own_cpu = {}
        self.stopped = threading.Event()

    def run(self):
        ticks = os.sysconf("SC_CLK_TCK")
        while not self.stopped.wait(0.5):
            pss, browsers = 0, 0
            pids = set(tagged(self.tag))
            if self.root is not None:
                pids.update(descendants(self.root))
            for pid in pids:
                try:
                    exe = os.readlink(f"/proc/{pid}/exe")
                except OSError:
                    continue  # (gone since, or a kernel thread)
                for line in read(f"/proc/{pid}/smaps_rollup").decode().splitlines():
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1]) << 10
                argv = read(f"/proc/{pid}/cmdline").decode(errors="replace").split("\0")
                name = os.path.basename(argv[0]).lower()
                if name in BROWSERS and not any(a.startswith("--type=") for a in argv):
                    browsers += 1
                if self.own_exe and exe == self.own_exe:
                    stat = read(f"/proc/{pid}/stat").decode()
                    fields = stat[stat.rfind(")") + 2:].split()
                    if len(fields) > 12:  # (else it ended since: its last sample stands)
                        role = role_of(argv)
                        self.own_cpu[pid] = (role, (int(fields[11]) + int(fields[12])) / ticks)
            self.peak_pss = max(self.peak_pss, pss)
            self.peak_browsers = max(self.peak_browsers, browsers)


def role_of(argv):
    """An abxd process's subcommand: `abxd --config C worker snapshot 7` is "worker snapshot"."""
    words, rest = [], iter(argv[1:])
    for arg in rest:
        if arg == "--config":
            next(rest, None)
        elif arg and arg[0] not in "-0123456789/" and len(words) < 2:
            words.append(arg)
    return " ".join(words[:1] if words[:1] == ["run"] else words)


def own_by_role(own_cpu):
    """abxd's own CPU seconds per role, and how many processes of each role were seen."""
    roles = collections.defaultdict(lambda: [0.0, 0])
    for role, seconds in own_cpu.values():
        roles[role][0] += seconds
        roles[role][1] += 1
    return {role: {"cpu_s": round(s, 2), "processes": n} for role, (s, n) in sorted(roles.items())}


def measured_run(name, argv, env, cwd, tag, own_exe=None, preexec=None):
    """Runs argv to its end under the sampler (`preexec` in the child before it execs);
    returns the figures."""
    sampler = Sampler(tag, own_exe)
    sampler.start()
    started = time.monotonic()
    with open(os.path.join(cwd, "..", f"{name}.log"), "w") as log:
        process = subprocess.Popen(argv, env={**env, TAG_ENV: tag}, cwd=cwd,
                                   stdout=log, stderr=subprocess.STDOUT, preexec_fn=preexec)
        sampler.root = process.pid
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    sampler.stopped.set()
    sampler.join()
    time.sleep(5)
    left = [pid for pid in tagged(tag) if pid != os.getpid()]
    for pid in left:
        if pid in tagged(tag):  # (still that process: its environment still says so)
            os.kill(pid, signal.SIGKILL)
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "own_cpu_s": round(sum(s for _, s in sampler.own_cpu.values()), 2) if own_exe else None,
        "own_cpu_by_role": own_by_role(sampler.own_cpu) if own_exe else None,
        "peak_pss_mib": sampler.peak_pss >> 20,
        "peak_browsers": sampler.peak_browsers,
        "left_after_5s": len(left),
    }


# ---- the two tools -------------------------------------------------------------------------

def as_user(argv, env):
    return ["/usr/sbin/runuser", "-u", USER, "--", "env", *[f"{k}={v}" for k, v in env.items()],
            *argv]


# The site is our own on loopback, and ArchiveBox holds itself to no per-site limit: abxd's
# politeness (supervisor.toml(5) [politeness]) is lifted, so that both run at the concurrency asked.
UNHELD = '[politeness]\nmax_per_host = 1000\ndelay = "0s"\n'


def run_abxd(work, env, url, max_urls, concurrency, tag, limits="", preexec=None):
    """`abxd run` of the crawl; `limits`: more lines of its config's [limits]."""
    home = os.path.join(work, "abxd")
    os.makedirs(home)
    os.chmod(home, 0o755)
    workers = f"max_snapshot_workers = {concurrency}\n" if concurrency else ""
    with open(os.path.join(home, "supervisor.toml"), "w") as f:
        f.write(f"[limits]\n{workers}{limits}{UNHELD}")
    exe = EXE or os.path.join(ROOT, "target/release/abxd")
    argv = [exe, "run", "--hooks-user", USER, "--depth", "1", "--plugins", PLUGINS]
    if max_urls:
        argv += ["--max-urls", str(max_urls)]
    figures = measured_run("abxd", argv + [url], {**env, "HOME": home}, home, tag,
                           own_exe=os.path.realpath(exe), preexec=preexec)
    indexes = glob.glob(os.path.join(home, "data/crawls/*/snapshots/*/index.jsonl"))
    figures["pages"], figures["hook_statuses"] = pages(indexes), hook_statuses(indexes)
    return figures


def run_archivebox(work, env, url, max_urls, concurrency, tag):
    home = os.path.join(work, "archivebox")
    os.makedirs(home)
    shutil.chown(home, USER, USER)
    env = {**env, "HOME": home}
    archivebox = os.path.join(ARCHIVEBOX_VENV, "bin/archivebox")
    for argv in ([archivebox, "init"],
                 [archivebox, "config", "--set", "SEARCH_BACKEND_ENGINE=ripgrep"],
                 [archivebox, "config", "--set", "SEARCH_BACKEND_SONIC_ENABLED=False"]):
        run(as_user(argv, env), cwd=home, stdout=subprocess.DEVNULL)
    argv = [archivebox, "add", "--depth=1", f"--plugins={PLUGINS}"]
    if concurrency:
        argv.append(f"--crawl-max-concurrent-snapshots={concurrency}")
    if max_urls:
        argv.append(f"--max-urls={max_urls}")
    figures = measured_run("archivebox", as_user(argv + [url], {**env, TAG_ENV: tag}), env, home,
                           tag)
    indexes = glob.glob(os.path.join(home, "archive/users/*/snapshots/*/*/*/index.jsonl"))
    figures["pages"], figures["hook_statuses"] = pages(indexes), hook_statuses(indexes)
    return figures


# The driver of a run of abxd serving ArchiveBox's queue: the daemon, until every Crawl of the
# collection is sealed there, then its clean stop. (Not a test: it polls.)
DRIVE_QUEUE = r"""
import signal, sqlite3, subprocess, sys, time
exe, config, collection = sys.argv[1:4]
daemon = subprocess.Popen([exe, "--config", config])
def sealed():
    try:
        db = sqlite3.connect(f"file:{collection}/index.sqlite3?mode=ro", uri=True, timeout=5)
        queued, done = db.execute(
            "SELECT count(*), coalesce(sum(status = 'sealed'), 0) FROM crawls_crawl").fetchone()
        return queued > 0 and queued == done
    except sqlite3.Error:
        return False
while daemon.poll() is None and not sealed():
    time.sleep(0.5)
daemon.send_signal(signal.SIGTERM)
sys.exit(daemon.wait())
"""


def run_abxd_queue(work, env, url, max_urls, concurrency, tag):
    """The same crawl queued in an ArchiveBox collection (`archivebox add --bg`, as its UI
    queues one) and run by abxd serving its queue (`[archivebox] serve_queue`) in place of
    ArchiveBox's runner; timed from the daemon's start to the Crawl sealed in ArchiveBox."""
    home = os.path.join(work, "abxd-queue")
    collection = os.path.join(home, "collection")
    os.makedirs(collection)
    os.chmod(home, 0o755)
    shutil.chown(collection, USER, USER)
    archivebox = os.path.join(ARCHIVEBOX_VENV, "bin/archivebox")
    user_env = {**env, "HOME": collection}
    add = [archivebox, "add", "--bg", "--depth=1", f"--plugins={PLUGINS}"]
    if concurrency:
        add.append(f"--crawl-max-concurrent-snapshots={concurrency}")
    if max_urls:
        add.append(f"--max-urls={max_urls}")
    for argv in ([archivebox, "init"],
                 [archivebox, "config", "--set", "SEARCH_BACKEND_ENGINE=ripgrep"],
                 [archivebox, "config", "--set", "SEARCH_BACKEND_SONIC_ENABLED=False"],
                 add + [url]):
        run(as_user(argv, user_env), cwd=collection, stdout=subprocess.DEVNULL)
    workers = f"max_snapshot_workers = {concurrency}\n" if concurrency else ""
    config = os.path.join(home, "supervisor.toml")
    with open(config, "w") as f:
        f.write(f"[hooks]\nuser = \"{USER}\"\n[limits]\n{workers}[archivebox]\n"
                f"data_dir = \"{collection}\"\ncommand = \"{archivebox}\"\n"
                f"serve_queue = true\nqueue_interval = \"1s\"\n{UNHELD}")
    exe = EXE or os.path.join(ROOT, "target/release/abxd")
    argv = [sys.executable, "-c", DRIVE_QUEUE, exe, config, collection]
    figures = measured_run("abxd-queue", argv, {**env, "HOME": home}, home, tag,
                           own_exe=os.path.realpath(exe))
    indexes = glob.glob(os.path.join(collection, "archive/users/*/snapshots/*/*/*/index.jsonl"))
    figures["pages"], figures["hook_statuses"] = pages(indexes), hook_statuses(indexes)
    return figures


def pages(indexes):
    """Per page URL: per plugin, (status, whether it wrote a non-empty output)."""
    out = {}
    for index in indexes:
        url, results = None, {}
        for line in open(index):
            record = json.loads(line)
            if record.get("type") == "Snapshot":
                url = record["url"]
            elif record.get("type") == "ArchiveResult":
                files = record.get("output_files") or []
                sizes = (files.values() if isinstance(files, dict) else files)
                wrote = any(f.get("size", 0) > 0 for f in sizes)
                # (The last record of a plugin's hook is its final one.)
                results[record["hook_name"]] = (record["plugin"], record["status"], wrote)
        per_plugin = collections.defaultdict(list)
        for plugin, status, wrote in results.values():
            per_plugin[plugin].append((status, wrote))
        out[url] = {p: (sorted({s for s, _ in v}), any(w for _, w in v))
                    for p, v in per_plugin.items()}
    return out


def hook_statuses(indexes):
    """Per hook, how many snapshots ended it with each status (its last record of each)."""
    counts = collections.Counter()
    for index in indexes:
        last = {}
        for line in open(index):
            record = json.loads(line)
            if record.get("type") == "ArchiveResult":
                last[record["hook_name"]] = record["status"]
        counts.update(f"{hook}:{status}" for hook, status in last.items())
    return dict(sorted(counts.items()))


# ---- report --------------------------------------------------------------------------------

def statuses(figures):
    counts = collections.Counter()
    for results in figures["pages"].values():
        for plugin, (status, _) in results.items():
            counts[f"{plugin}:{'/'.join(status)}"] += 1
    return dict(sorted(counts.items()))


def compare(a, b):
    """Pages both archived — a page is its URL without the fragment: ArchiveBox keeps
    `page.html#section` as a snapshot of its own, abxd archives the page once — and per plugin
    the pages where one tool wrote output and the other did not."""
    def by_page(figures):
        return {url.split("#")[0]: results for url, results in figures["pages"].items()}
    pa, pb = by_page(a), by_page(b)
    both = sorted(set(pa) & set(pb))
    differ = collections.Counter()
    for url in both:
        for plugin in set(pa[url]) | set(pb[url]):
            if pa[url].get(plugin, ([], False))[1] != pb[url].get(plugin, ([], False))[1]:
                differ[plugin] += 1
    return {"pages_in_both": len(both),
            "only_abxd": sorted(set(pa) - set(pb)),
            "only_archivebox": sorted(set(pb) - set(pa)),
            "archivebox_fragment_snapshots": sum("#" in u for u in b["pages"]),
            "outputs_differ_by_plugin": dict(differ)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawl", choices=CRAWLS, default="tutorial")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--tools", default="abxd,archivebox,abxd-queue")
    parser.add_argument("--out")
    args = parser.parse_args()
    out, env, server, base = prepare(args.out)
    try:
        seed, max_urls = CRAWLS[args.crawl]
        url = base + seed
        results = {"crawl": args.crawl, "url": url, "concurrency": args.concurrency}
        for tool in args.tools.split(","):
            runner = {"abxd": run_abxd, "archivebox": run_archivebox,
                      "abxd-queue": run_abxd_queue}[tool]
            print(f"== {tool}: {url} at depth 1, {args.concurrency or 'default'} at once")
            figures = runner(out, env, url, max_urls, args.concurrency, f"{tool}-{os.getpid()}")
            # (A page is its URL without the fragment: ArchiveBox archives `a.html#x` and
            # `a.html#y` as two snapshots of one page; abxd archives the page once.)
            distinct = {url.split("#")[0] for url in figures["pages"]}
            figures["snapshots"] = len(figures["pages"])
            figures["distinct_pages"] = len(distinct)
            figures["snapshots_per_min"] = round(figures["snapshots"] * 60 / figures["wall_s"], 1)
            figures["pages_per_min"] = round(len(distinct) * 60 / figures["wall_s"], 1)
            figures["statuses"] = statuses(figures)
            results[tool] = figures
        if "abxd" in results and "archivebox" in results:
            results["compared"] = compare(results["abxd"], results["archivebox"])
    finally:
        server.terminate()
        server.wait()
    json.dump(results, open(os.path.join(out, "results.json"), "w"), indent=1, default=list)
    keys = ["exit", "snapshots", "distinct_pages", "wall_s", "snapshots_per_min",
            "pages_per_min", "cpu_s", "own_cpu_s", "peak_pss_mib", "peak_browsers",
            "left_after_5s"]
    tools = [t for t in ("abxd", "archivebox", "abxd-queue") if t in results]
    print(f"\n{'':18}" + "".join(f"{t:>14}" for t in tools))
    for key in keys:
        print(f"{key:18}" + "".join(f"{str(results[t][key]):>14}" for t in tools))
    for t in tools:
        print(f"\n{t} statuses: {results[t]['statuses']}")
    if "compared" in results:
        print(f"\ncompared: {json.dumps(results['compared'])}")
    print(f"\n{out}/results.json")


if __name__ == "__main__":
    main()
