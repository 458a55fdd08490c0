#!/usr/bin/env bash
# abxd side by side with supervisord and pueue, on the same workloads, in one session.
#
#   benches/peers.sh            full run (3 rounds of each workload, 10 s idle measurement)
#   ROUNDS=1 IDLE_SECONDS=3 benches/peers.sh    a quick look
#
# Installs what is missing under ~/.cache/abxd-ci/ (supervisor 4.3.0 from PyPI in a virtualenv,
# pueue 4.0.4 by cargo install), builds abxd in release mode, then runs, for each supervisor:
#   start   50 long-running programs (which ignore SIGTERM): time until all 50 run (each writes
#           its pid file as it starts, so "running" means the program itself runs)
#   status  latency of one status call (abxctl ps / supervisorctl status / pueue status) with the
#           50 programs running
#   stop    stop all 50 with a 2 s grace before SIGKILL: time until every one is gone from /proc
#   jobs    200 trivial jobs to completion, 8 at a time where the tool limits parallelism
#   idle    wake-ups (voluntary + involuntary context switches of all threads) and RSS of the
#           supervisor process doing nothing
#   busy    CPU of the supervisor process (all its threads) over BUSY_SECONDS while it supervises
#           8 long-running programs on a host with CROWD (2 000) unrelated processes
# and prints one table: medians with min–max over the rounds, and abxd's ratio to each peer
# (below 1: abxd is faster / lighter). Nothing is asserted; see BENCHMARKS.md.
#
# Every process started here is stopped by pid on exit (trap), also when a step fails.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# Pinned, and kept where the machine keeps caches: a clean clone does not build pueue again.
SUPERVISOR_VERSION=4.3.0
PUEUE_VERSION=4.0.4
PEERS=${XDG_CACHE_HOME:-$HOME/.cache}/abxd-ci/peers-supervisor-$SUPERVISOR_VERSION-pueue-$PUEUE_VERSION
ROUNDS=${ROUNDS:-3}
IDLE_SECONDS=${IDLE_SECONDS:-10}
BUSY_SECONDS=${BUSY_SECONDS:-20}
CROWD=${CROWD:-2000}
CROWD_PID=""
LONG=50
JOBS=200
PARALLEL=8
GRACE=2
WORK=$(mktemp -d /tmp/abxd-peers.XXXXXX)
DAEMONS=()

die() { echo "peers.sh: $*" >&2; exit 1; }

