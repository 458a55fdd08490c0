#!/usr/bin/env bash
# The package under a real systemd, along the operator's path: a Debian 12 booted with
# systemd-nspawn (a fresh copy of a root made once by debootstrap and kept under the CI cache),
# the .deb built from this tree installed with dpkg -i, then, each an assertion that prints the
# unit's journal when it fails:
#   - the unit is active through READY=1 (Type=notify); `systemctl reload` rereads the config;
#     `journalctl -u abxd -p err` shows errors and nothing else;
#   - abxctl works for root and for a member of group abxd, and is refused to anyone else;
#   - a crawl of a local page with the bundled plugins (Chromium among them) runs under the
#     unit's sandbox, every hook and browser in the service's cgroup, as a crawl user
#     (abxd-crawl1 … abxd-crawl8, a user of its own per crawl);
#   - a hook that tries every way out of its user (cgroups, BPF, the database, the socket,
#     the web token, the config, its worker's signals, a sealed crawl's directory, the directory
#     and the hook of another crawl that runs at once) is refused each time and still cannot
#     reach loopback or the metadata address; with hooks as abxd, the daemon's own user, the
#     same hook gets out (so the check can fail);
#   - ArchiveBox 0.9.73's plugins (abx-plugins 1.13.162, its virtualenv bound in from the CI
#     cache), given to the service by the drop-in of docs/service.md, archive a page;
#   - ArchiveBox's own chrome plugin archives a page under the service (screenshot, dom and
#     pdf by Chromium, every hook
#     and browser in the service's cgroup, as a crawl user), its binaries the ones `abx-dl
#     install` (as abxd-hook) put in the library the crawl users share, found by the service
#     with no network to install them; and the export of that crawl into a collection of another
#     user's (the drop-in that makes the daemon root, its hooks still crawl users) is imported
#     by that user's ArchiveBox;
#   - `systemctl stop` mid-crawl ends the whole tree before TimeoutStopSec (nothing left for
#     systemd's SIGKILL); `systemctl start` resumes the crawl and seals it;
#   - the watchdog: a daemon stopped with SIGSTOP is restarted by systemd and seals its crawl;
#   - an upgrade mid-crawl (dpkg -i of a higher version: maintainer scripts and
#     restart-after-upgrade): no snapshot lost, no finished hook run twice;
#   - every process dying at once (the container's init killed with SIGKILL mid-crawl), then a
#     boot: the service starts by itself and seals the crawl, no finished hook run twice;
#   - apt-get remove keeps /var/lib/abxd; purge removes it and the users.
#   - the .rpm in the same container: its scriptlets make the user and enable the unit, which
#     starts; rpm -e disables it and keeps /var/lib/abxd.
# Usage: packaging/check-service.sh DEB HIGHER_DEB RPM (built by packaging/check-packages.sh).
# Needs root, debootstrap and systemd-nspawn (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

deb=$(realpath "$1")
higher_deb=$(realpath "$2")
rpm_package=$(realpath "$3")
cache=/var/cache/abxd-ci
base="$cache/debian12-root"
# ArchiveBox 0.9.73 as .ci/run installs it (its Python beside it), bound into the container.
ab_venv="$cache/archivebox-0.9.73"
# The users the packages make for crawls' hooks (group abxd-crawl), as pgrep -u takes them.
crawl_users=$(printf 'abxd-crawl%s,' 1 2 3 4 5 6 7 8)
crawl_users=${crawl_users%,}
ab_python=$(dirname "$(dirname "$(readlink -f "$ab_venv/bin/python")")")
# Node.js 22 and npm as .ci/run installs them, bound in at /opt (Debian 12's node is 18, too old
# for the chrome plugin; an operator installs a newer one, e.g. from NodeSource).
node_prefix=$(dirname "$(dirname "${ABXD_NODE_BIN:-/nonexistent/.bin}")")
npm_prefix=$(dirname "$(dirname "${ABXD_NPM_BIN:-/nonexistent/.bin}")")
machine="abxd-ci-$$"
root=""
nspawn=""

say() { printf '\n== check-service: %s\n' "$*"; }
fail() {
    printf 'check-service: FAILED: %s\n' "$*" >&2
    if declare -F leader >/dev/null && [ -n "$(leader)" ]; then
        echo "--- journalctl -u abxd (in the container):" >&2
        in_ct journalctl -u abxd --no-pager -n 200 >&2 || true
    fi
    exit 1
}

[ "$(id -u)" = 0 ] || fail "must run as root"
for tool in debootstrap systemd-nspawn nsenter python3; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (.ci/run installs it)"
done
[ -x "$ab_venv/bin/archivebox" ] || fail "no ArchiveBox at $ab_venv (.ci/run installs it)"
[ -x "$node_prefix/node_modules/.bin/node" ] || fail "no node 22 in ABXD_NODE_BIN (.ci/run installs it)"
[ -x "$npm_prefix/node_modules/.bin/npm" ] || fail "no npm in ABXD_NPM_BIN (.ci/run installs it)"

# shellcheck source=packaging/lib/host-mirror.sh
. packaging/lib/host-mirror.sh
mirror=$(host_mirror bookworm)
security_mirror=$(host_mirror bookworm-security)

