#!/usr/bin/env bash
# README's prerequisites and its two commands, literally, as a newcomer pastes them on a fresh
# Debian 12: a minimal Debian 12 root (debootstrap's minbase, made once under the CI cache) in a
# container of its own, as root, this repository cloned into root's home, then each command as
# README.md says it — read from README.md itself, so that the check follows what it says:
#   - the prerequisites: the apt-get line, rustup's line, cargo-nextest's install;
#   - command 1 archives the example site and lists the archive;
#   - command 2 runs the whole test suite, and it passes (what a newcomer lacks is skipped,
#     saying what to install: CI is not set).
# One step is not literal: rustup's installer is fetched from rustup's own site, which this
# machine cannot reach (only the package registries); the toolchain this host's rustup
# installed is copied where that line would put it, and the line's `. "$HOME/.cargo/env"` is run.
# Usage: packaging/check-readme.sh [--first-command-only]. Needs root, debootstrap and
# systemd-nspawn. Takes about half an hour on 2 cores (command 2 builds and runs every test).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=packaging/lib/host-mirror.sh
. packaging/lib/host-mirror.sh

only_first=""
[ "${1:-}" = "--first-command-only" ] && only_first=yes
cache=/var/cache/abxd-ci
base="$cache/debian12-minbase"
root=""

say() { printf '\n== check-readme: %s\n' "$*"; }
fail() {
    printf 'check-readme: FAILED: %s\n' "$*" >&2
    exit 1
}
cleanup() {
    [ -z "$root" ] || rm -rf "$root"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || fail "must run as root"
for tool in debootstrap systemd-nspawn python3 git; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (.ci/run installs it)"
done
[ -x "$HOME/.cargo/bin/rustup" ] || fail "no rustup toolchain in $HOME to copy (README: rustup)"

# README's own lines: the three prerequisites (its inline code spans that install something)
# and the two commands of its first sh block.
read_readme() { # WHAT: apt | rustup | nextest | command1 | command2
    python3 - "$1" <<'README'
import re, sys
text = open("README.md").read()
intro = text.split("```sh", 1)[0]
spans = re.findall(r"`([^`]+)`", intro)
pick = {
    "apt": [s for s in spans if "apt-get install" in s],
    "rustup": [s for s in spans if "rustup" in s and "|" in s],
    "nextest": [s for s in spans if "cargo install" in s],
}
block = text.split("```sh", 1)[1].split("```", 1)[0]
commands = [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
pick["command1"], pick["command2"] = commands[:1], commands[1:2]
found = pick[sys.argv[1]]
if len(found) != 1:
    sys.exit(f"README.md: no single {sys.argv[1]} line: {found}")
print(found[0])
README
}
apt_line=$(read_readme apt) || fail "README.md lost its apt-get line"
rustup_line=$(read_readme rustup) || fail "README.md lost its rustup line"
nextest_line=$(read_readme nextest) || fail "README.md lost its cargo-nextest line"
command1=$(read_readme command1) || fail "README.md lost command 1"
command2=$(read_readme command2) || fail "README.md lost command 2"
env_line=${rustup_line##*&& }
[ "$env_line" != "$rustup_line" ] || fail "README.md's rustup line sources no env: $rustup_line"

mirror=$(host_mirror bookworm)
if [ ! -x "$base/usr/bin/apt-get" ]; then
    [ -n "$mirror" ] || fail "this host's apt sources name no mirror of Debian 12 (bookworm)"
    say "making a minimal Debian 12 root in $base (once), from $mirror"
    rm -rf "$base.partial"
    debootstrap --variant=minbase bookworm "$base.partial" "$mirror" >/dev/null
    mv "$base.partial" "$base"
fi

say "a fresh copy of the root, this repository cloned into root's home"
root=$(mktemp -d /var/tmp/abxd-readme.XXXXXX)
cp -a "$base/." "$root/"
git clone --quiet . "$root/root/abxd"
# (What rustup's line would have made: the toolchain and cargo's env, in root's home.)
cp -a "$HOME/.rustup" "$root/root/.rustup"
mkdir -p "$root/root/.cargo/bin"
cp -a "$HOME/.cargo/env" "$root/root/.cargo/env"
for tool in cargo rustc rustup rustdoc rustfmt cargo-fmt cargo-clippy clippy-driver; do
    [ -e "$HOME/.cargo/bin/$tool" ] && cp -a "$HOME/.cargo/bin/$tool" "$root/root/.cargo/bin/"
done

# Runs SCRIPT in the container as root, in root's home, with the host's network (the package
# registries) and what root has on a machine of its own that a container withholds by default
# (BPF, for abxd's egress policy); its output goes to the log, its end to the caller.
in_ct() { # SCRIPT
    systemd-nspawn --quiet --directory="$root" --register=no --keep-unit --chdir=/root \
        --capability=CAP_BPF,CAP_NET_ADMIN --system-call-filter=bpf \
        --setenv=HOME=/root --setenv=DEBIAN_FRONTEND=noninteractive --as-pid2 \
        /bin/bash -euo pipefail -c "$1"
}

say "the prerequisites: $apt_line"
# (A fresh machine's package lists may be missing: README says to update them.)
in_ct "$apt_line" || fail "README's apt-get line failed"
# (This host reaches the registries through whatever its own trust store vouches for — on a
# machine behind an inspecting proxy, the proxy's CA: the container trusts what the host does.)
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
say "rustup's line (its toolchain copied, see above): $env_line; then $nextest_line"
in_ct "$env_line && $nextest_line" || fail "README's cargo-nextest line failed"

say "command 1: $command1"
in_ct "$env_line && cd abxd && $command1" || fail "README's command 1 failed"
[ -n "$only_first" ] && { say "passed (command 1 only)"; exit 0; }
say "command 2: $command2"
in_ct "$env_line && cd abxd && $command2" || fail "README's command 2 failed"
say "passed"
