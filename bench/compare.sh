#!/bin/bash
# Side by side, in one run: bare nginx (the ceiling), nginx's own limit_req
# (local, no Redis), the OpenResty peer (Debian's libnginx-mod-http-lua +
# lua-nginx-redis: access_by_lua, a pooled connection and one EVALSHA of
# this module's own script per request; bench/peer/rrl_peer.lua) and this
# module (same algorithm, same keys, same Redis), exact and with lease=10%
# (its own nginx: the same zones plus lease=, named *_lease). Prints
# figures; asserts nothing; never run by CI.
#
#   bench/compare.sh [--rounds N (3)] [--seconds S (4)]
#                    [--scenario a|o|b|c|d|e|s|t|all (all), or a
#                     list: "c e"]
#                    [--module SO] [--tls-module SO] [--plain]
#                    [--server redis-server|valkey-server]
#
# --server: the local Redis of every scenario but (d) and (t), which is
# redis-server; valkey-server (Valkey 8: scripts/install-deps.sh with
# RRL_VALKEY=1) for the same figures against Valkey.
#
# --plain: wrk without a Lua script, on one fixed URL (PATH?k=KEY), for the
# scenarios of one key, (c) and (e): so that wrk's Lua is not what limits
# (the worker's CPU per request is then the module's cost alone); the
# scenarios of 10,000 keys keep the script.
#
# Each nginx has one worker and serves the same 6-byte static file on
# loopback; wrk -t1 -c64 --latency runs against each in turn, round after
# round (the order rotates each round), each run after a 1 s warm-up of
# its target (a round starts from its steady state: a lease= zone's keys
# idle since its last run would start it cold, their demand forgotten). Per
# target: median requests/s over the rounds and their spread ((max - min)
# / median: how noisy the machine was), median p50 and p99 latency, the
# share of rejected (non-2xx) responses, the nginx worker's CPU per 1,000
# requests (utime + stime), Redis commands per request (INFO commandstats
# before/after each run: EVALSHA, and all commands, those the script runs
# included, INFO excluded), Redis CPU per 1,000 requests (used_cpu_user +
# used_cpu_sys) and the worker's RSS before and after the scenario; then
# the ratios module/bare, module/peer, peer/bare and limit_req/bare. For
# lease= targets, from the module's metrics over the measured runs: the
# share of requests decided from a lease, and leases taken, renewed, given
# back and refused per 1,000 requests. A module that refuses lease= (one
# built before it) runs the rest: its lease= targets are skipped, said so.
#
# Scenarios (10,000 keys: ?k=0..9999 in turn, pre-formatted in wrk's Lua):
#   t  TLS: scenario (a), fixed_window, by one module built with TLS
#      (--tls-module, default build-hiredis1/: scripts/hiredis.sh, then
#      RRL_HIREDIS_ROOT=build-hiredis1/hiredis scripts/build.sh
#      build-hiredis1) against one Redis on its TCP port and on its TLS port
#      (certificates made by openssl here): the ratio TLS/TCP
#   a  all requests pass: 1000r/s per key, fixed_window and sliding_window
#      (one run of eight targets; bare and limit_req are shared by both
#      tables); the module exact and with lease=10%: lease=/bare, lease=/exact
#   o  live overrides' cost: scenario (a)'s zones, the module alone, with
#      and without overrides=on (no override key set: every check does
#      its one GET in the same EVALSHA): Redis CPU and commands per request
#   b  three limits per request, sliding_window: per key 1000r/s, per key
#      60000r/m, one global 1000000000r/h (limit_req: 1000r/s, 1000r/s and
#      277778r/s, each with a burst of one second, nodelay)
#   c  one hot key (a bot) from all 64 connections, 10r/s: nearly all 429
#      (the module answers them from its deny cache, the default)
#   d  Redis 1 ms away: redis-server in a network namespace behind a veth
#      pair, with `tc qdisc ... netem delay 0.5ms` on both ends (0.5 ms each
#      way: a round trip of ~1 ms). Kernels built without netem (such as
#      this project's VM) get the documented equivalent instead: a small
#      delay proxy in the namespace (bench/delay-proxy.c, built with cc)
#      that holds every byte 0.5 ms each way without serializing anything.
#      The round trip is checked with `redis-cli --latency` and printed
#      (idle, on this VM: 0.25 ms to the local Redis, 1.4-1.6 ms through
#      the proxy, whose own hop adds the rest; its CPU is printed too).
#      Targets: bare, the module with the local Redis (as in a,
#      sliding_window), exact and with lease=, the peer and the module
#      with the far Redis, exact and with lease=: lease= 1 ms p50/bare p50,
#      and lease= 1 ms/lease= local req/s ((a)'s lease= target, run here)
#   e  one key shared by all 64 connections, below its limit (fixed_window,
#      1000000r/s: nothing rejected): bare, the module exact and with
#      lease=10%: req/s of each against bare
#   s  settle='s cost: every request through proxy_pass (keepalive 64) to
#      an upstream server in the same nginx (a static file with
#      X-Usage-Total-Tokens 30 or 170, by the last hex digit of its
#      $request_id: a mean of 100), limited with cost=100, in two nginx
#      alike but for settle=$upstream_http_x_usage_total_tokens (zones
#      *_settle: the same parameters, their own keys): token_bucket
#      (1000000r/h burst=1000000000: never full, never empty) and
#      fixed_window (1000000000r/s) over 500 keys, token_bucket on one
#      key; proxy_pass alone as the ceiling. Runs of 10 s unless
#      --seconds. Per pair, with/without: req/s, p50, p99, Redis CPU and
#      EVALSHA per request, EVALSHA's usec_per_call, entries (checks +
#      settlements) per EVALSHA (the batch size), the settlements per
#      request from the metrics (settled, settle_failed), Redis's time per
#      request by command (INFO commandstats: the script's GET and SET
#      too) and the script's Lua alone (EVALSHA's time less its
#      commands'), per request and per entry. A module that refuses
#      settle= runs the rows without it and says so.
# Defaults take about 12 minutes (36 targets x (3 x 4 s + 1 s) and 7 x (3
# x 10 s + 1 s), plus setup).
#
# Fairness: access_log off everywhere; rejections are logged at info by
# limit_req and by the module, below the error_log level (notice), so no
# line is written; the peer sends the module's headers (X-RateLimit-*,
# Retry-After), passes on a Redis failure after 100 ms as the module does,
# and keeps up to 64 idle connections in its pool (one per wrk connection).
# Requests name the file (/a-fw/index.html?k=N), so no index redirect runs
# access_by_lua twice. No process is pinned to a CPU: on 2 cores wrk, the
# worker and Redis share them, as a peer's would. Run it on a quiet
# machine: a spread of more than ~10% says it was not.
#
# Installs what is missing with apt-get (libnginx-mod-http-lua,
# libnginx-mod-http-ndk, lua-nginx-redis, which pulls in nginx-extras and
# its module .conf files in /etc/nginx/modules-enabled: our instances use
# their own nginx.conf, and the system's `nginx -t` is checked after an
# install). Needs root for the network namespace (scenario d).

