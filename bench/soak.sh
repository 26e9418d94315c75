#!/bin/bash
# Soak: wrk against a limited location for a long time while Redis is
# killed (SIGKILL) and started again every 30 s. Reports requests served,
# 5xx responses (must be 0 with fail open or local), worker crashes (must
# be 0) and the workers' RSS at start and end. Loopback only; bounded in
# time. Prints figures; the exit status is non-zero if a 5xx or a crash
# was seen.
#
#   bench/soak.sh [SECONDS (600)] [FAIL_MODE (open|local|closed)] [MODULE_SO]

set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
mode=${2:-open}
module=$(realpath "${3:-$here/build/ngx_http_redis_ratelimit_module.so}")

dir=$(mktemp -d)
chmod 755 "$dir"
redis_port=$((20000 + RANDOM % 10000))
http_port=$((redis_port + 1))

start_redis() {
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
        --appendonly no --daemonize yes --pidfile "$dir/redis.pid" \
        --logfile "$dir/redis.log"
}

cleanup() {
    [ -n "${killer:-}" ] && kill "$killer" 2>/dev/null || true
    [ -f "$dir/nginx.pid" ] && kill -QUIT "$(cat "$dir/nginx.pid")" 2>/dev/null || true
    redis-cli -p "$redis_port" shutdown nosave > /dev/null 2>&1 || true
    sleep 1
    rm -rf "$dir"
}
trap cleanup EXIT

mkdir -p "$dir/html"
echo "hello" > "$dir/html/index.html"
chmod -R 755 "$dir/html"

cat > "$dir/nginx.conf" <<CONF
load_module $module;
worker_processes 2;
error_log $dir/error.log notice;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
    redis_ratelimit_server 127.0.0.1:$redis_port;
    redis_ratelimit_zone \$arg_k zone=soak rate=50r/s;
    redis_ratelimit_fail $mode;

    # only 5xx are logged: the count is what matters
    map \$status \$is_5xx { ~^5 1; default 0; }
    log_format status '\$status \$redis_ratelimit_status';
    access_log $dir/5xx.log status if=\$is_5xx;

    server {
        listen 127.0.0.1:$http_port;
        root $dir/html;
        location / { redis_ratelimit zone=soak; }
    }
}
CONF

start_redis
sleep 0.3
nginx -c "$dir/nginx.conf" -e "$dir/error.log"
sleep 0.5

workers() { pgrep -P "$(cat "$dir/nginx.pid")" | sort; }
rss_kb() {
    for p in $(workers); do awk '/VmRSS/ {print $2}' "/proc/$p/status"; done \
        | awk '{ kb += $1 } END { print kb }'
}

cat > "$dir/keys.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", "/?k=" .. (n % 1000))
end
LUA

# warm up, then measure the starting RSS
wrk -t1 -c32 -d5s -s "$dir/keys.lua" "http://127.0.0.1:$http_port/" > /dev/null
workers_start=$(workers)
rss_start=$(rss_kb)

( # Redis killed and started again every 30 s
    while sleep 30; do
        kill -KILL "$(cat "$dir/redis.pid")" 2>/dev/null || true
        sleep 1
        start_redis
    done
) &
killer=$!

wrk -t1 -c32 -d"${seconds}s" -s "$dir/keys.lua" \
    "http://127.0.0.1:$http_port/" > "$dir/wrk.txt"

kill "$killer" 2>/dev/null || true
killer=

workers_end=$(workers)
rss_end=$(rss_kb)

requests=$(awk '/requests in/ {print $1}' "$dir/wrk.txt")
rps=$(awk '/Requests\/sec/ {print $2}' "$dir/wrk.txt")
errors=$(grep -E "Socket errors" "$dir/wrk.txt" || echo "Socket errors: none")
count_5xx=$(wc -l < "$dir/5xx.log")
crashes=$(grep -c "exited on signal" "$dir/error.log" || true)
restarts=$((seconds / 30))

echo "soak: ${seconds}s, fail $mode, Redis killed and restarted $restarts times"
echo "requests: $requests ($rps/s); $errors"
echo "5xx: $count_5xx"
echo "worker crashes: $crashes (workers $(echo $workers_start) -> $(echo $workers_end))"
echo "worker RSS: ${rss_start} kB -> ${rss_end} kB"
grep -E "circuit|\[alert\]|\[crit\]" "$dir/error.log" | awk '{$1=$2=""; print}' \
    | sed 's/[0-9]\{1,\}#[0-9]\{1,\}: //' | sort | uniq -c | sort -rn | head -5

[ "$mode" = closed ] || [ "$count_5xx" -eq 0 ]
[ "$crashes" -eq 0 ] && [ "$workers_start" = "$workers_end" ]
