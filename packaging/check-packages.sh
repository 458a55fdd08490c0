#!/usr/bin/env bash
# Builds the .deb and the .rpm and checks them for real, as an operator would meet them:
# lintian; the .deb installed with dpkg (files, user, state dir, enabled unit, systemd-analyze
# verify); the installed abxd started as user abxd on the installed config, a crawl of a local
# page sealed, a clean stop; a purge that leaves the machine clean; the .rpm inspected and
# installed into a scratch root; every man page rendered without a warning.
# Needs root. .ci/run installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n== check-packages: %s\n' "$*"; }
fail() { printf 'check-packages: FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "must run as root: it installs and purges the package"
for tool in cargo-deb cargo-generate-rpm lintian rpm dpkg systemd-analyze man setpriv python3; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (.ci/run installs it)"
done
config=/etc/abxd/supervisor.toml
cleanup() {
    [ -n "${daemon:-}" ] && kill -KILL "$daemon" 2>/dev/null || true
    [ -n "${server:-}" ] && kill -KILL "$server" 2>/dev/null || true
    [ -n "${site:-}" ] && rm -rf "$site"
    [ -n "${scratch:-}" ] && rm -rf "$scratch"
    return 0
}
trap cleanup EXIT

say "every man page renders without a warning"
for page in man/*.[1578]; do
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
    [ -z "$out" ] || fail "$page: $out"
done

say "building both packages"
cargo build --release --locked
mkdir -p target/packaging/man
for page in man/*.[1578]; do gzip -9nc "$page" > "target/packaging/man/$(basename "$page").gz"; done
rm -rf target/packaging/*.deb target/packaging/higher
cargo deb --no-build --locked --output target/packaging/ >/dev/null
deb=$(ls target/packaging/abxd_*.deb)
# The same at a higher revision, for the upgrade of packaging/check-service.sh.
cargo deb --no-build --locked --deb-revision 2 --output target/packaging/higher/ >/dev/null
cargo generate-rpm --output target/packaging/ >/dev/null
rpm=$(ls target/packaging/abxd-*.rpm)
echo "$deb"
echo "$rpm"

say "lintian: no errors, no warnings"
lintian --fail-on error,warning --tag-display-limit 0 "$deb"

say "installing the .deb with dpkg"
dpkg --purge abxd >/dev/null 2>&1 || true
dpkg -i "$deb"
for file in /usr/bin/abxd /usr/bin/abxctl /usr/share/abxd/plugins/screenshot/on_Snapshot__50_screenshot.sh; do
    [ -x "$file" ] || fail "$file missing or not executable"
done
for file in "$config" /usr/share/man/man8/abxd.8.gz /usr/share/man/man1/abxctl.1.gz \
    /usr/share/man/man5/supervisor.toml.5.gz /usr/share/bash-completion/completions/abxctl \
    /usr/share/doc/abxd/copyright /usr/share/doc/abxd/changelog.Debian.gz \
    /usr/share/doc/abxd/docs/json.md; do
    [ -f "$file" ] || fail "$file missing"
done
unit=$(dpkg -L abxd | grep '/systemd/system/abxd.service$') || fail "no unit installed"
getent passwd abxd >/dev/null || fail "no abxd user"
getent passwd abxd-hook >/dev/null || fail "no abxd-hook user (its hooks')"
id -nG abxd | tr ' ' '\n' | grep -qx abxd-hook || fail "abxd is not in group abxd-hook"
id -nG abxd-hook | tr ' ' '\n' | grep -qx abxd && fail "abxd-hook is in group abxd"
for n in 1 2 3 4 5 6 7 8; do
    member=abxd-crawl$n
    getent passwd "$member" >/dev/null || fail "no $member user (a crawl's hooks')"
    id -nG "$member" | tr ' ' '\n' | grep -qx abxd-crawl || fail "$member is not in group abxd-crawl"
    id -nG "$member" | tr ' ' '\n' | grep -qxE 'abxd|abxd-hook' && fail "$member is in abxd's groups"
    id -nG abxd | tr ' ' '\n' | grep -qx "$member" || fail "abxd is not in group $member"
done
[ "$(stat -c %U:%a /var/lib/abxd)" = "abxd:750" ] || fail "/var/lib/abxd is not abxd's, 0750"
[ "$(stat -c %U:%G:%a /var/lib/abxd/lib)" = "abxd-hook:abxd-crawl:2775" ] \
    || fail "the crawl users' library is not abxd-hook:abxd-crawl, 2775"
[ -L /etc/systemd/system/multi-user.target.wants/abxd.service ] || fail "the unit is not enabled"
systemd-analyze verify "$unit"
/usr/bin/abxd --config "$config" check-config >/dev/null
MANWIDTH=80 man --warnings abxd >/dev/null

say "running the installed abxd as user abxd on the installed config"
install -d -o abxd -g abxd -m 0750 /run/abxd   # what RuntimeDirectory= does under systemd
site=$(mktemp -d)
cp -r examples/site/. "$site/"
chmod -R a+rX "$site"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$site" "$port" >/dev/null 2>&1 &
server=$!
# What Delegate=yes does under systemd: a cgroup of its own, owned by abxd, that the daemon starts
# in (where this machine has a writable cgroup2 mount; the daemon then contains its tree in it).
cgroup2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
delegated=""
if [ -n "$cgroup2" ] && mkdir "$cgroup2/abxd-check.$$" 2>/dev/null; then
    delegated="$cgroup2/abxd-check.$$"
    chown abxd:abxd "$delegated" "$delegated"/cgroup.procs "$delegated"/cgroup.subtree_control \
        "$delegated"/cgroup.threads
fi
# (Moved there as root, as systemd would: then it drops to abxd, keeping the capabilities the
# unit grants it — AmbientCapabilities=: the egress policy's two, and the four that start hooks
# as the crawl users — and becomes the daemon.)
# shellcheck disable=SC2016
HOME=/var/lib/abxd sh -c 'if [ -n "$1" ]; then echo $$ > "$1/cgroup.procs"; fi; shift; exec "$@"' \
    sh "$delegated" setpriv --reuid=abxd --regid=abxd --init-groups \
    --inh-caps=+bpf,+net_admin,+setuid,+setgid,+chown,+kill \
    --ambient-caps=+bpf,+net_admin,+setuid,+setgid,+chown,+kill \
    /usr/bin/abxd --config "$config" > "$site/abxd.log" 2>&1 &
daemon=$!
for _ in $(seq 1 300); do
    abxctl --config "$config" status >/dev/null 2>&1 && break
    kill -0 "$daemon" 2>/dev/null || { cat "$site/abxd.log"; fail "abxd exited at start"; }
    sleep 0.1
done
status=$(abxctl --config "$config" status)
echo "$status"
if [ -n "$delegated" ]; then
    grep -q "contain:  cgroup v2 at $delegated/" <<<"$status" || fail "abxd does not use its delegated cgroup"
fi
[ "$(stat -c %U:%a /run/abxd/abxd.sock)" = "abxd:660" ] || fail "the socket is not abxd's, 0660"
timeout 300 abxctl --config "$config" add "http://127.0.0.1:$port/" --wait
abxctl --config "$config" ps --all
# Listings are read whole before grep -q looks at them: with pipefail, grep -q closing the pipe
# early would fail the writer with SIGPIPE and the check with it, however right the content.
crawls=$(abxctl --config "$config" crawls)
grep -q "sealed (finished)" <<<"$crawls" || fail "the crawl was not sealed"
abxctl --config "$config" ps --all --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)["processes"]
kinds = {r["kind"] for r in rows}
assert {"orchestrator", "crawl_worker", "snapshot_worker", "hook"} <= kinds, kinds
live = [r for r in rows if r["status"] in ("starting", "running", "stopping") and r["kind"] != "orchestrator"]
assert not live, live
crawl_uids = {int(uid) for uid in sys.argv[1:]}
assert all(r["uid"] in crawl_uids for r in rows if r["kind"] == "hook"), [
    (r["argv"][0], r["uid"]) for r in rows if r["kind"] == "hook"]
' $(for n in 1 2 3 4 5 6 7 8; do id -u "abxd-crawl$n"; done) \
    || fail "a hook did not run as a crawl user (abxd-crawl1 … abxd-crawl8)"
say "importing a browser's bookmarks with the packaged plugins alone"
printf '%s\n' '<!DOCTYPE NETSCAPE-Bookmark-file-1>' '<DL><p>' \
    "    <DT><A HREF=\"http://127.0.0.1:$port/\" ADD_DATE=\"1700000001\" TAGS=\"check\">The site</A>" \
    '</DL><p>' > "$site/bookmarks.html"
timeout 300 abxctl --config "$config" add --plugins title --wait - < "$site/bookmarks.html" \
    || fail "the bookmarks could not be imported with the packaged plugins"
# An import's seeds are its depth-0 snapshots (docs/json.md): the crawl counts them, and the
# bookmark's URL is one, beside the file the bookmarks were read from.
imported=$(abxctl --config "$config" crawls --json | python3 -c '
import json, sys
print(max(c["id"] for c in json.load(sys.stdin)["crawls"]))')
seeds=$(abxctl --config "$config" show --json "$imported" | python3 -c '
import json, sys
shown = json.load(sys.stdin)
assert shown["crawl"]["imported_seeds"] == 1, shown["crawl"]
print(" ".join(s["url"] for s in shown["snapshots"] if s["depth"] == 0 and not s["url"].startswith("file:")))')
[ "$seeds" = "http://127.0.0.1:$port/" ] || fail "the bookmarks became the seeds [$seeds]"
kill -TERM "$daemon"
wait "$daemon" || fail "abxd did not exit 0 on SIGTERM: $(tail -n 20 "$site/abxd.log")"
if [ -n "$delegated" ]; then
    [ "$(find "$delegated" -mindepth 1 -type d | wc -l)" = 0 ] || fail "abxd left cgroups in $delegated"
    rmdir "$delegated"
fi
daemon=
kill -TERM "$server"; wait "$server" 2>/dev/null || true; server=

say "purging leaves the machine clean"
dpkg --purge abxd
for path in /usr/bin/abxd /usr/bin/abxctl /etc/abxd /var/lib/abxd /run/abxd /usr/share/abxd \
    /etc/systemd/system/multi-user.target.wants/abxd.service; do
    [ ! -e "$path" ] || fail "$path is left after purge"
done
! getent passwd abxd >/dev/null || fail "the abxd user is left after purge"
! getent group abxd >/dev/null || fail "the abxd group is left after purge"
for user in abxd-hook abxd-crawl1 abxd-crawl8; do
    ! getent passwd "$user" >/dev/null || fail "the $user user is left after purge"
done
! getent group abxd-crawl >/dev/null || fail "the abxd-crawl group is left after purge"

say "inspecting the .rpm"
rpm -qip "$rpm"
rpm_files=$(rpm -qlp "$rpm")
grep -qx /usr/bin/abxd <<<"$rpm_files" || fail "the .rpm lacks /usr/bin/abxd"
grep -qx /usr/lib/systemd/system/abxd.service <<<"$rpm_files" || fail "the .rpm lacks the unit"
grep -qx "$config" <<<"$(rpm -qcp "$rpm")" || fail "$config is not a config file of the .rpm"
grep -q "useradd --system" <<<"$(rpm -qp --scripts "$rpm")" || fail "the .rpm does not create its user"
scratch=$(mktemp -d)
rpm --root "$scratch" --initdb
rpm -i --root "$scratch" --nodeps --noscripts "$rpm"
[ -x "$scratch/usr/bin/abxd" ] || fail "the .rpm did not install abxd into a scratch root"
[ -f "$scratch$config" ] || fail "the .rpm did not install its config"

say "all package checks passed"