set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/compare-lib.sh
. "$here/bench/lib/compare-lib.sh"
rounds=3
seconds=4
scenarios=all
seconds_given=
plain=
module=$here/build/ngx_http_redis_ratelimit_module.so
tls_module=$here/build-hiredis1/ngx_http_redis_ratelimit_module.so
server=redis-server

usage() { sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; }
bad_usage() { sed -n '/^#   bench\/compare.sh/,/^#$/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --seconds) seconds=$2; seconds_given=$2; shift 2 ;;
        --plain) plain=1; shift ;;
        --scenario) scenarios=$2; shift 2 ;;
        --module) module=$2; shift 2 ;;
        --tls-module) tls_module=$2; shift 2 ;;
        --server) server=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) bad_usage ;;
    esac
done

# a list is run in its order: --scenario "c e"
[ "$scenarios" != all ] || scenarios="a o b c d e s t"
for s in $scenarios; do
    case $s in a|o|b|c|d|e|s|t) ;; *) bad_usage ;; esac
done
case "$rounds$seconds" in
    *[!0-9]*) bad_usage ;;
esac
if [ "$rounds" -lt 1 ] || [ "$seconds" -lt 1 ]; then bad_usage; fi

module=$(realpath "$module")
[ -f "$module" ] || { echo "no module at $module: scripts/build.sh build" >&2; exit 1; }

nkeys=10000
settle_keys=500  # scenario (s): a few hundred API keys
delay_us=500    # each way: a round trip of 1 ms

install_missing

# ---------------------------------------------------------------- setup

dir=$(mktemp -d /tmp/rrl-compare.XXXXXX)
chmod 755 "$dir"
base=$((20000 + RANDOM % 9000))
redis_port=$base
declare -A http_port=(
    [bare]=$((base + 1)) [limit_req]=$((base + 2)) [peer]=$((base + 3))
    [module]=$((base + 4)) [peer_far]=$((base + 5)) [module_far]=$((base + 6))
    [tls_tcp]=$((base + 8)) [tls]=$((base + 9))
    [lease]=$((base + 12)) [lease_far]=$((base + 13))
    [settle_off]=$((base + 14)) [settle_on]=$((base + 15))
    [settle_off_up]=$((base + 16)) [settle_on_up]=$((base + 17))
)
far_port=$((base + 7))
tls_redis_port=$((base + 10))     # one Redis, its TCP and TLS ports
tls_port=$((base + 11))
ns=rrlb$$
veth_host=rrlb$$h
veth_ns=rrlb$$n
net=10.213.$((RANDOM % 250))
host_ip=$net.1
far_ip=$net.2
proxy_pid=
steal=
started=$(date +%s)
hz=$(getconf CLK_TCK)

trap cleanup EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

mkdir -p "$dir/html" "$dir/peer" "$dir/results"
printf 'hello\n' > "$dir/html/index.html"
cp "$here/bench/peer/rrl_peer.lua" "$dir/peer/"

