#!/usr/bin/env python3
"""ArchiveBox 0.9.73 queuing a bookmarks file: benchmark 12's other side (benches/supervisor/
library.rs runs this beside abxd's `abxctl add --from` of the same file, for a ratio in one run).

    benches/library_archivebox.py --file BOOKMARKS --links N [--out DIR]

As an ArchiveBox user imports one: a new collection (`archivebox init`, its search backend set
to ripgrep — sonic cannot be installed here — and its TIMEOUT to the wait's, as a user importing
a large library must: at the default 60 s ArchiveBox's parse of 100 000 links is cut off with
nothing queued), then `archivebox add --parser netscape --plugins
parse_netscape_urls --depth=0 < BOOKMARKS`, timed from its start until the collection's index
holds N snapshots (ArchiveBox's runner parses the crawl's text into its depth-0 snapshots
after it claims the crawl: its `--index-only` would record the text and queue nothing) — or,
where it stops queuing to archive what it queued (its count unchanged for `--stall` seconds,
120 by default: at 100 000 links it stopped at 47 383), until its last snapshot queued. Then the
add is stopped (SIGTERM, as Ctrl-C; what is left of the user's processes after 60 s is killed,
by pid, after checking each is still the user's).

Runs as root: ArchiveBox runs as the unprivileged user `abxbench` (made when missing), as it
must. Prints one JSON line: {"queued_s", "peak_rss_mib", "parser_s", "snapshots"} (how many
it had queued by `queued_s`: N, or fewer where it stopped queuing); the peak is the sum of
the resident memory of every process of the user (all ArchiveBox's: the user is the
benchmarks' own, and they run one at a time), and `parser_s` how long its parser hook
(abx-plugins' `parse_netscape_urls`, not abxd's bundled one) was seen running, both sampled
every 100 ms.
"""

import argparse
import json
import os
import pwd
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from archivebox_user import ARCHIVEBOX, USER, as_user, new_collection, prepare


def die(message):
    sys.exit(f"library_archivebox.py: {message}")


def uid_of(pid):
    """The real uid of `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def users_pids(uid):
    """Every process of `uid`: ArchiveBox's, the user being the benchmarks' own (its
    supervisord starts a session of its own, so the add's session would miss its workers)."""
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and uid_of(p) == uid]


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def snapshots(index):
    try:
        db = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=10)
        try:
            return db.execute("SELECT count(*) FROM core_snapshot").fetchone()[0]
        finally:
            db.close()
    except sqlite3.OperationalError:  # (its tables are made as it starts)
        return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", required=True)
    parser.add_argument("--links", type=int, required=True)
    parser.add_argument("--out")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--stall", type=float, default=120)
    args = parser.parse_args()
    prepare("library_archivebox.py")
    out = args.out or tempfile.mkdtemp(prefix="abxd-library-", dir="/var/tmp")
    os.chmod(out, 0o755)
    home = os.path.join(out, "archivebox")
    log = open(os.path.join(out, "archivebox.log"), "w")
    # (ArchiveBox's default TIMEOUT, 60 s, ends its own parse of a large library before it has
    # queued anything: 100 000 links need longer.)
    new_collection(home, [f"TIMEOUT={int(args.timeout)}"], log)
    index = os.path.join(home, "index.sqlite3")
    add = [ARCHIVEBOX, "add", "--parser", "netscape", "--plugins", "parse_netscape_urls",
           "--depth=0"]
    with open(args.file, "rb") as bookmarks:
        started = time.monotonic()
        process = subprocess.Popen(as_user(add, home), cwd=home, stdin=bookmarks, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    uid = pwd.getpwnam(USER).pw_uid
    peak, count, queued_s = 0, 0, None
    parser_seen = [None, None]  # (when its parser hook was first and last seen running)
    try:
        while time.monotonic() - started < args.timeout:
            pids = users_pids(uid)
            peak = max(peak, sum(rss_kib(p) for p in pids))
            if any("parse_netscape_urls.py" in cmdline(p) for p in pids):
                parser_seen[0] = parser_seen[0] or time.monotonic()
                parser_seen[1] = time.monotonic()
            now, was = time.monotonic(), count
            count = snapshots(index)
            if count > was:
                queued_s = now - started
            if count >= args.links:
                break
            # (ArchiveBox archives the snapshots it queued before it queues more: once its
            # count stands still that long, what it queued is what this measures.)
            if queued_s is not None and now - started - queued_s > args.stall:
                break
            if process.poll() is not None:
                break
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        for pid in users_pids(uid):
            if uid_of(pid) == uid:  # (still the user's: not a recycled pid)
                os.kill(pid, signal.SIGKILL)
        if process.poll() is None:
            process.wait()
    if queued_s is None:
        die(f"ArchiveBox's index held no snapshot when it "
            f"{'ended' if process.returncode is not None else 'timed out'}: see {log.name}")
    parser_s = parser_seen[1] - parser_seen[0] if parser_seen[0] else None
    print(json.dumps({"queued_s": round(queued_s, 2), "peak_rss_mib": round(peak / 1024, 1),
                      "parser_s": parser_s and round(parser_s, 2), "snapshots": count}))


if __name__ == "__main__":
    main()