# The root, made once: Debian 12 with systemd; then what the package, its plugins and this
# check use, installed again whenever that list changes.
# (Debian's chromium comes with its security updates: the chrome plugin wants a recent one.)
# (poppler-utils: the pdf plugin's pdftoppm, which its abx-dl install would apt-get: an operator
# installs it as root, docs/service.md.)
packages="chromium wget fonts-liberation rpm poppler-utils (with bookworm-security)"
if [ ! -x "$base/bin/systemctl" ]; then
    [ -n "$mirror" ] || fail "this host's apt sources name no mirror of Debian 12 (bookworm)"
    say "making a Debian 12 root in $base (once), from $mirror"
    rm -rf "$base.partial"
    debootstrap --variant=minbase \
        --include=systemd,systemd-sysv,dbus,adduser,python3,ca-certificates,procps,libpam-systemd \
        bookworm "$base.partial" "$mirror"
    mv "$base.partial" "$base"
fi
if [ "$(cat "$base/.abxd-ci-packages" 2>/dev/null)" != "$packages" ]; then
    say "installing $packages in $base"
    # (The security updates where this host has a mirror of them.)
    if [ -n "$security_mirror" ] && ! grep -q bookworm-security "$base/etc/apt/sources.list"; then
        echo "deb $security_mirror bookworm-security main" >>"$base/etc/apt/sources.list"
    fi
    chroot "$base" /bin/sh -c "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends ${packages%% (*} >/dev/null \
        && DEBIAN_FRONTEND=noninteractive apt-get upgrade -y -q >/dev/null && apt-get clean" \
        || fail "cannot install $packages in $base"
    echo "$packages" >"$base/.abxd-ci-packages"
fi

cleanup() {
    stop_container
    # (What the container's last processes were writing may land a moment after they die.)
    [ -z "$root" ] || rm -rf "$root" "$root".* 2>/dev/null || { sleep 1; rm -rf "$root" "$root".* || true; }
    return 0
}
trap cleanup EXIT

