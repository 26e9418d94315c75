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

dir=$(mktemp -d /tmp/rrl-memory.XXXXXX)
chmod 755 "$dir"
redis_port=$((20000 + RANDOM % 9000))
http_port=$((redis_port + 1))

cleanup() {
    [ -n "${KEEP:-}" ] && return
    [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2> /dev/null || true
    redis-cli -p "$redis_port" shutdown nosave > /dev/null 2>&1 || true
    sleep 0.5
    rm -rf "$dir"
}
trap cleanup EXIT

mkdir -p "$dir/html"
printf 'hello\n' > "$dir/html/index.html"
cat > "$dir/keys.lua" <<'LUA'
local requests, n = {}, 0
function init()
  for i = 1, 10000 do
    requests[i] = wrk.format(nil, wrk.path .. "?k=" .. (i - 1))
  end
end
function request()
  n = n % #requests + 1
  return requests[n]
end
LUA
chmod -R a+rX "$dir"

redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
    --appendonly no --daemonize yes --logfile "$dir/redis.log"

cat > "$dir/nginx.conf" <<CONF
load_module $module;
worker_processes 1;
error_log $dir/error.log notice;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    redis_ratelimit_server 127.0.0.1:$redis_port;
    redis_ratelimit_zone \$arg_k zone=a_sw rate=1000r/s;
    server {
        listen 127.0.0.1:$http_port;
        location / {
            root $dir/html;
            redis_ratelimit zone=a_sw;
        }
    }
}
CONF
sleep 0.3
nginx -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log"
sleep 0.5
worker=$(pgrep -P "$(cat "$dir/nginx.pid")" | head -1)
rss() { awk '/VmRSS/ { print $2 }' "/proc/$worker/status"; }

echo "worker $worker, RSS before any request: $(rss) kB"
wrk -t1 -c64 -d"${seconds}s" -s "$dir/keys.lua" \
    "http://127.0.0.1:$http_port/index.html" > "$dir/wrk.out" 2>&1 &
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
