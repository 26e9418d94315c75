#!/bin/bash
# Builds the Debian package (debian/) from a temporary copy of the tree,
# installs it on this machine with apt-get, checks that Debian's stock
# nginx configuration still passes `nginx -t` with the module enabled by
# the package, then sends requests through the installed module to a real
# redis-server: 200 then 429 with rate=1r/m, and the rate limit headers.
#
# Leaves the machine as found: the package is purged at the end (unless it
# was installed before the test: then the freshly built one stays), and
# the redis-server and nginx it started are stopped. Needs root (or sudo)
# for apt-get.
#
#   scripts/package-test.sh [OUT_DIR]     OUT_DIR keeps the built .deb

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
pkg=libnginx-mod-http-redis-ratelimit
conf_available=/usr/share/nginx/modules-available/mod-http-redis-ratelimit.conf
conf_enabled=/etc/nginx/modules-enabled/50-mod-http-redis-ratelimit.conf

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive

# no "." before the random part: nginx's build maps sources to objects with
# unanchored seds (".c" -> ".o"), and a build dir like "...test.cXXXXX"
# (1 in 62) became "...test.oXXXXX", a path that does not exist
work=$(mktemp -d /tmp/rrl-package-test-XXXXXX)
chmod 755 "$work"
installed_before=0
if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null \
        | grep -q "install ok installed"; then
    installed_before=1
fi
we_installed=0

cleanup() {
    local rc=$?
    if [ -f "$work/nginx.pid" ]; then
        "${sudo[@]}" kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    fi
    if [ -n "${redis_pid:-}" ]; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
    if [ "$we_installed" = 1 ] && [ "$installed_before" = 0 ]; then
        echo "package: purging $pkg"
        "${sudo[@]}" apt-get purge -y -qq "$pkg" > "$work/purge.log" 2>&1 \
            || { cat "$work/purge.log"; rc=1; }
    fi
    if [ $rc -ne 0 ] && [ -f "$work/nginx/error.log" ]; then
        echo "== nginx error.log"
        cat "$work/nginx/error.log"
    fi
    rm -rf "$work"
    exit $rc
}
trap cleanup EXIT

fail() {
    echo "package: FAIL: $*" >&2
    exit 1
}

free_port() {
    perl -MIO::Socket::INET -e \
        'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1")
             ->sockport'
}

# 1. build, in a copy of the tree: dpkg-buildpackage writes debian/ and
#    obj-*/ into its tree and the .deb into the parent directory

echo "== package: build (dpkg-buildpackage -us -uc -b)"
mkdir "$work/src"
if git -C "$top" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    git -C "$top" ls-files -z -co --exclude-standard \
        | (cd "$top" && xargs -0 cp --parents -t "$work/src")
else
    tar -C "$top" --exclude='./build*' --exclude=./t/tmp -cf - . \
        | tar -C "$work/src" -xf -
fi
(cd "$work/src" && dpkg-buildpackage -us -uc -b) > "$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log"; fail "dpkg-buildpackage"; }

deb=$(ls "$work"/${pkg}_*.deb)
if [ -n "${1:-}" ]; then
    mkdir -p "$1"
    cp "$deb" "$1/"
fi
echo "built $(basename "$deb")"
dpkg-deb -f "$deb" Depends

depends=$(dpkg-deb -f "$deb" Depends)
for dep in nginx-abi- libhiredis libstdc++; do
    case "$depends" in
        *"$dep"*) ;;
        *) fail "Depends lacks $dep: $depends" ;;
    esac
done

# 2. install with apt, as a user would; the postinst enables the module

echo "== package: install (apt-get install ./$(basename "$deb"))"
we_installed=1
(cd "$work" && "${sudo[@]}" apt-get install -y -qq "./$(basename "$deb")") \
    > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install"; }

[ -f /usr/lib/nginx/modules/ngx_http_redis_ratelimit_module.so ] \
    || fail "no /usr/lib/nginx/modules/ngx_http_redis_ratelimit_module.so"
grep -qx 'load_module modules/ngx_http_redis_ratelimit_module.so;' \
    "$conf_available" || fail "$conf_available"