# The container's init (its PID 1), or nothing while it is not running.
leader() {
    [ -n "$nspawn" ] && kill -0 "$nspawn" 2>/dev/null || return 0
    ps -o pid= --ppid "$nspawn" | head -1 | tr -d ' '
}
in_ct() { nsenter --target "$(leader)" --all -- "$@"; }
boot() {
    mountpoint -q /run/systemd/nspawn \
        || { mkdir -p /run/systemd/nspawn && mount -t tmpfs tmpfs /run/systemd/nspawn; }
    setsid systemd-nspawn --quiet --directory="$root" --boot --register=no --keep-unit \
        --machine="$machine" --console=pipe --private-network --capability=CAP_BPF \
        --system-call-filter=bpf --bind-ro="$ab_venv" \
        --bind-ro="$ab_python" --bind-ro="$node_prefix:/opt/node22" --bind-ro="$npm_prefix:/opt/npm10" \
        </dev/null >"$root.console" 2>&1 &
    nspawn=$!
    for _ in $(seq 100); do
        [ -n "$(leader)" ] && in_ct true 2>/dev/null && break
        sleep 0.2
    done
    [ -n "$(leader)" ] || fail "the container did not start: $(cat "$root.console")"
    # (Until its bus is up, systemctl says "offline" — or nothing, while the first process of
    # the container is not systemd yet: seen on the first boot of a root just made.)
    local state=offline
    for _ in $(seq 120); do
        state=$(in_ct timeout 120 systemctl is-system-running --wait 2>/dev/null || true)
        case "$state" in offline | "") ;; *) break ;; esac
        sleep 0.5
    done
    [ "$state" = running ] || fail "the container's system is $state: $(in_ct systemctl --failed --no-pager)"
}
stop_container() {
    [ -n "$nspawn" ] || return 0
    # (Its init killed, the kernel kills every process of the container; nspawn then exits.)
    local init
    init=$(leader)
    [ -z "$init" ] || kill -KILL "$init" 2>/dev/null || true
    wait "$nspawn" 2>/dev/null || true
    nspawn=""
}
# Waits up to $1 seconds for the shell condition $2 (run on the host).
wait_for() {
    local seconds=$1 condition=$2
    for _ in $(seq $((seconds * 5))); do
        eval "$condition" && return 0
        sleep 0.2
    done
    return 1
}
ctl() { in_ct abxctl "$@"; }
# Whether stdin, read to its end, has a line matching $1 (`| grep -q` would end the writer
# with SIGPIPE on a match, which pipefail takes for a failure).
contains() {
    local text
    text=$(cat)
    grep -q -- "$1" <<<"$text"
}
# While Chromium runs: it and every hook are in abxd.service's cgroup (systemd-cgls shows it),
# and none runs as root.
assert_in_the_unit() {
    local cgls outside
    cgls=$(in_ct systemd-cgls --no-pager -u abxd.service)
    grep -q chromium <<<"$cgls" || fail "systemd-cgls shows no Chromium in abxd.service: $cgls"
    # (Each process read once, by its own /proc entry: they come and go.)
    outside=$(in_ct sh -c 'for pid in $(pgrep -f "[c]hromium|[o]n_Snapshot|[o]n_Crawl"); do
        unified=$(grep "^0::" /proc/$pid/cgroup 2>/dev/null) || continue
        case "$unified" in *system.slice/abxd.service/*) ;; *) echo "$pid $unified" ;; esac
    done')
    [ -z "$outside" ] || fail "processes outside abxd.service's cgroup: $outside"
    [ -z "$(in_ct pgrep -f '[c]hromium|[o]n_Snapshot|[o]n_Crawl' -U root || true)" ] \
        || fail "a hook runs as root"
    [ -z "$(in_ct pgrep -f '[c]hromium|[o]n_Snapshot|[o]n_Crawl' -U abxd,abxd-hook || true)" ] \
        || fail "a hook runs as abxd, the daemon's own user, or as abxd-hook, the installer"
    echo "hooks and Chromium run as crawl users, inside abxd.service"
}
# Queues a crawl (abxctl add ARGS…); prints its id.
add_crawl() {
    ctl add --json "$@" | python3 -c 'import json, sys; print(json.load(sys.stdin)["crawl_id"])'
}
# Waits until a snapshot hook of a crawl user runs: a crawl under way.
wait_for_a_hook() {
    wait_for 60 'in_ct pgrep -u "$crawl_users" -f on_Snapshot >/dev/null' || fail "the crawl did not start"
}
# Crawl $1 has at least $2 results succeeded and none failed; $3 says whose.
assert_succeeded() {
    ctl show --json "$1" | python3 -c '
import json, sys
results = json.load(sys.stdin)["crawl"]["results"]
assert results["succeeded"] >= int(sys.argv[1]) and results["failed"] == 0, results
print(sys.argv[2] + ":", results)' "$2" "$3" || fail "$3 failed: $(ctl show "$1")"
}
# The crawl's JSON (abxctl show --json), read by python3 on the host.
crawl_is() { # ID STATUS
    ctl show --json "$1" 2>/dev/null | python3 -c \
        'import json, sys; sys.exit(json.load(sys.stdin)["crawl"]["status"] != sys.argv[1])' "$2"
}
# Every snapshot of crawl $1 sealed with every result final, and no hook that ended by itself
# run again: at most one process row per result that exited by itself — with a code of its own,
# signalled by no one abxd knows of. (A hook killed by the stop itself — a signal, or a shell's
# report of SIGTERM, SIGINT or SIGKILL, 128 + n — was interrupted, not finished: it runs again,
# as the take-over in src/hooks/unrecorded.rs decides.)
assert_whole() { # ID TOTAL
    ctl show --json "$1" >"$root.show.json"
    ctl ps --all --json >"$root.ps.json"
    python3 - "$root.show.json" "$root.ps.json" "$2" "$1" <<'EOF' || fail "crawl $1 is not whole"
import collections, json, sys
show, ps, total = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
crawl = int(sys.argv[4])
snapshots = show["snapshots"]
assert len(snapshots) == total, f"{len(snapshots)} snapshots, not {total}"
assert all(s["status"] == "sealed" for s in snapshots), [s["status"] for s in snapshots]
exited = collections.Counter(
    p["result_id"] for p in ps["processes"]
    if p["kind"] == "hook" and p["crawl_id"] == crawl and p["result_id"] is not None
    and p["end_reason"] == "exited" and p["sigterm_at"] is None and p["sigkill_at"] is None
    and p["exit_signal"] is None and p["exit_code"] not in (128 + 2, 128 + 9, 128 + 15))
twice = {r: n for r, n in exited.items() if n > 1}
runs = [{k: p[k] for k in ("id", "result_id", "argv", "end_reason", "exit_code", "exit_signal")}
        for p in ps["processes"] if p["result_id"] in twice]
assert not twice, f"results whose hook ended by itself more than once: {twice}; their runs: {runs}"
print(f"{total} snapshots sealed; {len(exited)} hook runs ended by themselves, none twice")
EOF
}

say "booting a fresh copy of the root"
root=$(mktemp -d /var/tmp/abxd-service.XXXXXX)
cp -a "$base/." "$root/"
mkdir -p "$root/root/abxd-ci"
cp "$deb" "$root/root/abxd-ci/abxd.deb"
cp "$higher_deb" "$root/root/abxd-ci/abxd-higher.deb"
cp "$rpm_package" "$root/root/abxd-ci/abxd.rpm"
# A local site, served in the container: a page linking to six pages that each answer after
# a second (so a crawl lasts long enough to be interrupted).
cat >"$root/root/abxd-ci/site.py" <<'EOF'
import http.server, time
class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/long"):
            # (Long enough for the dom plugin, which keeps no page shorter than a few hundred bytes.)
            text = "<p>A paragraph of a page long enough to be archived whole.</p>" * 40
            body = f"<html><head><title>A long page</title></head><body>{text}</body></html>"
        elif self.path.startswith("/p"):
            time.sleep(1)
            body = f"<html><head><title>Page {self.path}</title></head><body>{self.path}</body></html>"
        else:
            links = "".join(f'<a href="/p{n}">page {n}</a> ' for n in range(6))
            body = f"<html><head><title>The index</title></head><body>{links}</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body.encode())
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", 8080), Page).serve_forever()
EOF
cat >"$root/etc/systemd/system/abxd-ci-site.service" <<'EOF'
[Unit]
Description=a local site for abxd's service check
[Service]
ExecStart=/usr/bin/python3 /root/abxd-ci/site.py
[Install]
WantedBy=multi-user.target
EOF
ln -s /etc/systemd/system/abxd-ci-site.service \
    "$root/etc/systemd/system/multi-user.target.wants/abxd-ci-site.service"
boot

say "dpkg -i: the unit is active through READY=1"
in_ct dpkg -i /root/abxd-ci/abxd.deb >/dev/null || fail "dpkg -i failed"
wait_for 30 '[ "$(in_ct systemctl is-active abxd)" = active ]' || fail "abxd is not active"
[ "$(in_ct systemctl show abxd -p Type --value)" = notify ] || fail "the unit is not Type=notify"
status=$(in_ct systemctl show abxd -p StatusText --value)
[ -n "$status" ] || fail "no STATUS= from abxd"
echo "active; its status: $status"

say "systemctl reload rereads the config"
in_ct sed -i 's/^max_snapshot_workers = 2$/max_snapshot_workers = 3/' /etc/abxd/supervisor.toml
in_ct systemctl reload abxd
wait_for 20 'in_ct journalctl -u abxd --no-pager -o cat | contains "reload: .*max_snapshot_workers"' \
    || fail "the reload did not take max_snapshot_workers"
in_ct sed -i 's/^max_snapshot_workers = 3$/max_snapshot_workers = 2/' /etc/abxd/supervisor.toml
in_ct systemctl reload abxd
echo "reloaded: $(in_ct journalctl -u abxd --no-pager -o cat | grep 'reload: ' | tail -1)"

say "the journal keeps each line's priority: -p err shows the errors alone"
in_ct cp /etc/abxd/supervisor.toml /root/abxd-ci/supervisor.toml
echo "[limits" | in_ct tee -a /etc/abxd/supervisor.toml >/dev/null
in_ct systemctl reload abxd
wait_for 20 'in_ct journalctl -u abxd -p err --no-pager -o cat | contains "reload refused"' \
    || fail "the refused reload is not among the errors"
if in_ct journalctl -u abxd -p err --no-pager -o cat | grep -E "reload: |migrated"; then
    fail "lines below err priority are among the errors"
fi
in_ct cp /root/abxd-ci/supervisor.toml /etc/abxd/supervisor.toml
in_ct systemctl reload abxd
[ "$(in_ct systemctl is-active abxd)" = active ] || fail "abxd is not active after a bad reload"

say "abxctl: root and group abxd may, anyone else may not"
in_ct useradd --create-home --groups abxd alice
in_ct useradd --create-home bob
ctl status >/dev/null || fail "abxctl status as root"
in_ct runuser -u alice -- abxctl status >/dev/null || fail "abxctl status as a member of abxd"
if said=$(in_ct runuser -u bob -- abxctl status 2>&1); then
    fail "abxctl status as bob (not in group abxd) succeeded: $said"
fi
grep -q "members of group abxd" <<<"$said" || fail "bob is not told who may: $said"
echo "bob is refused: $said"

say "a crawl under the sandbox: every hook and Chromium in the service's cgroup, as a crawl user"
per_crawl="run as a user of their own per crawl, from group abxd-crawl"
ctl status | contains "hooks:    $per_crawl" || fail "hooks do not run as crawl users: $(ctl status)"
in_ct abxd check-config --config /etc/abxd/supervisor.toml \
    | contains "hooks run as a user of their own per crawl, from group abxd-crawl" \
    || fail "check-config does not say hooks run as crawl users"
crawl=$(add_crawl --depth 1 http://127.0.0.1:8080/)
wait_for 60 'in_ct pgrep -u "$crawl_users" chromium >/dev/null' || fail "no Chromium of a crawl user ran"
assert_in_the_unit
ctl status | contains "egress:   restricted" || fail "egress is not in force under the service: $(ctl status)"
# (The unit's CAP_BPF and CAP_NET_ADMIN are the workers': a hook could take the egress programs off.)
held=$(in_ct sh -c 'for pid in $(pgrep -f "[o]n_Snapshot|[o]n_Crawl"); do
    grep -E "^Cap(Prm|Eff|Amb):" /proc/$pid/status 2>/dev/null | grep -v "0000000000000000" | sed "s/^/$pid /"
done')
[ -z "$held" ] || fail "hooks hold capabilities: $held"
echo "egress is restricted, and hooks hold no capability"

say "systemctl stop mid-crawl: the whole tree ends before TimeoutStopSec; start resumes"
crawl_is "$crawl" sealed && fail "the crawl ended before it could be interrupted"
in_ct systemctl stop abxd
[ -z "$(in_ct pgrep -u "abxd,abxd-hook,$crawl_users" || true)" ] || fail "processes of abxd outlived the stop"
if in_ct journalctl -u abxd --no-pager | grep -E "Killing process|timed out|SIGKILL"; then
    fail "systemd had to kill what abxd left"
fi
in_ct systemctl start abxd
wait_for 300 'crawl_is "$crawl" sealed' || fail "crawl $crawl did not seal after the restart"
assert_whole "$crawl" 7

say "a hook that tries every way out: refused as a crawl user; out, as abxd (the daemon's own user)"
# Its one hook (tests/fixtures/escape) tries each escape, then whether loopback and the metadata
# address are reachable after them, and writes what happened to escape.json — while a hook of
# another crawl is held running (plugin held, released by a file), whose pid it tries to signal
# and whose crawl it tries to write into. The crawls' seed is a public address (it is never
# fetched: the container has no network), so their egress policy allows no loopback. Before it,
# the web view is turned on, so that there is a token to steal.
mkdir -p "$root/opt/abxd-ci/escape/held" "$root/etc/systemd/system/abxd.service.d"
cp -r tests/fixtures/escape/escape "$root/opt/abxd-ci/escape/"
cat >"$root/opt/abxd-ci/escape/held/on_Snapshot__10_held.sh" <<'HOOK'
#!/bin/sh
id -u > uid; echo $$ > pid
while [ ! -e /opt/abxd-ci/release ]; do sleep 0.1; done
echo '{"type": "ArchiveResult", "status": "succeeded"}'
HOOK
chmod -R a+rX "$root/opt/abxd-ci/escape"
chmod a+x "$root/opt/abxd-ci/escape/escape/on_Snapshot__10_escape.py" \
    "$root/opt/abxd-ci/escape/held/on_Snapshot__10_held.sh"
cat >"$root/etc/systemd/system/abxd.service.d/escape.conf" <<DROPIN
[Service]
Environment=ABX_PLUGINS_DIR=/opt/abxd-ci/escape
Environment=ESCAPE_SOCKET=/run/abxd/abxd.sock
Environment=ESCAPE_VICTIM=/opt/abxd-ci/victim
DROPIN
in_ct sed -i 's|^# listen = "127.0.0.1:8631"|listen = "127.0.0.1:8631"|' /etc/abxd/supervisor.toml
# What the hook found, crawl $1: its escape.json (read as root, in the container).
escape_report() {
    in_ct sh -c "cat /var/lib/abxd/crawls/$1/snapshots/*/escape/escape.json"
}
# What the held hook of crawl $1 wrote: $2 (uid or pid).
held_said() {
    in_ct sh -c "cat /var/lib/abxd/crawls/$1/snapshots/*/held/$2" 2>/dev/null
}
# USER PER_CRAWL (yes or no): runs the escape hook with hooks as USER — with yes, each crawl as
# a member of abxd-crawl of its own — while a held crawl runs; prints the escape crawl's id and
# the held hook's uid.
escape_crawl() {
    in_ct sed -i "s|^user = \".*\"|user = \"$1\"|" /etc/abxd/supervisor.toml
    if [ "$2" = yes ]; then
        in_ct sed -i 's|^# crawl_users = |crawl_users = |' /etc/abxd/supervisor.toml
    else
        in_ct sed -i 's|^crawl_users = |# crawl_users = |' /etc/abxd/supervisor.toml
    fi
    in_ct systemctl daemon-reload
    in_ct systemctl restart abxd
    wait_for 30 '[ "$(in_ct systemctl is-active abxd)" = active ]' || fail "abxd is not active"
    rm -f "$root/opt/abxd-ci/release"
    local held crawl
    held=$(add_crawl --plugins held http://93.184.216.34/)
    # (Each file whole: the shell makes it empty, then writes it.)
    wait_for 60 '[ -n "$(held_said "$held" pid)" ] && [ -n "$(held_said "$held" uid)" ]' \
        || fail "the held hook did not start: $(ctl show "$held")"
    held_said "$held" pid >"$root/opt/abxd-ci/victim"
    chmod a+r "$root/opt/abxd-ci/victim"
    crawl=$(add_crawl --plugins escape http://93.184.216.34/)
    wait_for 120 'crawl_is "$crawl" sealed' || fail "the escape crawl did not seal: $(ctl show "$crawl")"
    touch "$root/opt/abxd-ci/release"
    wait_for 60 'crawl_is "$held" sealed' || fail "the held crawl did not seal: $(ctl show "$held")"
    echo "$crawl $(held_said "$held" uid)"
}
read -r crawl held_uid < <(escape_crawl abxd-hook yes)
report=$(escape_report "$crawl") || fail "the escape hook wrote no report: $(ctl show "$crawl")"
echo "as a crawl user (the held crawl's: uid $held_uid): $report"
python3 -c '
import json, sys
report, held_uid = json.loads(sys.argv[1]), int(sys.argv[2])
crawl_uids = {int(uid) for uid in sys.argv[3:]}
got_out = {k: v for k, v in report.items() if (v == "done" or (k == "cgroup_moves" and v))}
assert not got_out, f"a hook as a crawl user got out: {got_out}"
assert report["other_crawl_write"] != "ENOENT", "no other crawl to write into"
assert report["signal_other_crawl"] == "EPERM", report["signal_other_crawl"]
assert report["uid"] in crawl_uids and held_uid in crawl_uids, (report["uid"], held_uid)
assert report["uid"] != held_uid, "two crawls at once ran their hooks as one user"
' "$report" "$held_uid" $(for n in 1 2 3 4 5 6 7 8; do in_ct id -u "abxd-crawl$n"; done) \
    || fail "the crawl users are not apart from the daemon and from each other"
read -r crawl held_uid < <(escape_crawl abxd no)
report=$(escape_report "$crawl") || fail "the escape hook wrote no report: $(ctl show "$crawl")"
echo "as abxd: $report"
python3 -c '
import json, sys
report = json.loads(sys.argv[1])
for what in ("cgroup_daemon", "database_write", "control_socket", "web_token",
             "signal_crawl_worker", "other_crawl_write", "signal_other_crawl", "loopback_after"):
    assert report[what] == "done", f"as abxd, {what} was refused: {report}"
' "$report" || fail "the check cannot fail: a hook as abxd did not get out"
in_ct sed -i 's|^user = ".*"|user = "abxd-hook"|' /etc/abxd/supervisor.toml
in_ct sed -i 's|^# crawl_users = |crawl_users = |' /etc/abxd/supervisor.toml
in_ct sed -i 's|^listen = "127.0.0.1:8631"|# listen = "127.0.0.1:8631"|' /etc/abxd/supervisor.toml
rm "$root/etc/systemd/system/abxd.service.d/escape.conf"
in_ct systemctl daemon-reload
in_ct systemctl restart abxd
echo "as crawl users every escape was refused, each crawl's apart; as abxd the same hook got out"

say "ArchiveBox's plugins, given to the service by the drop-in docs/service.md shows"
# (ArchiveBox 0.9.73's virtualenv from the CI cache, at the same path in the container.)
in_ct mkdir -p /etc/systemd/system/abxd.service.d
cat >"$root/etc/systemd/system/abxd.service.d/archivebox.conf" <<DROPIN
[Service]
Environment=PATH=$ab_venv/bin:/usr/local/bin:/usr/bin:/bin
Environment=CHROME_BINARY=/usr/bin/chromium
EnvironmentFile=-/etc/abxd/environment
DROPIN
in_ct systemctl daemon-reload
in_ct systemctl restart abxd
ctl plugins | contains "$ab_venv/lib/python3.*/site-packages/abx_plugins/plugins/wget" \
    || fail "the service does not run ArchiveBox's plugins: $(ctl plugins)"
crawl=$(add_crawl --plugins favicon,wget,hashes http://127.0.0.1:8080/)
wait_for 300 'crawl_is "$crawl" sealed' || fail "crawl $crawl did not seal"
assert_succeeded "$crawl" 3 "ArchiveBox's hooks under the service"
ab_crawl=$crawl

say "ArchiveBox's chrome plugin under the service as crawl users, its binaries from abx-dl install as abxd-hook"
# (This machine's npm registry lacks abxbus 2.5.74, the chrome plugin's pin at 1.13.162: a copy
# of the plugins lowers it to 2.5.56 — the override an ArchiveBox user here would write, named
# by ABX_PLUGINS_DIR as abx-dl reads it. tests/archivebox_pins.rs does the same.)
mkdir -p "$root/opt/abxd-ci"
cp -r "$(ls -d "$ab_venv"/lib/python3.*/site-packages/abx_plugins/plugins)" "$root/opt/abxd-ci/abx-plugins"
python3 - "$root/opt/abxd-ci/abx-plugins/chrome/config.json" <<'EOF'
import json, sys
manifest = json.load(open(sys.argv[1]))
abxbus = next(b for b in manifest["required_binaries"] if b["name"] == "abxbus")
abxbus["min_version"] = abxbus["overrides"]["pnpm"]["version"] = "2.5.56"
abxbus["overrides"]["pnpm"]["install_args"] = ["abxbus@2.5.56"]
json.dump(manifest, open(sys.argv[1], "w"), indent=2)
EOF
chrome_path="$ab_venv/bin:/opt/node22/node_modules/.bin:/opt/npm10/node_modules/.bin:/usr/local/bin:/usr/bin:/bin"
cat >"$root/etc/systemd/system/abxd.service.d/chrome.conf" <<DROPIN
[Service]
Environment=PATH=$chrome_path
Environment=ABX_PLUGINS_DIR=/opt/abxd-ci/abx-plugins
DROPIN
# What the operator runs once, as the service's user with the service's environment
# (docs/service.md). Here with the host's network and its CA bundle (the registry is reached
# through the host's proxy): the container's own network is private, so the service that
# crawls next can find these binaries but could not install them.
cp /etc/ssl/certs/ca-certificates.crt "$root/opt/abxd-ci/host-ca.crt"
chmod -R a+rX "$root/opt/abxd-ci"
nsenter --target "$(leader)" --mount --pid --uts --ipc -- runuser -u abxd-hook -g abxd-crawl -- \
    env HOME=/var/lib/abxd/home/abxd-hook ABXPKG_LIB_DIR=/var/lib/abxd/lib PATH="$chrome_path" \
    CHROME_BINARY=/usr/bin/chromium \
    ABX_PLUGINS_DIR=/opt/abxd-ci/abx-plugins NODE_EXTRA_CA_CERTS=/opt/abxd-ci/host-ca.crt \
    npm_config_cafile=/opt/abxd-ci/host-ca.crt \
    sh -c "umask 002; cd && abx-dl install chrome title screenshot dom pdf" >"$root.abx-dl-install" 2>&1 \
    || fail "abx-dl install as abxd-hook failed: $(tail -20 "$root.abx-dl-install")"
in_ct systemctl daemon-reload
in_ct systemctl restart abxd
ctl plugins | contains "/opt/abxd-ci/abx-plugins/chrome" \
    || fail "the service does not run ArchiveBox's chrome plugin: $(ctl plugins)"
crawl=$(add_crawl --plugins chrome,title,screenshot,dom,pdf http://127.0.0.1:8080/long)
# (The browser the chrome plugin launched — a provisioning probe of chromium --version is not.)
wait_for 120 'in_ct pgrep -u "$crawl_users" -f -- "chromium.*--remote-debugging-port" >/dev/null' \
    || fail "no Chromium of a crawl user ran: $(ctl show "$crawl")"
assert_in_the_unit
wait_for 300 'crawl_is "$crawl" sealed' || fail "crawl $crawl did not seal: $(ctl show "$crawl")"
# (Its three crawl hooks — zombies, launch, wait — and tab, navigate, screenshot, title, dom,
# pdf.)
assert_succeeded "$crawl" 9 "ArchiveBox's chrome plugin under the service"
ctl binaries --json | python3 -c '
import json, sys
found = {b["name"]: b for b in json.load(sys.stdin)["binaries"] if b["plugin"] == "chrome"}
library = "/var/lib/abxd/lib/"
for name in ("abxbus", "browsers"):
    assert found[name]["found"] and found[name]["abspath"].startswith(library), found.get(name)
print("abxbus and browsers found in", library)' || fail "the chrome plugin's binaries are not the crawl users' library's"
rm "$root/etc/systemd/system/abxd.service.d/chrome.conf"

say "an export into a collection of another user's, from the service (docs/service.md)"
in_ct useradd --create-home carol
in_ct install -d -o carol -g carol /srv/archivebox
as_carol() { in_ct runuser -u carol -- env HOME=/srv/archivebox sh -c "cd /srv/archivebox && $*"; }
as_carol "$ab_venv/bin/archivebox init >/dev/null 2>&1" || fail "archivebox init failed"
as_carol "$ab_venv/bin/archivebox config --set SEARCH_BACKEND_ENGINE=ripgrep >/dev/null"
as_carol "$ab_venv/bin/archivebox config --set SEARCH_BACKEND_SONIC_ENABLED=False >/dev/null"
cat >"$root/etc/systemd/system/abxd.service.d/export.conf" <<DROPIN
[Service]
User=root
Group=root
ReadWritePaths=/srv/archivebox
DROPIN
in_ct sed -i "s|^\[hooks\]|[archivebox]\ncommand = \"$ab_venv/bin/archivebox\"\n\n[hooks]|" \
    /etc/abxd/supervisor.toml
in_ct systemctl daemon-reload
in_ct systemctl restart abxd
[ "$(in_ct ps -o user= -p "$(in_ct systemctl show abxd -p MainPID --value)")" = root ] \
    || fail "the drop-in did not make abxd root"
timeout 600 nsenter --target "$(leader)" --all -- \
    abxctl export --archivebox /srv/archivebox --wait "$ab_crawl" \
    || fail "the export failed: $(ctl show "$ab_crawl")"
listed=$(as_carol "$ab_venv/bin/archivebox snapshot list")
grep -q '"status": "sealed"' <<<"$listed" || fail "ArchiveBox lists no sealed snapshot: $listed"
[ -z "$(in_ct find /srv/archivebox -not -user carol)" ] \
    || fail "files of the collection's are not carol's: $(in_ct find /srv/archivebox -not -user carol | head)"
echo "carol's ArchiveBox lists abxd's snapshot, every file hers"
# A root daemon still crawls, its hooks as crawl users.
crawl=$(add_crawl --plugins favicon,wget,hashes http://127.0.0.1:8080/p1)
wait_for 300 'crawl_is "$crawl" sealed' || fail "crawl $crawl of the root daemon did not seal"
assert_succeeded "$crawl" 3 "the root daemon's hooks (the hook user's library: \
$(in_ct ls -la /var/lib/abxd/lib 2>&1))"
[ -z "$(ctl ps --all --json | python3 -c '
import json, sys
print(*[p["argv"] for p in json.load(sys.stdin)["processes"]
        if p["kind"] == "hook" and p["crawl_id"] is not None and p["uid"] == 0])')" ] \
    || fail "a hook of the root daemon ran as root"
rm "$root/etc/systemd/system/abxd.service.d/export.conf"
rm "$root/etc/systemd/system/abxd.service.d/archivebox.conf"
in_ct systemctl daemon-reload
in_ct systemctl restart abxd

say "the watchdog restarts a stopped daemon, and the crawl seals"
crawl=$(add_crawl --depth 1 http://127.0.0.1:8080/?watchdog)
wait_for_a_hook
restarts=$(in_ct systemctl show abxd -p NRestarts --value)
in_ct kill -STOP "$(in_ct systemctl show abxd -p MainPID --value)"
wait_for 90 '[ "$(in_ct systemctl show abxd -p NRestarts --value)" -gt "$restarts" ]' \
    || fail "systemd did not restart the stopped daemon"
in_ct journalctl -u abxd --no-pager | contains "Watchdog timeout" || fail "no watchdog timeout"
wait_for 300 'crawl_is "$crawl" sealed' || fail "crawl $crawl did not seal after the watchdog"
assert_whole "$crawl" 7

say "an upgrade mid-crawl from hooks as abxd (the earlier packages' config): nothing lost, nothing run twice"
# The crawl starts with its hooks as abxd, as the packages before ran them; the upgrade restarts
# the daemon mid-crawl; then the config the packages now ship (hooks as crawl users) takes over
# the same crawl, whose directories and files hooks as abxd made.
in_ct sed -i 's|^user = ".*"|user = "abxd"|' /etc/abxd/supervisor.toml
in_ct sed -i 's|^crawl_users = |# crawl_users = |' /etc/abxd/supervisor.toml
in_ct systemctl restart abxd
crawl=$(add_crawl --depth 1 http://127.0.0.1:8080/?upgrade)
wait_for 60 'in_ct pgrep -u abxd -f on_Snapshot >/dev/null' || fail "the crawl did not start as abxd"
before=$(in_ct systemctl show abxd -p MainPID --value)
in_ct dpkg -i /root/abxd-ci/abxd-higher.deb >/dev/null || fail "the upgrade failed"
wait_for 30 '[ "$(in_ct systemctl is-active abxd)" = active ]' || fail "abxd is not active after the upgrade"
[ "$(in_ct systemctl show abxd -p MainPID --value)" != "$before" ] || fail "the upgrade did not restart abxd"
in_ct getent passwd abxd-crawl1 >/dev/null || fail "the upgrade made no user abxd-crawl1"
in_ct sed -i 's|^user = ".*"|user = "abxd-hook"|' /etc/abxd/supervisor.toml
in_ct sed -i 's|^# crawl_users = |crawl_users = |' /etc/abxd/supervisor.toml
in_ct systemctl restart abxd
wait_for 300 'crawl_is "$crawl" sealed' || fail "crawl $crawl did not seal after the upgrade: $(ctl show "$crawl")"
assert_whole "$crawl" 7
if ctl show "$crawl" | grep -i "permission denied"; then
    fail "hooks as a crawl user could not use what hooks as abxd left"
fi

say "every process dies at once (the container's init SIGKILLed), then a boot"
crawl=$(add_crawl --depth 1 http://127.0.0.1:8080/?power)
wait_for_a_hook
stop_container
boot
wait_for 30 '[ "$(in_ct systemctl is-active abxd)" = active ]' || fail "abxd did not start at boot"
wait_for 300 'crawl_is "$crawl" sealed' || fail "crawl $crawl did not seal after the power cut"
assert_whole "$crawl" 7

say "apt-get remove keeps /var/lib/abxd; purge removes it and the users"
in_ct apt-get remove -y -q abxd >/dev/null
in_ct test -d /var/lib/abxd || fail "remove deleted /var/lib/abxd"
in_ct apt-get purge -y -q abxd >/dev/null
in_ct test ! -e /var/lib/abxd || fail "purge left /var/lib/abxd"
if in_ct getent passwd abxd >/dev/null; then fail "purge left the user abxd"; fi
for user in abxd-hook abxd-crawl1 abxd-crawl8; do
    if in_ct getent passwd "$user" >/dev/null; then fail "purge left the user $user"; fi
done

say "the .rpm: its scriptlets and unit under the same systemd"
# (rpm's database here knows none of Debian's packages: their dependencies are not checked.)
in_ct rpm -i --nodeps /root/abxd-ci/abxd.rpm || fail "rpm -i failed"
in_ct getent passwd abxd >/dev/null || fail "the .rpm's pre-install script made no user abxd"
in_ct getent passwd abxd-hook >/dev/null || fail "the .rpm's pre-install script made no user abxd-hook"
in_ct id -nG abxd | grep -qw abxd-crawl8 || fail "the .rpm's pre-install script did not put abxd in group abxd-crawl8"
[ "$(in_ct systemctl is-enabled abxd)" = enabled ] || fail "the .rpm did not enable abxd.service"
in_ct systemctl start abxd
wait_for 30 '[ "$(in_ct systemctl is-active abxd)" = active ]' || fail "the .rpm's abxd is not active"
ctl status >/dev/null || fail "abxctl status with the .rpm's abxd"
in_ct rpm -e abxd || fail "rpm -e failed"
[ "$(in_ct systemctl is-active abxd || true)" != active ] || fail "rpm -e left abxd running"
in_ct test -d /var/lib/abxd || fail "rpm -e deleted /var/lib/abxd"

say "passed"
