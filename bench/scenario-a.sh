# Sourced by bench/memory.sh and bench/profile.sh: the setup of scenario
# (a) of bench/compare.sh. Needs $module (the .so), $algorithm and $name
# (for the temporary directory); starts a Redis and an nginx with one
# worker serving the same 6-byte file at /bare/ and, limited by one zone
# of 1000r/s per key, at /limited/; writes $dir/keys.lua for wrk (10,000
# keys: ?k=0..9999 in turn). Sets dir, redis_port, http_port and worker,
# and a trap that stops both and removes $dir (KEEP=1 keeps them).

dir=$(mktemp -d "/tmp/rrl-$name.XXXXXX")
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
    redis_ratelimit_zone \$arg_k zone=a rate=1000r/s algorithm=$algorithm;
    server {
        listen 127.0.0.1:$http_port;
        location /bare/ { alias $dir/html/; }
        location /limited/ { alias $dir/html/; redis_ratelimit zone=a; }
    }
}
CONF
sleep 0.3
nginx -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log"
sleep 0.5
worker=$(pgrep -P "$(cat "$dir/nginx.pid")" | head -1)