[ "$(readlink "$conf_enabled")" = "$conf_available" ] \
    || fail "$conf_enabled is not a link to $conf_available"

echo "== package: nginx -t (the stock /etc/nginx/nginx.conf)"
"${sudo[@]}" nginx -t -q || fail "nginx -t"

# 3. one end-to-end run through the installed module: a redis-server and
#    an nginx loading the module through the package's modules-enabled link
#    (leaky_bucket: no window edge can let the second request through)

echo "== package: requests through the installed module"
redis_port=$(free_port)
http_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
    --appendonly no --logfile "$work/redis.log" &
redis_pid=$!

mkdir -p "$work/nginx" "$work/html"
echo "OK" > "$work/html/index.html"
chmod -R 755 "$work/html"
cat > "$work/nginx/nginx.conf" <<CONF
include $conf_enabled;
worker_processes 1;
error_log $work/nginx/error.log info;
pid $work/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $work/nginx/client_body_temp;
    proxy_temp_path $work/nginx/proxy_temp;
    fastcgi_temp_path $work/nginx/fastcgi_temp;
    uwsgi_temp_path $work/nginx/uwsgi_temp;
    scgi_temp_path $work/nginx/scgi_temp;

    redis_ratelimit_server 127.0.0.1:$redis_port;
    redis_ratelimit_zone \$binary_remote_addr zone=pkg rate=1r/m
                         algorithm=leaky_bucket;

    server {
        listen 127.0.0.1:$http_port;
        root $work/html;
        location / {
            redis_ratelimit zone=pkg;
        }
    }
}
CONF

for _ in $(seq 50); do
    redis-cli -p "$redis_port" ping > /dev/null 2>&1 && break
    sleep 0.1
done
"${sudo[@]}" nginx -t -q -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" \
    || fail "nginx -t -c $work/nginx/nginx.conf"
"${sudo[@]}" nginx -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log"
for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$http_port/nothing-here" && break
    sleep 0.1
done
# that request was limited too: start from a fresh Redis
redis-cli -p "$redis_port" flushall > /dev/null

request() {
    curl -s -o /dev/null -D - "http://127.0.0.1:$http_port/" | tr -d '\r'
}
header() {
    awk -v h="$1" 'tolower($1) == tolower(h) ":" { print $2 }'
}

passed=0
failed=0
check() {
    local what=$1 got=$2 want=$3
    if [ "$got" = "$want" ]; then
        echo "ok - $what: $got"
        passed=$((passed + 1))
    else
        echo "not ok - $what: got '$got', want '$want'"
        failed=$((failed + 1))
    fi
}

first=$(request)
second=$(request)

check "first request: status" "$(echo "$first" | awk 'NR == 1 { print $2 }')" 200
check "first request: X-RateLimit-Limit" \
    "$(echo "$first" | header X-RateLimit-Limit)" 1
check "first request: X-RateLimit-Remaining" \
    "$(echo "$first" | header X-RateLimit-Remaining)" 0
check "second request: status" \
    "$(echo "$second" | awk 'NR == 1 { print $2 }')" 429
check "second request: X-RateLimit-Remaining" \
    "$(echo "$second" | header X-RateLimit-Remaining)" 0
retry=$(echo "$second" | header Retry-After)
check "second request: 1 <= Retry-After <= 60" \
    "$([ -n "$retry" ] && [ "$retry" -ge 1 ] && [ "$retry" -le 60 ] \
        && echo yes || echo "no ($retry)")" yes
reset=$(echo "$first" | header X-RateLimit-Reset)
now=$(date +%s)
check "first request: X-RateLimit-Reset within the next minute" \
    "$([ -n "$reset" ] && [ "$reset" -gt "$now" ] \
        && [ "$reset" -le $((now + 61)) ] && echo yes || echo "no ($reset)")" yes
check "error.log: no [alert], [crit] or [emerg]" \
    "$(grep -c '\[alert\]\|\[crit\]\|\[emerg\]' "$work/nginx/error.log" || true)" 0

check "copyright: the 2-clause BSD licence" \
    "$(grep -c '^License: BSD-2-clause$' \
        /usr/share/doc/libnginx-mod-http-redis-ratelimit/copyright || true)" 2

echo "package: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
