#!/bin/bash
# Runs the end-to-end tests (t/*.t) as scripts/test.sh does: RRL_PROVE_JOBS
# (6) files at a time, the slowest first, then the few listed in `alone`
# below one by one, with nothing else running.
#
# Files share nothing: each starts its own redis-server (and nginx, Cluster,
# Sentinels) on ports the kernel picks, in a temporary directory of its
# own. Most of a file's time is waiting (windows, delays, timeouts): 71
# files take about 340 s one at a time for about 65 s of CPU, so 6 at a time
# on 2 cores.
#
#   scripts/e2e.sh [FILE...]     these files (default: every t/*.t)
#
# Environment: what t/ reads (RRL_MODULE, RRL_REDIS_SERVER, ...), and
# RRL_PROVE_JOBS: files at a time (6; 1: the same order, one at a time).

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# Measured to a few milliseconds, or loading both cores: these run alone,
# after the others.
alone=(
    # two nginx keep 100 ms between 6 delayed requests, seen by the client
    t/delay.t
    # 16 closed-loop clients on both cores for 25 s; each pass is put in
    # its window by the log's time, to within 5 ms
    t/lease_exact.t
    # a real-time busy loop takes the worker's CPU for 120 ms, five times,
    # while Redis must answer on the other
    t/metrics_reply_and_timer.t
    # the README's smoothing example: 8 delayed requests 100 ms apart, seen
    # by the client to within 5 ms (one came 5.8 ms early in a parallel
    # run: a timer is set from nginx's cached clock, which lags on a
    # loaded machine)
    t/readme_examples.t
    # one request after another, each zone's rejection expected at an exact
    # request: it moved (the 9th of 10r/h refused, then 2 passes; the 5th
    # refused by ca instead of cb) once in a parallel run and twice alone,
    # and once in the former CI, one file at a time: a lease race for the
    # leases' owners, not a clock to fix here
    t/lease_cluster.t
    # the same race on one Redis: the 9th of 10 refused, then the 11th
    # passed, once in a parallel run (a request that reaches Redis while
    # another worker's renewal of the key holds its last units); the other
    # files that count a key's passes through leases exactly, with it
    t/lease.t t/lease_mixed.t t/lease_ends.t t/lease_zone.t t/settle_lease.t
    # a request every 100 ms: at most one of them waits on Redis, the
    # others find the lease taken ahead started (a few ms after the window)
    t/lease_ahead.t
)

# The slowest (about 10 s or more one at a time) start first, so that the
# run does not end on one of them alone.
slow=(
    t/overrides_invalid.t t/hostile_redis.t t/deny_cache.t
    t/deny_cache_delay.t t/sentinel.t t/overrides.t
    t/cluster_failover.t t/recovery.t t/settle.t
)

if [ $# -gt 0 ]; then
    files=("$@")
else
    files=(t/*.t)
fi

in_list() {
    local f=$1 x
    shift
    for x in "$@"; do
        [ "$x" = "$f" ] && return 0
    done
    return 1
}

first=() rest=() last=()
for f in "${files[@]}"; do
    if in_list "$f" "${alone[@]}"; then
        last+=("$f")
    elif in_list "$f" "${slow[@]}"; then
        first+=("$f")
    else
        rest+=("$f")
    fi
done

rc=0
together=("${first[@]}" "${rest[@]}")
if [ ${#together[@]} -gt 0 ]; then
    prove -j "${RRL_PROVE_JOBS:-6}" --timer "${together[@]}" || rc=1
fi
if [ ${#last[@]} -gt 0 ]; then
    echo "== alone: ${last[*]}"
    prove --timer "${last[@]}" || rc=1
fi
exit $rc