cleanup() {
    for pid in "${DAEMONS[@]}"; do
        # Only our own daemons: the pid must still run a program from our work dir's config.
        if [ -r "/proc/$pid/cmdline" ] && grep -q "$WORK" <<<"$(tr '\0' ' ' <"/proc/$pid/cmdline")"; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    for file in "$WORK"/pids/*; do
        [ -e "$file" ] || continue
        pid=$(cat "$file")
        if [ -r "/proc/$pid/cmdline" ] && grep -q "sleep 100000" <<<"$(tr '\0' ' ' <"/proc/$pid/cmdline")"; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    stop_crowd
    rm -rf "$WORK"
}
trap cleanup EXIT

# --- installing the peers -----------------------------------------------------------------------

install_peers() {
    mkdir -p "$PEERS"
    if [ ! -x "$PEERS/venv/bin/supervisord" ]; then
        echo "installing supervisor from PyPI into $PEERS/venv" >&2
        python3 -m venv "$PEERS/venv" || die "python3 -m venv failed (apt install python3-venv)"
        "$PEERS/venv/bin/pip" install --quiet "supervisor==$SUPERVISOR_VERSION" \
            || die "pip install supervisor==$SUPERVISOR_VERSION failed"
    fi
    if [ ! -x "$PEERS/bin/pueued" ]; then
        echo "installing pueue (cargo install) into $PEERS (takes a few minutes)" >&2
        cargo install --quiet --locked pueue --version "$PUEUE_VERSION" --root "$PEERS" \
            || die "cargo install pueue $PUEUE_VERSION failed"
    fi
    (cd "$ROOT" && cargo build --quiet --release) || die "cargo build --release failed"
}

# --- measuring -----------------------------------------------------------------------------------

now_ns() { date +%s%N; }
ms_since() { echo $((($(now_ns) - $1) / 1000000)); }

# wait_for WHAT CMD...: runs CMD every 10 ms until it succeeds; fails after 120 s naming WHAT.
wait_for() {
    local what=$1 deadline=$(($(date +%s) + 120))
    shift
    until "$@"; do
        [ "$(date +%s)" -lt "$deadline" ] || die "timed out waiting for $what"
        sleep 0.01
    done
}

pid_files() { find "$WORK/pids" -type f 2>/dev/null | wc -l; }
all_started() { [ "$(pid_files)" -ge "$LONG" ]; }
all_gone() {
    local file
    for file in "$WORK"/pids/*; do
        [ -e "/proc/$(cat "$file")" ] && return 1
    done
    return 0
}

# The long-running program: writes its pid, ignores SIGTERM, sleeps (exec keeps the pid).
long_program() { echo "echo \$\$ > $WORK/pids/$1; trap '' TERM; exec sleep 100000"; }

# Context switches of all threads of PID. (A thread that ends while it is read counts as 0: a
# multi-threaded peer's runtime starts and ends threads at will.)
wakeups() {
    local total=0 task n
    for task in /proc/"$1"/task/*; do
        # (Summed by the shell, in 64-bit integers: mawk prints a sum of 2^31 or more as 3e+09.)
        for n in $(awk '/^(voluntary|nonvoluntary)_ctxt_switches/ {print $2}' \
            "$task/status" 2>/dev/null || true); do
            total=$((total + n))
        done
    done
    echo "$total"
}
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# idle NAME PID: records wake-ups per second and RSS of PID over IDLE_SECONDS.
idle() {
    local before after
    [ -d "/proc/$2" ] && ! grep -q '^State:.*Z' "/proc/$2/status" ||
        die "$1's daemon (pid $2) is not running any more"
    before=$(wakeups "$2")
    sleep "$IDLE_SECONDS"
    after=$(wakeups "$2")
    record "$1" idle_wakeups "$(echo "scale=2; ($after - $before) / $IDLE_SECONDS" | bc)"
    record "$1" rss_mib "$(echo "scale=1; $(rss_kib "$2") / 1024" | bc)"
}

# The crowd: CROWD unrelated `sleep` processes in a process group of their own (a shell's).
start_crowd() {
    setsid sh -c "i=0; while [ \$i -lt $CROWD ]; do sleep 3600 & i=\$((i+1)); done; echo ready; wait" \
        >"$WORK/crowd.out" &
    CROWD_PID=$!
    disown "$CROWD_PID"  # (killed by us: no job report)
    wait_for "$CROWD unrelated processes" grep -q ready "$WORK/crowd.out"
}
stop_crowd() {
    # Only our own group: its leader must still be the shell that started the crowd.
    if [ -n "$CROWD_PID" ] && grep -q "sleep 3600" <<<"$(tr '\0' ' ' <"/proc/$CROWD_PID/cmdline" 2>/dev/null)"; then
        kill -KILL -- "-$CROWD_PID" 2>/dev/null || true
    fi
    CROWD_PID=""
}

# CPU time (ns) of all threads of PID, summed by the shell in 64-bit integers (awk would not do:
# Debian's mawk prints a sum of 2^31 or more, ~2.1 s of CPU, as 3e+09, which bc rejects). A
# thread that ends while it is read counts as 0.
cpu_ns() {
    local total=0 task ns rest
    for task in /proc/"$1"/task/*; do
        read -r ns rest <"$task/schedstat" 2>/dev/null || continue
        [[ "$ns" =~ ^[0-9]+$ ]] || die "cpu_ns: $task/schedstat starts with '$ns', not a count of nanoseconds"
        total=$((total + ns))
    done
    echo "$total"
}

# busy NAME PID: with 8 programs running under PID and the crowd on the host, records PID's
# CPU over BUSY_SECONDS as % of one core.
busy() {
    local before after
    start_crowd
    before=$(cpu_ns "$2") || die "busy_cpu_percent of $1: its CPU time could not be read"
    sleep "$BUSY_SECONDS"
    after=$(cpu_ns "$2") || die "busy_cpu_percent of $1: its CPU time could not be read"
    stop_crowd
    record "$1" busy_cpu_percent "$(echo "scale=3; ($after - $before) / ($BUSY_SECONDS * 10000000)" | bc)"
}

# record TOOL FIGURE VALUE: appends one measurement (a number, or the run fails saying which).
record() {
    [[ "$3" =~ ^-?[0-9]*\.?[0-9]+$ ]] || die "no $2 measured for $1 (got '$3'): is its daemon still running?"
    echo "$1 $2 $3" >>"$WORK/figures"
}

# status_latency TOOL CMD...: 20 timed calls.
status_latency() {
    local tool=$1 i start
    shift
    for i in $(seq 20); do
        start=$(now_ns)
        # (supervisorctl status exits non-zero when a program is not running: not an error here)
        "$@" >/dev/null || true
        record "$tool" status_ms "$(ms_since "$start")"
    done
}

# --- abxd ----------------------------------------------------------------------------------------

bench_abxd() {
    local dir=$WORK/abxd config=$WORK/abxd/supervisor.toml bin=$ROOT/target/release
    mkdir -p "$dir"
    cat >"$config" <<EOF
[paths]
data_dir = "$dir/data"
plugins_dirs = ["$ROOT/tests/fixtures/plugins"]
[limits]
max_snapshot_workers = $PARALLEL
[control]
allow_debug_spawn = true
[hooks]
# (The peers run their jobs as whoever starts them; so does abxd here, root included.)
user = "$(id -un)"
# (Its jobs are all of one loopback "site", and the peers know no per-site limit.)
[politeness]
max_per_host = 1000
delay = "0s"
EOF
    "$bin/abxd" --config "$config" >"$dir/log" 2>&1 &
    DAEMONS+=($!)
    local daemon=$!
    wait_for "abxd to answer" "$bin/abxctl" --config "$config" status >/dev/null
    local ctl=("$bin/abxctl" --config "$config")
    local round i start rows crawl
    for round in $(seq "$ROUNDS"); do
        rm -rf "$WORK/pids" && mkdir -p "$WORK/pids"
        start=$(now_ns)
        rows=()
        for i in $(seq "$LONG"); do
            rows+=("$("${ctl[@]}" spawn -- /bin/sh -c "$(long_program "$i")" | cut -d' ' -f1)")
        done
        wait_for "50 programs under abxd" all_started
        record abxd start_ms "$(ms_since "$start")"
        status_latency abxd "${ctl[@]}" ps
        start=$(now_ns)
        local killers=()
        for row in "${rows[@]}"; do
            "${ctl[@]}" kill "$row" --grace "${GRACE}s" --no-wait >/dev/null &
            killers+=($!)
        done
        wait "${killers[@]}"
        wait_for "abxd to stop 50 programs" all_gone
        record abxd stop_ms "$(ms_since "$start")"

        start=$(now_ns)
        local urls=()
        for i in $(seq "$JOBS"); do urls+=("http://127.0.0.1:9/$round/$i"); done
        crawl=$("${ctl[@]}" add "${urls[@]}" --plugins ok | cut -d' ' -f2)
        wait_for "abxd crawl $crawl" sh -c "'$bin/abxctl' --config '$config' crawls | grep -q '^ *$crawl *sealed'"
        record abxd jobs_ms "$(ms_since "$start")"
    done
    idle abxd "$daemon"
    rm -rf "$WORK/pids" && mkdir -p "$WORK/pids"
    rows=()
    for i in $(seq 8); do
        rows+=("$("${ctl[@]}" spawn -- /bin/sh -c "$(long_program "$i")" | cut -d' ' -f1)")
    done
    wait_for "8 programs under abxd" sh -c "[ \$(find '$WORK/pids' -type f | wc -l) -ge 8 ]"
    busy abxd "$daemon"
    kill -TERM "$daemon"
    wait "$daemon" || true
}

# --- supervisord ---------------------------------------------------------------------------------

bench_supervisord() {
    local dir=$WORK/supervisord venv=$PEERS/venv/bin
    mkdir -p "$dir"
    {
        cat <<EOF
[unix_http_server]
file = $dir/supervisor.sock
[supervisord]
logfile = $dir/supervisord.log
pidfile = $dir/supervisord.pid
childlogdir = $dir
nodaemon = true
[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface
[supervisorctl]
serverurl = unix://$dir/supervisor.sock
EOF
        for i in $(seq "$LONG"); do
            printf '[program:long%d]\ncommand = /bin/sh -c "%s"\nautostart = false\nstartsecs = 0\nstopwaitsecs = %d\n' \
                "$i" "$(long_program "$i")" "$GRACE"
        done
        for i in $(seq "$JOBS"); do
            printf '[program:job%d]\ncommand = /bin/true\nautostart = false\nstartsecs = 0\nautorestart = false\n' "$i"
        done
        printf '[group:long]\nprograms = %s\n' "$(seq -s, -f 'long%g' "$LONG")"
        printf '[group:jobs]\nprograms = %s\n' "$(seq -s, -f 'job%g' "$JOBS")"
    } >"$dir/supervisord.conf"
    "$venv/supervisord" -c "$dir/supervisord.conf" >"$dir/stdout" 2>&1 &
    DAEMONS+=($!)
    local daemon=$!
    local ctl=("$venv/supervisorctl" -c "$dir/supervisord.conf")
    wait_for "supervisord to answer" sh -c "'$venv/supervisorctl' -c '$dir/supervisord.conf' pid >/dev/null"
    local round start
    for round in $(seq "$ROUNDS"); do
        rm -rf "$WORK/pids" && mkdir -p "$WORK/pids"
        start=$(now_ns)
        "${ctl[@]}" start 'long:*' >/dev/null
        wait_for "50 programs under supervisord" all_started
        record supervisord start_ms "$(ms_since "$start")"
        status_latency supervisord "${ctl[@]}" status
        start=$(now_ns)
        "${ctl[@]}" stop 'long:*' >/dev/null
        wait_for "supervisord to stop 50 programs" all_gone
        record supervisord stop_ms "$(ms_since "$start")"

        start=$(now_ns)
        "${ctl[@]}" start 'jobs:*' >"$dir/jobs.out" || true  # non-zero when a job exits before it is seen running
        wait_for "supervisord's 200 jobs" sh -c \
            "[ \$('$venv/supervisorctl' -c '$dir/supervisord.conf' status 'jobs:*' | grep -c EXITED || true) -ge $JOBS ]"
        record supervisord jobs_ms "$(ms_since "$start")"
    done
    idle supervisord "$daemon"
    rm -rf "$WORK/pids" && mkdir -p "$WORK/pids"
    "${ctl[@]}" start 'long:long1' 'long:long2' 'long:long3' 'long:long4' \
        'long:long5' 'long:long6' 'long:long7' 'long:long8' >/dev/null
    wait_for "8 programs under supervisord" sh -c "[ \$(find '$WORK/pids' -type f | wc -l) -ge 8 ]"
    busy supervisord "$daemon"
    kill -TERM "$daemon"
    wait "$daemon" || true
}

# --- pueue ---------------------------------------------------------------------------------------

bench_pueue() {
    local dir=$WORK/pueue bin=$PEERS/bin
    mkdir -p "$dir/data" "$dir/run"
    cat >"$dir/pueue.yml" <<EOF
shared:
  pueue_directory: $dir/data
  runtime_directory: $dir/run
  use_unix_socket: true
  unix_socket_path: $dir/pueue.sock
daemon:
  callback: null
client:
  show_confirmation_questions: false
EOF
    "$bin/pueued" --config "$dir/pueue.yml" >"$dir/log" 2>&1 &
    DAEMONS+=($!)
    local daemon=$!
    local ctl=("$bin/pueue" --config "$dir/pueue.yml")
    wait_for "pueued to answer" sh -c "'$bin/pueue' --config '$dir/pueue.yml' status >/dev/null 2>&1"
    local round i start
    for round in $(seq "$ROUNDS"); do
        rm -rf "$WORK/pids" && mkdir -p "$WORK/pids"
        "${ctl[@]}" parallel "$LONG" >/dev/null
        start=$(now_ns)
        for i in $(seq "$LONG"); do
            "${ctl[@]}" add -- "$(long_program "$i")" >/dev/null
        done
        wait_for "50 programs under pueue" all_started
        record pueue start_ms "$(ms_since "$start")"
        status_latency pueue "${ctl[@]}" status
        # pueue has no grace period: SIGTERM, then SIGKILL after the grace, by hand.
        start=$(now_ns)
        "${ctl[@]}" kill --signal SIGTERM >/dev/null
        sleep "$GRACE"
        "${ctl[@]}" kill >/dev/null
        wait_for "pueue to stop 50 programs" all_gone
        record pueue stop_ms "$(ms_since "$start")"
        "${ctl[@]}" clean >/dev/null
        "${ctl[@]}" start >/dev/null  # killing paused the group

        "${ctl[@]}" parallel "$PARALLEL" >/dev/null
        start=$(now_ns)
        for i in $(seq "$JOBS"); do
            "${ctl[@]}" add -- true >/dev/null
        done
        "${ctl[@]}" wait >/dev/null
        record pueue jobs_ms "$(ms_since "$start")"
        "${ctl[@]}" clean >/dev/null
    done
    idle pueue "$daemon"
    rm -rf "$WORK/pids" && mkdir -p "$WORK/pids"
    "${ctl[@]}" parallel 8 >/dev/null
    for i in $(seq 8); do
        "${ctl[@]}" add -- "$(long_program "$i")" >/dev/null
    done
    wait_for "8 programs under pueue" sh -c "[ \$(find '$WORK/pids' -type f | wc -l) -ge 8 ]"
    busy pueue "$daemon"
    "${ctl[@]}" kill >/dev/null || true
    kill -TERM "$daemon"
    wait "$daemon" || true
}

# --- the table -----------------------------------------------------------------------------------

print_table() {
    python3 - "$WORK/figures" <<'EOF'
import statistics, sys
figures = {}
for line in open(sys.argv[1]):
    tool, figure, value = line.split()
    figures.setdefault((tool, figure), []).append(float(value))
rows = [
    ("start_ms", "start 50 programs (ms)"),
    ("status_ms", "status call (ms)"),
    ("stop_ms", "stop 50, TERM ignored, 2 s grace (ms)"),
    ("jobs_ms", "200 trivial jobs (ms)"),
    ("idle_wakeups", "idle wake-ups per second"),
    ("rss_mib", "idle RSS (MiB)"),
    ("busy_cpu_percent", "CPU, 8 programs, 2 000 other processes (% of a core)"),
]
def cell(tool, figure):
    values = figures.get((tool, figure))
    if not values:
        return None, "-"
    median = statistics.median(values)
    if len(values) == 1:
        return median, f"{median:g}"
    return median, f"{median:g} ({min(values):g}–{max(values):g})"
def ratio(a, b):
    if a is None or b is None:
        return "-"
    if b == 0:
        return "=" if a == 0 else "inf"
    return f"{a / b:.2f}"
header = ["", "abxd", "supervisord", "abxd/sup.", "pueue", "abxd/pueue"]
table = [header]
for figure, label in rows:
    a, a_cell = cell("abxd", figure)
    s, s_cell = cell("supervisord", figure)
    p, p_cell = cell("pueue", figure)
    table.append([label, a_cell, s_cell, ratio(a, s), p_cell, ratio(a, p)])
widths = [max(len(r[i]) for r in table) for i in range(len(header))]
for r in table:
    print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
print("\nmedian (min–max) over the rounds; status: 20 calls per round")
EOF
}

install_peers
for tool in bc python3; do command -v "$tool" >/dev/null || die "$tool is needed"; done
echo "abxd peers: $ROUNDS rounds, idle $IDLE_SECONDS s, $(nproc) cores, $(date -u +%Y-%m-%d)" >&2
bench_abxd
bench_supervisord
bench_pueue
print_table
