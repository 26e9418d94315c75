#!/bin/bash
# Where the time of a request goes, in scenario (a) of bench/compare.sh
# (every request passes, 10,000 keys, one worker, wrk -t1 -c64): CPU per
# request of each process (the nginx worker, Redis, wrk: utime + stime
# from /proc), bare and limited, then `perf record` of the worker and of
# Redis while limited, summed by where the code lives (kernel, nginx,
# libc, the module, hiredis; for Redis: Lua and the rest of redis-server
# are one binary), and Redis's own INFO commandstats per request. Prints
# figures; asserts nothing; never run by CI. Loopback only; about 40 s.
#
#   bench/profile.sh [ALGORITHM (sliding_window)] [MODULE_SO]
#
# perf samples at 2 kHz with call graphs off; its own cost inflates the
# figures of that run a little, which is why the CPU per request comes
# from runs without it.

set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
algorithm=${1:-sliding_window}
module=$(realpath "${2:-$here/build/ngx_http_redis_ratelimit_module.so}")
[ -f "$module" ] || { echo "no module at $module: scripts/build.sh" >&2; exit 1; }
command -v perf > /dev/null || { echo "needs perf (apt-get install linux-perf)" >&2; exit 1; }

seconds=6
name=profile
. "$here/bench/scenario-a.sh"
redis=$(pgrep -f "redis-server 127.0.0.1:$redis_port" | head -1)
hz=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# PATH [PERF_OUT]: one wrk run; "requests/s worker_us redis_us wrk_us"
run() {
    local w0 r0 k0 w1 r1 k1 kpid n rec=()
    if [ -n "${2:-}" ]; then
        perf record -F 2000 -p "$worker" -o "$2.worker" -- sleep $((seconds - 2)) \
            > /dev/null 2>&1 &
        perf record -F 2000 -p "$redis" -o "$2.redis" -- sleep $((seconds - 2)) \
            > /dev/null 2>&1 &
    fi
    w0=$(ticks "$worker"); r0=$(ticks "$redis")
    wrk -t1 -c64 -d"${seconds}s" -s "$dir/keys.lua" \
        "http://127.0.0.1:$http_port/$1/index.html" > "$dir/wrk.out" 2>&1 &
    kpid=$!
    sleep 0.2
    k0=$(ticks "$kpid" 2> /dev/null || echo 0)
    sleep $((seconds - 1))
    k1=$(ticks "$kpid" 2> /dev/null || echo "$k0")
    wait "$kpid"
    wait
    w1=$(ticks "$worker"); r1=$(ticks "$redis")
    n=$(awk '/ requests in / { print $1 }' "$dir/wrk.out")
    awk -v n="$n" -v s="$seconds" -v hz="$hz" -v w=$((w1 - w0)) \
        -v r=$((r1 - r0)) -v k=$((k1 - k0)) '
        BEGIN { printf "%.0f %.1f %.1f %.1f\n", n / s, w * 1e6 / hz / n,
                       r * 1e6 / hz / n, k * 1e6 / hz / (n / s * (s - 1.2)) }'
}

echo "scenario (a), $algorithm; CPU per request (us), medians of 3 runs each"
printf '%-8s %10s %8s %8s %8s\n' "" "req/s" worker Redis wrk
for path in bare limited; do
    for i in 1 2 3; do run "$path"; done | sort -n | sed -n 2p |
        awk -v p="$path" '{ printf "%-8s %10s %8s %8s %8s\n", p, $1, $2, $3, $4 }'
done

redis-cli -p "$redis_port" config resetstat > /dev/null
run limited "$dir/perf" > "$dir/profiled"
read -r rps _ < "$dir/profiled"
n=$(awk '/ requests in / { print $1 }' "$dir/wrk.out")

echo
echo "perf, limited, per request (us) by where the code lives ($(( seconds - 2 )) s sampled at 2 kHz; perf's own cost included):"
for who in worker redis; do
    echo "  $who:"
    perf report -i "$dir/perf.$who" --stdio -n --no-children --sort dso \
        2> /dev/null | awk -v rps="$rps" -v s=$((seconds - 2)) '
        /^ *[0-9.]+%/ {
            # on Debian, redis-server is a link to this one binary
            name = $3 == "redis-check-rdb" ? "redis-server (Lua in it)" : $3
            printf "    %-36s %6.2f\n", name, $2 / 2000 * 1e6 / (rps * s) }' |
        head -8
done

echo
echo "Redis INFO commandstats over that run, per request:"
redis-cli -p "$redis_port" info commandstats | tr -d '\r' | awk -F'[:=,]' -v n="$n" '
    /^cmdstat_(evalsha|get|set|time|zadd|zcount|pexpire|zremrangebyscore):/ {
        printf "  %-18s %6.3f calls %7.2f us\n", substr($1, 9), $3 / n, $5 / n }'
