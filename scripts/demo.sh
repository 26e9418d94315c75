#!/bin/bash
# Installs what is missing, builds the module (alone: not the unit tests),
# and runs a demo on localhost: a Redis and an nginx with the module,
# limited to 5 requests per 10 seconds per client. Shows passes turning
# into 429s, waits Retry-After, and passes again. Everything it starts is
# stopped at the end (--keep leaves it up).

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
keep=0
[ "${1:-}" = "--keep" ] && keep=1

"$top/scripts/install-deps.sh" --demo
echo "building the module..."
mkdir -p "$top/build"
RRL_TARGET=module "$top/scripts/build.sh" "$top/build" \
    > "$top/build/build.log" 2>&1 \
    || { tail -30 "$top/build/build.log"; exit 1; }

dir=$(mktemp -d /tmp/redis-ratelimit-demo.XXXXXX)
chmod 755 "$dir"
redis_port=16390
http_port=18090

stop() {
    [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
    redis-cli -p "$redis_port" shutdown nosave > /dev/null 2>&1 || true
}

mkdir -p "$dir/html"
echo "hello from nginx" > "$dir/html/index.html"
chmod -R 755 "$dir/html"

cat > "$dir/nginx.conf" <<CONF
load_module $top/build/ngx_http_redis_ratelimit_module.so;
worker_processes 2;
error_log $dir/error.log notice;
pid $dir/nginx.pid;
events { worker_connections 1024; }
http {
    access_log $dir/access.log;
    redis_ratelimit_server 127.0.0.1:$redis_port timeout=100ms;
    redis_ratelimit_zone \$binary_remote_addr zone=per_client rate=5r/10s
                         algorithm=fixed_window;
    redis_ratelimit_log_level notice;
    server {
        listen 127.0.0.1:$http_port;
        root $dir/html;
        location / {
            redis_ratelimit zone=per_client;
            add_header X-RateLimit-Status \$redis_ratelimit_status always;
        }
    }
}
CONF

stop
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
    --appendonly no --daemonize yes --logfile "$dir/redis.log"
sleep 0.3
nginx -c "$dir/nginx.conf" -e "$dir/error.log"
sleep 0.5

[ $keep -eq 1 ] || trap stop EXIT

echo "redis on 127.0.0.1:$redis_port, nginx on http://127.0.0.1:$http_port/"
echo "limit: 5 requests per 10 s per client (fixed window), shared in Redis"
echo

request() {
    curl -s -o /dev/null -D - "http://127.0.0.1:$http_port/" | tr -d '\r' \
        | awk -v n="$1" '
            /^HTTP/ { status = $2 }
            /^X-RateLimit-Remaining/ { remaining = $2 }
            /^Retry-After/ { retry = $2 }
            END {
                line = sprintf("request %2d: %s  remaining=%s", n, status, remaining)
                if (retry != "") line = line "  Retry-After=" retry
                print line
                if (retry != "") print retry > "/dev/stderr"
            }' 2> "$dir/retry"
}

for i in $(seq 1 8); do
    request "$i"
done

wait_s=$(tail -1 "$dir/retry")
echo
echo "waiting ${wait_s}s, as Retry-After says..."
sleep "$wait_s"
echo

for i in $(seq 9 11); do
    request "$i"
done

echo
echo "from the error log:"
grep "limiting requests" "$dir/error.log" | tail -2 | sed 's/^/  /'

if [ $keep -eq 1 ]; then
    echo
    echo "left running: nginx -c $dir/nginx.conf, redis-server :$redis_port"
fi
