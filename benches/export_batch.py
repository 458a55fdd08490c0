#!/usr/bin/env python3
"""What a collection pays for each crawl exported into it: ArchiveBox 0.9.73's import
(`archivebox update --rescan`) reads the whole collection whatever it imports, so abxd takes the
exports queued for one collection together and imports them in one run.

    benches/export_batch.py                       a collection of 2000 snapshots, 50 small crawls
    options: --collection N (snapshots in it first)  --crawls M (small crawls exported together)
             --out DIR (default /var/tmp/abxd-export/<time>)
    ABXD_EXPORT_EXE=DIR runs the abxd and abxctl in DIR (default: target/debug, built here)

Needs ArchiveBox's virtualenv where .ci/run installs it. Runs as root; the collection is the
unprivileged user `abxbench`'s (made when missing), as ArchiveBox must not run as root. The
hooks are the test fixture `ok` (it writes one file and says it ran): what is measured is the
copy and ArchiveBox's import, not the archiving.

It measures, from `abxctl export --wait` to its end: (1) one crawl of N snapshots exported into
the new collection (the collection filled); (2) one small crawl (one page) exported alone into
the collection of N; (3) M small crawls exported at once, which abxd imports as one batch.
It prints each time, the time per crawl of (3) and its ratio to (2), and writes OUT/results.json.
Nothing is asserted: the figures go to BENCHMARKS.md.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from archivebox_user import ARCHIVEBOX, USER, new_collection, prepare

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(message):
    sys.exit(f"export_batch.py: {message}")


def run(argv, **kwargs):
    return subprocess.run(argv, check=True, **kwargs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--collection", type=int, default=2000)
    parser.add_argument("--crawls", type=int, default=50)
    parser.add_argument("--out")
    args = parser.parse_args()
    prepare("export_batch.py")
    exe = os.environ.get("ABXD_EXPORT_EXE")
    if not exe:
        run(["cargo", "build", "--quiet", "--bin", "abxd", "--bin", "abxctl"], cwd=ROOT)
        exe = os.path.join(ROOT, "target/debug")
    out = args.out or os.path.join("/var/tmp/abxd-export", time.strftime("%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    os.chmod(out, 0o755)

    collection = os.path.join(out, "collection")
    new_collection(collection)

    home = os.path.join(out, "abxd")
    os.makedirs(home)
    os.chmod(home, 0o755)
    config = os.path.join(home, "supervisor.toml")
    with open(config, "w") as f:
        f.write(
            f'[paths]\nplugins_dirs = ["{ROOT}/tests/fixtures/plugins"]\n'
            f'[limits]\nmemory_floor = 0\nmax_snapshot_workers = 8\n'
            f'[hooks]\nuser = "{USER}"\n'
            f'[archivebox]\ncommand = "{ARCHIVEBOX}"\n'
            # (One loopback "site" for every crawl, timed: no politeness delay between them.)
            f'[politeness]\nmax_per_host = 1000\ndelay = "0s"\n')
    abxd = subprocess.Popen([os.path.join(exe, "abxd"), "--config", config], cwd=home,
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(out, "abxd.log"), "w"))
    ctl = [os.path.join(exe, "abxctl"), "--config", config]
    try:
        deadline = time.time() + 60
        while subprocess.run(ctl + ["status"], capture_output=True).returncode != 0:
            if time.time() > deadline or abxd.poll() is not None:
                die(f"abxd did not start: see {out}/abxd.log")
            time.sleep(0.2)

        def crawl(urls):
            said = run(ctl + ["add", "--json", "-p", "ok", *urls], capture_output=True, text=True)
            return json.loads(said.stdout)["crawl_id"]

        def sealed(ids):
            while True:
                listed = json.loads(run(ctl + ["crawls", "--json", "--status", "sealed"],
                                        capture_output=True, text=True).stdout)
                done = {c["id"] for c in listed["crawls"]}
                if all(i in done for i in ids):
                    return
                time.sleep(0.5)

        def export(ids):
            started = time.monotonic()
            said = run(ctl + ["export", "--archivebox", collection, "--wait",
                              *map(str, ids)], capture_output=True, text=True)
            return time.monotonic() - started, said.stdout.strip().splitlines()[-1:]

        figures = {"collection": args.collection, "crawls": args.crawls}
        big = crawl([f"http://127.0.0.1:9/page/{i}" for i in range(args.collection)])
        sealed([big])
        figures["fill_s"], said = export([big])
        print(f"(1) a crawl of {args.collection} exported: {figures['fill_s']:.1f} s {said}")
        one = crawl(["http://127.0.0.1:9/alone"])
        sealed([one])
        figures["one_s"], said = export([one])
        print(f"(2) one small crawl into it, alone: {figures['one_s']:.1f} s {said}")
        many = [crawl([f"http://127.0.0.1:9/small/{i}"]) for i in range(args.crawls)]
        sealed(many)
        figures["batch_s"], said = export(many)
        per_crawl = figures["batch_s"] / args.crawls
        figures["batch_per_crawl_s"] = per_crawl
        figures["per_crawl_vs_one"] = per_crawl / figures["one_s"]
        print(f"(3) {args.crawls} small crawls at once: {figures['batch_s']:.1f} s {said}")
        print(f"    per crawl {per_crawl:.2f} s: {figures['per_crawl_vs_one']:.3f}x one crawl's")
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(figures, f, indent=2)
        print(f"results: {out}/results.json")
    finally:
        abxd.terminate()
        abxd.wait(timeout=60)


if __name__ == "__main__":
    main()