# the module's script, exactly as tools/embed-lua.sh embeds it
for f in "$here"/lua/*.lua; do
    [ "$(basename "$f")" = ratelimit.lua ] || cat "$f"
done > "$dir/script.lua"
cat "$here/lua/ratelimit.lua" >> "$dir/script.lua"
sha=$(sha1sum "$dir/script.lua" | cut -d' ' -f1)

# wrk: ?k= cycles through N keys, or is always one name
cat > "$dir/keys.lua" <<'LUA'
local requests, n, count = {}, 0, 1
function init(args)
  local a = args[1] or "10000"
  if tonumber(a) then
    count = tonumber(a)
    for i = 1, count do
      requests[i] = wrk.format(nil, wrk.path .. "?k=" .. (i - 1))
    end
  else
    requests[1] = wrk.format(nil, wrk.path .. "?k=" .. a)
  end
end
function request()
  n = n % count + 1
  return requests[n]
end
LUA
chmod -R a+rX "$dir"

command -v "$server" > /dev/null || { echo "no $server" >&2; exit 1; }
start_redis "$server" --port "$redis_port" --bind 127.0.0.1 \
    --logfile "$dir/redis.log"

# ---------------------------------------------------------------- nginx

# scenario (s)'s instances: /s-none/ (settle_off only) /s-tb/ /s-fw/, all
# through proxy_pass, and /metrics
settle_locations() { # KIND
    local sfx='' settle='' a
    if [ "$1" = settle_on ]; then
        sfx=_settle
        # shellcheck disable=SC2016 # nginx's variable, written as is
        settle=' settle=$upstream_http_x_usage_total_tokens'
    else
        echo "        location /s-none/ { proxy_pass http://s_usage/; }"
    fi
    for a in tb fw; do
        cat <<CONF
        location /s-$a/ {
            redis_ratelimit zone=s_$a$sfx cost=100$settle;
            proxy_pass http://s_usage/;
        }
CONF
    done
    echo "        location = /metrics { redis_ratelimit_metrics; }"
}

# locations shared by every instance: /a-fw/ /a-sw/ /a-fwm/ /a-swm/ /o-fw/
# /o-sw/ /b/ /c/ /e/ (a-*m: lease= only, 60000r/m); (s)'s instances their own
locations() { # KIND
    local kind=$1 loc body
    case $kind in settle_*) settle_locations "$kind"; return ;; esac
    for loc in a-fw a-sw a-fwm a-swm o-fw o-sw b c e; do
        case $kind:$loc in
            bare:*) body= ;;
            limit_req:a-*) body="limit_req zone=lr_key burst=1000 nodelay;" ;;
            limit_req:b) body="limit_req zone=lr_key burst=1000 nodelay;
            limit_req zone=lr_key_m burst=1000 nodelay;
            limit_req zone=lr_global burst=277778 nodelay;" ;;
            limit_req:c) body="limit_req zone=lr_bot;" ;;
            limit_req:e) body="limit_req zone=lr_e burst=1000 nodelay;" ;;
            peer:a-fw) body="access_by_lua_block { rrl_peer.check(rrl_a_fw, ngx.var.arg_k) }" ;;
            peer:a-sw) body="access_by_lua_block { rrl_peer.check(rrl_a_sw, ngx.var.arg_k) }" ;;
            peer:b) body="access_by_lua_block { rrl_peer.check(rrl_b, ngx.var.arg_k) }" ;;
            peer:c) body="access_by_lua_block { rrl_peer.check(rrl_c, ngx.var.arg_k) }" ;;
            module:a-fw) body="redis_ratelimit zone=a_fw;" ;;
            module:a-sw) body="redis_ratelimit zone=a_sw;" ;;
            module:o-fw) body="redis_ratelimit zone=o_fw;" ;;
            module:o-sw) body="redis_ratelimit zone=o_sw;" ;;
            module:b) body="redis_ratelimit zone=b_key_s;
            redis_ratelimit zone=b_key_m;
            redis_ratelimit zone=b_global;" ;;
            module:c) body="redis_ratelimit zone=c_bot;" ;;
            module:e) body="redis_ratelimit zone=e_fw;" ;;
            lease:a-fw) body="redis_ratelimit zone=a_fw_lease;" ;;
            lease:a-sw) body="redis_ratelimit zone=a_sw_lease;" ;;
            lease:a-fwm) body="redis_ratelimit zone=a_fwm_lease;" ;;
            lease:a-swm) body="redis_ratelimit zone=a_swm_lease;" ;;
            lease:e) body="redis_ratelimit zone=e_fw_lease;" ;;
            tls:a-fw) body="redis_ratelimit zone=a_fw;" ;;
            *) body= ;;
        esac
        cat <<CONF
        location /$loc/ {
            alias $dir/html/;
            $body
        }
CONF
    done
    if [ "$kind" = lease ]; then
        echo "        location = /metrics { redis_ratelimit_metrics; }"
    fi
}

# the limiter's http-level lines
limiter() { # KIND REDIS_HOST REDIS_PORT [SERVER PARAMETERS]
    case $1 in
        bare) ;;
        limit_req) cat <<'CONF'
    limit_req_zone $arg_k zone=lr_key:10m rate=1000r/s;
    limit_req_zone $arg_k zone=lr_key_m:10m rate=60000r/m;
    limit_req_zone global zone=lr_global:1m rate=277778r/s;
    limit_req_zone $arg_k zone=lr_bot:1m rate=10r/s;
    limit_req_zone $arg_k zone=lr_e:1m rate=1000000r/s;
    limit_req_status 429;
    limit_req_log_level info;
CONF
            ;;
        peer) cat <<CONF
    lua_package_path "$dir/peer/?.lua;;";
    init_by_lua_block {
        rrl_peer = require "rrl_peer"
        rrl_peer.configure { host = "$2", port = $3, sha = "$sha" }
        rrl_a_fw = rrl_peer.limits {
            { zone = "a_fw", algorithm = "fixed_window", limit = 1000, period_ms = 1000 } }
        rrl_a_sw = rrl_peer.limits {
            { zone = "a_sw", algorithm = "sliding_window", limit = 1000, period_ms = 1000 } }
        rrl_b = rrl_peer.limits {
            { zone = "b_key_s", algorithm = "sliding_window", limit = 1000, period_ms = 1000 },
            { zone = "b_key_m", algorithm = "sliding_window", limit = 60000, period_ms = 60000 },
            { zone = "b_global", key = "global", algorithm = "sliding_window",
              limit = 1000000000, period_ms = 3600000 } }
        rrl_c = rrl_peer.limits {
            { zone = "c_bot", algorithm = "sliding_window", limit = 10, period_ms = 1000 } }
    }
CONF
            ;;
        module|tls) cat <<CONF
    redis_ratelimit_server $2:$3 ${4:-};
    redis_ratelimit_zone \$arg_k zone=a_fw rate=1000r/s algorithm=fixed_window;
    redis_ratelimit_zone \$arg_k zone=a_sw rate=1000r/s algorithm=sliding_window;
    redis_ratelimit_zone \$arg_k zone=b_key_s rate=1000r/s;
    redis_ratelimit_zone \$arg_k zone=b_key_m rate=60000r/m;
    redis_ratelimit_zone global zone=b_global rate=1000000000r/h;
    redis_ratelimit_zone \$arg_k zone=c_bot rate=10r/s;
    redis_ratelimit_zone \$arg_k zone=e_fw rate=1000000r/s algorithm=fixed_window;
    redis_ratelimit_log_level info;
CONF
            # scenario (o), in the module's own build only
            [ "$1" = tls ] || cat <<'CONF'
    redis_ratelimit_zone $arg_k zone=o_fw rate=1000r/s algorithm=fixed_window overrides=on;
    redis_ratelimit_zone $arg_k zone=o_sw rate=1000r/s algorithm=sliding_window overrides=on;
CONF
            ;;
        settle_off|settle_on)
            local sfx=
            if [ "$1" = settle_on ]; then sfx=_settle; fi
            cat <<CONF
    redis_ratelimit_server $2:$3;
    redis_ratelimit_zone \$arg_k zone=s_tb$sfx rate=1000000r/h burst=1000000000 algorithm=token_bucket;
    redis_ratelimit_zone \$arg_k zone=s_fw$sfx rate=1000000000r/s algorithm=fixed_window;
    redis_ratelimit_log_level info;
    # the upstream: a second server of this nginx, reached with keepalive;
    # the usage it reports, 30 or 170, by its own request's \$request_id
    upstream s_usage {
        server 127.0.0.1:${http_port[${1}_up]};
        keepalive 64;
    }
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    map \$request_id \$s_usage_tokens {
        "~[0-7]\$" 30;
        default 170;
    }
    server {
        listen 127.0.0.1:${http_port[${1}_up]};
        location / {
            root $dir/html;
            add_header X-Usage-Total-Tokens \$s_usage_tokens always;
        }
    }
CONF
            ;;
        lease) cat <<CONF
    redis_ratelimit_server $2:$3;
    redis_ratelimit_zone \$arg_k zone=a_fw_lease rate=1000r/s algorithm=fixed_window lease=10%;
    redis_ratelimit_zone \$arg_k zone=a_sw_lease rate=1000r/s algorithm=sliding_window lease=10%;
    redis_ratelimit_zone \$arg_k zone=a_fwm_lease rate=60000r/m algorithm=fixed_window lease=10%;
    redis_ratelimit_zone \$arg_k zone=a_swm_lease rate=60000r/m algorithm=sliding_window lease=10%;
    redis_ratelimit_zone \$arg_k zone=e_fw_lease rate=1000000r/s algorithm=fixed_window lease=10%;
    redis_ratelimit_log_level info;
CONF
            ;;
    esac
}

sleep 0.3
redis-cli -p "$redis_port" ping > /dev/null
for name in bare limit_req module; do
    start_nginx "$name" "$name" 127.0.0.1 "$redis_port"
done
sleep 0.5

# the module loads its own script: the same SHA-1 proves the peer runs the
# same code
headers module "/a-sw/index.html?k=probe" > /dev/null
if [ "$(redis-cli -p "$redis_port" script exists "$sha")" = 1 ]; then
    same_script="yes: the module loaded the script with SHA-1 $sha"
else
    same_script="NO: the module did not load $sha (lua/ differs from the build?)"
fi
redis-cli -p "$redis_port" script load "$(cat "$dir/script.lua")" > /dev/null
start_nginx peer peer 127.0.0.1 "$redis_port"
sleep 0.5

for name in peer module; do
    if ! headers "$name" "/a-sw/index.html?k=probe" | grep -q '^X-RateLimit-Remaining'; then
        echo "$name: no X-RateLimit-Remaining: is it asking Redis?" >&2
        cat "$dir/$name/error.log" >&2
        exit 1
    fi
done

# lease= has its own nginx; a module that refuses lease= skips its targets
start_lease() { # NAME REDIS_HOST REDIS_PORT: 1 when it cannot serve
    if ! start_nginx "$1" lease "$2" "$3" 2> "$dir/$1.start"; then
        skipped[$1]="nginx did not start (a module without lease=?): $(grep -m1 emerg "$dir/$1.start" || true)"
        rm -rf "${dir:?}/$1"
        return 1
    fi
    sleep 0.5
    headers "$1" "/a-sw/index.html?k=probe" | grep -q '^X-RateLimit-Remaining' && return 0
    skipped[$1]="no X-RateLimit-Remaining from it: is it asking Redis?"
    return 1
}
start_lease lease 127.0.0.1 "$redis_port" || true

# ---------------------------------------------------------------- Redis 1 ms away

far_method=
far_rtt=
setup_far() {
    ip netns add "$ns" || return 1
    ip link add "$veth_host" type veth peer name "$veth_ns" || return 1
    ip link set "$veth_ns" netns "$ns"
    ip addr add "$host_ip/30" dev "$veth_host"
    ip link set "$veth_host" up
    ip netns exec "$ns" ip addr add "$far_ip/30" dev "$veth_ns"
    ip netns exec "$ns" ip link set "$veth_ns" up
    ip netns exec "$ns" ip link set lo up

    if tc qdisc add dev "$veth_host" root netem delay 0.5ms 2> /dev/null \
        && ip netns exec "$ns" tc qdisc add dev "$veth_ns" root netem delay 0.5ms
    then
        far_method="tc netem delay 0.5ms on both ends of a veth pair"
        start_redis ip netns exec "$ns" redis-server --port "$far_port" \
            --bind "$far_ip" --logfile "$dir/far-redis.log" \
            --pidfile "$dir/far-redis.pid"
    else
        tc qdisc del dev "$veth_host" root 2> /dev/null || true
        cc -O2 -o "$dir/delay-proxy" "$here/bench/delay-proxy.c" || return 1
        far_method="no netem in this kernel: bench/delay-proxy.c in the namespace, 0.5 ms each way, in front of Redis behind a veth pair"
        start_redis ip netns exec "$ns" redis-server --port "$far_port" \
            --bind 127.0.0.1 --logfile "$dir/far-redis.log" \
            --pidfile "$dir/far-redis.pid"
        ip netns exec "$ns" "$dir/delay-proxy" "$far_ip" "$far_port" \
            127.0.0.1 "$far_port" "$delay_us" 2> "$dir/delay-proxy.log" &
        proxy_pid=$!
    fi
    sleep 0.5
    redis-cli -h "$far_ip" -p "$far_port" ping > /dev/null || return 1
    # min max avg samples (ms)
    far_rtt=$(timeout -s INT 2 redis-cli -h "$far_ip" -p "$far_port" \
        --latency --raw 2> /dev/null || true)
    redis-cli -h "$far_ip" -p "$far_port" script load "$(cat "$dir/script.lua")" > /dev/null
    start_nginx peer_far peer "$far_ip" "$far_port"
    start_nginx module_far module "$far_ip" "$far_port"
    if [ -n "${skipped[lease]:-}" ]; then
        skipped[lease_far]=${skipped[lease]}
    else
        start_lease lease_far "$far_ip" "$far_port" || true
    fi
    sleep 0.5
    for name in peer_far module_far; do
        headers "$name" "/a-sw/index.html?k=probe" | grep -q '^X-RateLimit-Remaining' || return 1
    done
}

# ---------------------------------------------------------------- TLS

setup_tls() {
    [ -f "$tls_module" ] || return 1
    local t=$dir/tls
    mkdir -p "$t"
    (cd "$t" \
        && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bench-ca \
               -keyout ca.key -out ca.pem \
        && openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
               -keyout redis.key -out redis.csr \
        && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > ext \
        && openssl x509 -req -in redis.csr -CA ca.pem -CAkey ca.key \
               -CAcreateserial -days 2 -extfile ext -out redis.pem) \
        > "$t/openssl.log" 2>&1 || return 1
    chmod -R a+rX "$t"
    start_redis redis-server --port "$tls_redis_port" --bind 127.0.0.1 \
        --tls-port "$tls_port" --tls-cert-file "$t/redis.pem" \
        --tls-key-file "$t/redis.key" --tls-ca-cert-file "$t/ca.pem" \
        --tls-auth-clients no --logfile "$dir/tls-redis.log"
    sleep 0.3
    redis-cli -p "$tls_redis_port" ping > /dev/null || return 1
    start_nginx tls_tcp tls 127.0.0.1 "$tls_redis_port"
    start_nginx tls tls 127.0.0.1 "$tls_port" "tls tls_ca=$t/ca.pem"
    sleep 0.5
    for name in tls_tcp tls; do
        headers "$name" "/a-fw/index.html?k=probe" | grep -q '^X-RateLimit-Remaining' || return 1
    done
}

# ---------------------------------------------------------------- settle=

settle_note=
setup_settle() {
    start_nginx settle_off settle_off 127.0.0.1 "$redis_port" || return 1
    if ! start_nginx settle_on settle_on 127.0.0.1 "$redis_port" 2> "$dir/settle_on.start"; then
        skipped[settle_on]="nginx did not start (a module without settle=?): $(grep -m1 emerg "$dir/settle_on.start" || true)"
        rm -rf "${dir:?}/settle_on"
    fi
    sleep 0.5
    headers settle_off "/s-tb/index.html?k=probe" | grep -q '^X-RateLimit-Remaining' || return 1
    headers settle_off "/s-tb/index.html?k=probe" | grep -q '^X-Usage-Total-Tokens' || return 1
    [ -z "${skipped[settle_on]:-}" ] || return 0
    if ! headers settle_on "/s-tb/index.html?k=probe" | grep -q '^X-RateLimit-Remaining'; then
        skipped[settle_on]="no X-RateLimit-Remaining from it: is it asking Redis?"
        return 0
    fi
    sleep 0.3
    local counts
    read -r -a counts <<< "$(settle_counts settle_on s_tb_settle)"
    if [ "${counts[0]}" -ge 1 ]; then
        settle_note="a probe request was settled"
    else
        settle_note="WARNING: a probe request was not settled (settled ${counts[0]}, settle_failed ${counts[1]})"
    fi
}

local_rtt=$(timeout -s INT 2 redis-cli -p "$redis_port" --latency --raw 2> /dev/null || true)

estimate=0
for s in $scenarios; do
    case $s in a) estimate=$((estimate + 8)) ;; t) estimate=$((estimate + 2)) ;;
        o) estimate=$((estimate + 5)) ;; d) estimate=$((estimate + 6)) ;;
        e) estimate=$((estimate + 4)) ;; s) ;; *) estimate=$((estimate + 4)) ;; esac
done
estimate=$((estimate * rounds * (seconds + 1) + 15))
case " $scenarios " in
    *" s "*) estimate=$((estimate + 7 * rounds * (${seconds_given:-10} + 1))) ;;
esac
echo "bench/compare.sh: scenarios $scenarios, $rounds round(s) x $seconds s per target" \
     "((s): ${seconds_given:-10} s); about $estimate s"

for s in $scenarios; do
    case $s in
    a)
        target a.bare bare /a-fw/index.html $nkeys - "bare nginx"
        target a.limit_req limit_req /a-fw/index.html $nkeys - "nginx limit_req"
        target a.peer_fw peer /a-fw/index.html $nkeys "127.0.0.1:$redis_port" "OpenResty peer"
        target a.module_fw module /a-fw/index.html $nkeys "127.0.0.1:$redis_port" "this module"
        target a.peer_sw peer /a-sw/index.html $nkeys "127.0.0.1:$redis_port" "OpenResty peer"
        target a.module_sw module /a-sw/index.html $nkeys "127.0.0.1:$redis_port" "this module"
        # a lease ends with its window: at 1000r/s a key's next request
        # mostly comes in another 1 s window; 60000r/m is the same rate
        # with windows of a minute
        for a in fw sw; do
            target a.lease_$a lease /a-$a/index.html $nkeys "127.0.0.1:$redis_port" \
                "this module, lease=10%" a_${a}_lease
            target a.lease_${a}m lease /a-${a}m/index.html $nkeys "127.0.0.1:$redis_port" \
                "lease=10%, 60000r/m" a_${a}m_lease
        done
        run a.bare a.limit_req a.peer_fw a.module_fw a.lease_fw a.lease_fwm \
            a.peer_sw a.module_sw a.lease_sw a.lease_swm
        table "(a) all requests pass, fixed_window, 1000r/s per key" \
            a.bare a.limit_req a.peer_fw a.module_fw a.lease_fw a.lease_fwm
        ratios a.bare a.limit_req a.peer_fw a.module_fw
        lease_ratios a.bare a.module_fw a.lease_fw
        lease_ratios a.bare a.module_fw a.lease_fwm
        table "(a) all requests pass, sliding_window, 1000r/s per key (bare and limit_req: the same runs as above)" \
            a.bare a.limit_req a.peer_sw a.module_sw a.lease_sw a.lease_swm
        ratios a.bare a.limit_req a.peer_sw a.module_sw
        lease_ratios a.bare a.module_sw a.lease_sw
        lease_ratios a.bare a.module_sw a.lease_swm
        ;;
    o)
        target o.bare bare /a-fw/index.html $nkeys - "bare nginx"
        for a in fw sw; do
            target o.$a module /a-$a/index.html $nkeys "127.0.0.1:$redis_port" "module, $a"
            target o.${a}_on module /o-$a/index.html $nkeys "127.0.0.1:$redis_port" "module, $a, overrides=on"
        done
        run o.bare o.fw o.fw_on o.sw o.sw_on
        table "(o) scenario (a) with and without overrides=on (no override set: one GET per check)" \
            o.bare o.fw o.fw_on o.sw o.sw_on
        echo "  ratios (req/s): fw on/off $(ratio o.fw_on o.fw)  sw on/off $(ratio o.sw_on o.sw)"
        ;;
    b)
        target b.bare bare /b/index.html $nkeys - "bare nginx"
        target b.limit_req limit_req /b/index.html $nkeys - "nginx limit_req (3 zones)"
        target b.peer peer /b/index.html $nkeys "127.0.0.1:$redis_port" "OpenResty peer"
        target b.module module /b/index.html $nkeys "127.0.0.1:$redis_port" "this module"
        run b.bare b.limit_req b.peer b.module
        table "(b) three limits per request: per key 1000r/s, per key 60000r/m, global 1000000000r/h (sliding_window)" \
            b.bare b.limit_req b.peer b.module
        ratios b.bare b.limit_req b.peer b.module
        ;;
    c)
        target c.bare bare /c/index.html bot - "bare nginx"
        target c.limit_req limit_req /c/index.html bot - "nginx limit_req"
        target c.peer peer /c/index.html bot "127.0.0.1:$redis_port" "OpenResty peer"
        target c.module module /c/index.html bot "127.0.0.1:$redis_port" "this module"
        run c.bare c.limit_req c.peer c.module
        table "(c) one hot key (a bot) from all connections, 10r/s (sliding_window): nearly all 429" \
            c.bare c.limit_req c.peer c.module
        ratios c.bare c.limit_req c.peer c.module
        ;;
    t)
        if ! setup_tls; then
            echo
            echo "(t) skipped: no module with TLS at $tls_module (scripts/hiredis.sh, then RRL_HIREDIS_ROOT=build-hiredis1/hiredis scripts/build.sh build-hiredis1)"
            continue
        fi
        target t.tcp tls_tcp /a-fw/index.html $nkeys "127.0.0.1:$tls_redis_port" "module (TLS build), TCP"
        target t.tls tls /a-fw/index.html $nkeys "127.0.0.1:$tls_redis_port" "module (TLS build), TLS"
        run t.tcp t.tls
        table "(t) all requests pass, fixed_window, 1000r/s per key: one module, one Redis, TCP then TLS" \
            t.tcp t.tls
        echo "  ratio (req/s): TLS/TCP $(ratio t.tls t.tcp)"
        echo "  TLS module: $tls_module"
        ;;
    d)
        if ! setup_far; then
            echo
            echo "(d) skipped: no network namespace here (needs root and iproute2)"
            continue
        fi
        target d.bare bare /a-sw/index.html $nkeys - "bare nginx"
        target d.module_local module /a-sw/index.html $nkeys "127.0.0.1:$redis_port" "this module, Redis local"
        target d.peer_far peer_far /a-sw/index.html $nkeys "$far_ip:$far_port" "OpenResty peer, Redis 1 ms"
        target d.module_far module_far /a-sw/index.html $nkeys "$far_ip:$far_port" "this module, Redis 1 ms"
        target d.lease_local lease /a-sw/index.html $nkeys "127.0.0.1:$redis_port" \
            "lease=10%, Redis local" a_sw_lease
        target d.lease_far lease_far /a-sw/index.html $nkeys "$far_ip:$far_port" \
            "lease=10%, Redis 1 ms" a_sw_lease
        target d.lease_local_m lease /a-swm/index.html $nkeys "127.0.0.1:$redis_port" \
            "lease=10% 60000r/m, local" a_swm_lease
        target d.lease_far_m lease_far /a-swm/index.html $nkeys "$far_ip:$far_port" \
            "lease=10% 60000r/m, 1 ms" a_swm_lease
        run d.bare d.module_local d.lease_local d.lease_local_m d.peer_far d.module_far \
            d.lease_far d.lease_far_m
        table "(d) Redis 1 ms away, all requests pass, sliding_window, 1000r/s per key" \
            d.bare d.module_local d.lease_local d.lease_local_m d.peer_far d.module_far \
            d.lease_far d.lease_far_m
        echo "  ratios (req/s): module 1 ms/module local $(ratio d.module_far d.module_local)  module 1 ms/bare $(ratio d.module_far d.bare)  module 1 ms/peer 1 ms $(ratio d.module_far d.peer_far)  peer 1 ms/bare $(ratio d.peer_far d.bare)"
        if has d.lease_far && has d.lease_local; then
            echo "  lease= 1 ms: p50 $(p50_of d.lease_far) ms, bare's $(p50_of d.bare) ms: p50 lease= 1 ms/bare $(p50_ratio d.lease_far d.bare)  req/s lease= 1 ms/lease= local $(ratio d.lease_far d.lease_local) (the local one: (a)'s sliding_window lease= target, run here)"
            echo "  lease= 60000r/m 1 ms: p50 $(p50_of d.lease_far_m) ms: p50 /bare $(p50_ratio d.lease_far_m d.bare)  req/s 1 ms/local $(ratio d.lease_far_m d.lease_local_m)"
        else
            echo "  module lease=: skipped (${skipped[lease_far]:-${skipped[lease]:-}})"
        fi
        echo "  Redis 1 ms away: $far_method"
        echo "  redis-cli --latency to it, idle (min max avg samples, ms): ${far_rtt:-?}"
        ;;
    s)
        if ! setup_settle; then
            echo
            echo "(s) skipped: its nginx did not start or did not limit (see $dir/settle_off/error.log)"
            continue
        fi
        saved=$seconds
        seconds=${seconds_given:-10} table_keys=$settle_keys
        r=127.0.0.1:$redis_port
        target s.proxy settle_off /s-none/index.html "$settle_keys" - "proxy_pass alone"
        target s.tb settle_off /s-tb/index.html "$settle_keys" "$r" "token_bucket"
        target s.tb_settle settle_on /s-tb/index.html "$settle_keys" "$r" "token_bucket, settle="
        target s.fw settle_off /s-fw/index.html "$settle_keys" "$r" "fixed_window"
        target s.fw_settle settle_on /s-fw/index.html "$settle_keys" "$r" "fixed_window, settle="
        target s.tb1 settle_off /s-tb/index.html shared "$r" "token_bucket 1 key"
        target s.tb1_settle settle_on /s-tb/index.html shared "$r" "token_bucket 1 key, settle="
        settle_target s.tb_settle s_tb_settle
        settle_target s.fw_settle s_fw_settle
        settle_target s.tb1_settle s_tb_settle
        cmds_target s.tb s.tb_settle s.fw s.fw_settle s.tb1 s.tb1_settle
        run s.proxy s.tb s.tb_settle s.fw s.fw_settle s.tb1 s.tb1_settle
        table "(s) settle='s cost: cost=100 with and without settle=\$upstream_http_x_usage_total_tokens (30 or 170), all through proxy_pass" \
            s.proxy s.tb s.tb_settle s.fw s.fw_settle s.tb1 s.tb1_settle
        settle_ratios s.tb s.tb_settle "token_bucket, $settle_keys keys"
        cmds_profile s.tb s.tb_settle
        settle_ratios s.fw s.fw_settle "fixed_window, $settle_keys keys"
        cmds_profile s.fw s.fw_settle
        settle_ratios s.tb1 s.tb1_settle "token_bucket, one key"
        cmds_profile s.tb1 s.tb1_settle
        echo "  ratios (req/s): token_bucket/proxy_pass alone $(ratio s.tb s.proxy)  fixed_window/proxy_pass alone $(ratio s.fw s.proxy)"
        [ -z "$settle_note" ] || echo "  settle= probe: $settle_note"
        [ -z "${skipped[settle_on]:-}" ] || echo "  settle=: skipped: ${skipped[settle_on]}"
        if [ -f "$dir/settle_on/error.log" ]; then
            echo "  settle= warnings in its error.log: $(grep -c 'redis_ratelimit: settle' "$dir/settle_on/error.log" || true)," \
                 "e.g. $(grep -m1 'redis_ratelimit: settle' "$dir/settle_on/error.log" | sed 's/.*redis_ratelimit: //' || true)"
        fi
        seconds=$saved table_keys=
        ;;
    e)
        target e.bare bare /e/index.html shared - "bare nginx"
        target e.limit_req limit_req /e/index.html shared - "nginx limit_req"
        target e.module module /e/index.html shared "127.0.0.1:$redis_port" "this module, exact"
        target e.lease lease /e/index.html shared "127.0.0.1:$redis_port" \
            "this module, lease=10%" e_fw_lease
        run e.bare e.limit_req e.module e.lease
        table "(e) one key shared by all connections, below its limit: fixed_window, 1000000r/s (nothing rejected)" \
            e.bare e.limit_req e.module e.lease
        echo "  ratios (req/s): module exact/bare $(ratio e.module e.bare)  limit_req/bare $(ratio e.limit_req e.bare)  lease=/limit_req $(ratio e.lease e.limit_req)"
        lease_ratios e.bare e.module e.lease
        ;;
    esac
done

# ---------------------------------------------------------------- notes

echo
echo "notes:"
echo "  $(nproc) CPUs; $(nginx -v 2>&1 | sed 's/.*: //'); $server $("$server" --version | sed 's/.*v=\([^ ]*\).*/\1/');" \
     "lua module $(dpkg-query -W -f='${Version}' libnginx-mod-http-lua 2> /dev/null)," \
     "lua-nginx-redis $(dpkg-query -W -f='${Version}' lua-nginx-redis 2> /dev/null); wrk $(dpkg-query -W -f='${Version}' wrk 2> /dev/null)"
