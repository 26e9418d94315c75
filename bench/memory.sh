#!/bin/bash
# Memory under load: scenario (a) of bench/compare.sh (every request
# passes, 10,000 keys, sliding_window, one worker, wrk -t1 -c64) for a
# long time, the worker's RSS sampled every 30 s. Prints the samples and
# the growth from the first sample taken under load to the last (the
# target: under 5 MB in 10 minutes). Prints figures; asserts nothing;
# never run by CI. Loopback only.
#
#   bench/memory.sh [SECONDS (600)] [MODULE_SO]

set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
module=$(realpath "${2:-$here/build/ngx_http_redis_ratelimit_module.so}")
[ -f "$module" ] || { echo "no module at $module: scripts/build.sh" >&2; exit 1; }

algorithm=sliding_window
name=memory
. "$here/bench/scenario-a.sh"
rss() { awk '/VmRSS/ { print $2 }' "/proc/$worker/status"; }

echo "worker $worker, RSS before any request: $(rss) kB"
wrk -t1 -c64 -d"${seconds}s" -s "$dir/keys.lua" \
    "http://127.0.0.1:$http_port/limited/index.html" > "$dir/wrk.out" 2>&1 &
wrk_pid=$!

printf '%8s %10s\n' seconds "RSS (kB)"
first=
t=0
while kill -0 "$wrk_pid" 2> /dev/null; do
    sleep 30
    t=$((t + 30))
    kill -0 "$wrk_pid" 2> /dev/null || break
    r=$(rss)
    [ -n "$first" ] || first=$r
    last=$r
    printf '%8d %10d\n' "$t" "$r"
done
wait "$wrk_pid" || true

grep -E 'requests in|Requests/sec|Non-2xx|Socket errors' "$dir/wrk.out" || true
echo "RSS growth under load, from 30 s to the end: $(( ${last:-0} - ${first:-0} )) kB"
echo "worker still $worker: $(pgrep -P "$(cat "$dir/nginx.pid")" | head -1)"
alerts=$(grep -cE '\[(alert|crit|emerg)\]' "$dir/error.log" || true)
echo "alert, crit or emerg lines in error.log: $alerts"
