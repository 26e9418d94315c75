#!/bin/bash
# Requests per second of one nginx location limited by the module against
# the same static file unlimited, in the same run, alternating. Loopback
# only; bounded in time. Prints figures; asserts nothing.
#
#   bench/wrk-compare.sh [MODULE_SO] [SECONDS_PER_ROUND] [ROUNDS]

set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
module=$(realpath "${1:-$here/build/ngx_http_redis_ratelimit_module.so}")
seconds=${2:-5}
rounds=${3:-3}

dir=$(mktemp -d)
chmod 755 "$dir"
redis_port=$((20000 + RANDOM % 10000))
http_port=$((redis_port + 1))

cleanup() {
    [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
    redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
    sleep 0.3
    rm -rf "$dir"
}
trap cleanup EXIT

mkdir -p "$dir/html"
echo "hello" > "$dir/html/index.html"
chmod -R 755 "$dir/html"

redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
    --appendonly no --daemonize yes --logfile "$dir/redis.log"

cat > "$dir/nginx.conf" <<CONF
load_module $module;
worker_processes 1;
error_log $dir/error.log;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    redis_ratelimit_server 127.0.0.1:$redis_port;
    # every request passes: measures the cost of asking Redis
    redis_ratelimit_zone \$arg_k zone=bench rate=1000000000r/s;
    server {
        listen 127.0.0.1:$http_port reuseport;
        root $dir/html;
        location /bare/ { alias $dir/html/; }
        location /limited/ { alias $dir/html/; redis_ratelimit zone=bench; }
    }
}
CONF

sleep 0.3
nginx -c "$dir/nginx.conf"
sleep 0.5

# 10,000 keys, one per request in turn
cat > "$dir/keys.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", wrk.path .. "?k=" .. (n % 10000))
end
LUA

rps() {
    wrk -t1 -c64 -d"${seconds}s" -s "$dir/keys.lua" \
        "http://127.0.0.1:$http_port/$1/" | awk '/Requests\/sec/ {print $2}'
}

echo "round  bare_rps  limited_rps  ratio"
for round in $(seq 1 "$rounds"); do
    bare=$(rps bare)
    limited=$(rps limited)
    ratio=$(awk -v a="$limited" -v b="$bare" 'BEGIN { printf "%.2f", a / b }')
    echo "$round  $bare  $limited  $ratio"
done

redis-cli -p "$redis_port" info commandstats | grep -E "evalsha" || true