echo "  module: $module"
echo "  same script in the peer and the module: $same_script"
echo "  redis-cli --latency to the local Redis, idle (min max avg samples, ms): ${local_rtt:-?}"
echo "  rej %: non-2xx responses (429) of all responses; EVALSHA/req and Redis cmds/req:"
echo "  INFO commandstats deltas (the commands the script runs included, INFO not) over"
echo "  the requests wrk made; Redis CPU: used_cpu_user + used_cpu_sys delta"
errors=$(cat "$dir"/results/*.errors 2> /dev/null | sort | uniq -c | sed 's/^ */    /' || true)
[ -z "$errors" ] || { echo "  wrk socket errors:"; echo "$errors"; }
for log in "$dir"/*/error.log; do
    n=$(grep -c -E '\[(error|crit|alert|emerg)\]' "$log" || true)
    [ "$n" -eq 0 ] || echo "  $(basename "$(dirname "$log")"): $n error lines, e.g. $(grep -m1 -E '\[(error|crit|alert|emerg)\]' "$log")"
done
if [ -n "$proxy_pid" ]; then
    echo "  delay proxy CPU over the whole run: $(awk -v hz="$(getconf CLK_TCK)" \
        '{ printf "%.2f s", ($14 + $15) / hz }' "/proc/$proxy_pid/stat")"
fi
echo "  total time: $(($(date +%s) - started)) s"
