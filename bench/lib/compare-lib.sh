# shellcheck shell=bash
# Sourced by bench/compare.sh: its shared pieces. The install of what is
# missing; the processes (Redis, each nginx instance, the cleanup of them
# all); the measuring (a target, one wrk run with the Redis and CPU figures
# around it, the rounds, the summaries, the tables and ratios). Functions
# and the targets' arrays only: they use the caller's variables (dir, here,
# module, tls_module, http_port, redis_port, tls_redis_port, proxy_pid, ns,
# veth_host, hz, rounds, seconds, nkeys, table_keys, steal) and its limiter() and
# locations(), which write an instance's configuration.

# shellcheck disable=SC2154 # the variables are the caller's

# ---------------------------------------------------------------- install

install_missing() {
    local missing=()
    [ -f /usr/lib/nginx/modules/ngx_http_lua_module.so ] \
        || missing+=(libnginx-mod-http-lua)
    [ -f /usr/lib/nginx/modules/ndk_http_module.so ] \
        || missing+=(libnginx-mod-http-ndk)
    [ -f /usr/share/lua/5.1/nginx/redis.lua ] || missing+=(lua-nginx-redis)
    command -v tc > /dev/null && command -v ip > /dev/null \
        || missing+=(iproute2)
    command -v wrk > /dev/null || missing+=(wrk)
    command -v nginx > /dev/null || missing+=(nginx)
    command -v redis-server > /dev/null || missing+=(redis-server)
    command -v redis-cli > /dev/null || missing+=(redis-tools)
    command -v curl > /dev/null || missing+=(curl)
    command -v cc > /dev/null || missing+=(gcc libc6-dev)
    [ ${#missing[@]} -eq 0 ] && return

    echo "installing: ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get install -y -qq "${missing[@]}" > /dev/null \
        || { "${sudo[@]}" apt-get update -qq \
             && "${sudo[@]}" apt-get install -y -qq "${missing[@]}" > /dev/null; }
    # the Lua packages add load_module lines to the system's configuration
    if "${sudo[@]}" nginx -t -q 2> /dev/null; then
        echo "system nginx -t: still passes"
    else
        echo "WARNING: the system nginx -t fails after the install:" >&2
        "${sudo[@]}" nginx -t >&2 || true
    fi
}

# ---------------------------------------------------------------- processes

cleanup() {
    trap - EXIT INT TERM
    local p
    for p in "$dir"/*/nginx.pid; do
        if [ -f "$p" ]; then kill "$(cat "$p")" 2> /dev/null || true; fi
    done
    redis-cli -p "$redis_port" shutdown nosave > /dev/null 2>&1 || true
    redis-cli -p "$tls_redis_port" shutdown nosave > /dev/null 2>&1 || true
    if [ -f "$dir/far-redis.pid" ]; then
        kill "$(cat "$dir/far-redis.pid")" 2> /dev/null || true
    fi
    if [ -n "$proxy_pid" ]; then kill "$proxy_pid" 2> /dev/null || true; fi
    sleep 0.5
    ip link del "$veth_host" 2> /dev/null || true
    ip netns del "$ns" 2> /dev/null || true
    rm -rf "$dir"
}

start_redis() { # ARGS...: redis-server (or a prefix) with its address
    "$@" --save '' --appendonly no --daemonize yes
}

start_nginx() { # NAME KIND [REDIS_HOST REDIS_PORT [SERVER PARAMETERS]]
    local name=$1 kind=$2 inst=$dir/$1 modules=
    mkdir -p "$inst"
    case $kind in
        peer) modules="load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;" ;;
        module|lease|settle_*) modules="load_module $module;" ;;
        tls) modules="load_module $tls_module;" ;;
    esac
    cat > "$inst/nginx.conf" <<CONF
$modules
worker_processes 1;
error_log $inst/error.log notice;
pid $inst/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
$(limiter "$kind" "${3:-}" "${4:-}" "${5:-}")
    server {
        listen 127.0.0.1:${http_port[$name]};
$(locations "$kind")
    }
}
CONF
    nginx -p "$inst/" -c "$inst/nginx.conf" -e "$inst/error.log"
}

worker_pid() { pgrep -P "$(cat "$dir/$1/nginx.pid")" | head -1; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$(worker_pid "$1")/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }   # utime + stime

headers() { # NAME PATH
    curl -s -o /dev/null -D - "http://127.0.0.1:${http_port[$1]}$2" | tr -d '\r'
}

# ---------------------------------------------------------------- measuring

# a target: an instance, a location, wrk's key argument, the Redis it uses
# and, with lease=, its zone (for the metrics). An instance in skipped (its
# reason) makes no target: run, table and the ratios leave it out.
declare -A t_inst t_path t_keys t_redis t_label t_zone t_settle t_cmds rss_before rss_after skipped

target() { # ID INSTANCE PATH KEYS REDIS(host:port or -) LABEL [LEASE_ZONE]
    [ -z "${skipped[$2]:-}" ] || return 0
    t_inst[$1]=$2 t_path[$1]=$3 t_keys[$1]=$4 t_redis[$1]=$5 t_label[$1]=$6
    t_zone[$1]=${7:-} t_settle[$1]='' t_cmds[$1]=''
}
settle_target() { # ID SETTLE_ZONE: the zone's settlements counted per run
    if has "$1"; then t_settle[$1]=$2; fi
}
cmds_target() { # ID...: Redis's commands, each, counted per run
    local id
    for id in "$@"; do
        if has "$id"; then t_cmds[$id]=1; fi
    done
}
has() { [ -n "${t_inst[$1]:-}" ]; }  # ID: a target made

# INSTANCE ZONE -> "lease redis taken renewed given_back refused": the
# zone's lease= counters in the instance's /metrics
lease_counts() {
    curl -s "http://127.0.0.1:${http_port[$1]}/metrics" | awk -v z="zone=\"$2\"" '
        BEGIN { split("from=\"lease\" from=\"redis\" event=\"taken\" event=\"renewed\" " \
                      "event=\"given_back\" event=\"refused\"", k, " ") }
        /^redis_ratelimit_lease/ && index($0, z) {
            for (i = 1; i <= 6; i++) if (index($0, k[i])) v[i] = $NF }
        END { printf "%d %d %d %d %d %d\n", v[1], v[2], v[3], v[4], v[5], v[6] }'
}

# INSTANCE ZONE -> "settled settle_failed": the zone's settlements in the
# instance's /metrics
settle_counts() {
    curl -s "http://127.0.0.1:${http_port[$1]}/metrics" | awk -v z="zone=\"$2\"" '
        /^redis_ratelimit_settlements_total/ && index($0, z) {
            if (index($0, "result=\"settled\"")) s = $NF
            if (index($0, "result=\"settle_failed\"")) f = $NF }
        END { printf "%d %d\n", s, f }'
}

# HOST:PORT -> "NAME calls usec" per command (INFO excluded)
redis_cmdstats() {
    redis-cli -h "${1%:*}" -p "${1#*:}" info commandstats | tr -d '\r' | awk -F'[:=,]' '
        /^cmdstat_/ && $1 != "cmdstat_info" { print substr($1, 9), $3, $5 }'
}

# HOST:PORT -> "evalsha commands cpu_seconds evalsha_usec"
redis_stats() {
    redis-cli -h "${1%:*}" -p "${1#*:}" info commandstats cpu | tr -d '\r' | awk -F'[:=,]' '
        /^cmdstat_/ { if ($1 != "cmdstat_info") all += $3
                      if ($1 == "cmdstat_evalsha") { evalsha = $3; usec = $5 } }
        /^used_cpu_(sys|user):/ { cpu += $2 }
        END { printf "%d %d %.6f %d\n", evalsha, all, cpu, usec }'
}

wrk_run() { # ID SECONDS -> wrk's output
    local url="http://127.0.0.1:${http_port[${t_inst[$1]}]}${t_path[$1]}"
    case ${plain:-}:${t_keys[$1]} in
        1:*[!0-9]*) wrk -t1 -c64 -d"$2s" --latency "$url?k=${t_keys[$1]}" ;;
        *) wrk -t1 -c64 -d"$2s" --latency -s "$dir/keys.lua" "$url" -- "${t_keys[$1]}" ;;
    esac
}

measure() { # ID: one run, appended to results/ID
    local id=$1 before=(0 0 0 0) after=(0 0 0 0) out worker t0 t1 l0 l1 s0 s1
    worker=$(worker_pid "${t_inst[$id]}")
    [ -z "${t_zone[$id]}" ] || l0=$(lease_counts "${t_inst[$id]}" "${t_zone[$id]}")
    [ -z "${t_settle[$id]}" ] || s0=$(settle_counts "${t_inst[$id]}" "${t_settle[$id]}")
    [ -z "${t_cmds[$id]}" ] || redis_cmdstats "${t_redis[$id]}" > "$dir/results/$id.cmds0"
    [ "${t_redis[$id]}" = - ] || read -r -a before <<< "$(redis_stats "${t_redis[$id]}")"
    t0=$(cpu_ticks "$worker")
    out=$(wrk_run "$id" "$seconds")
    t1=$(cpu_ticks "$worker")
    [ "${t_redis[$id]}" = - ] || read -r -a after <<< "$(redis_stats "${t_redis[$id]}")"
    if [ -n "${t_zone[$id]}" ]; then
        l1=$(lease_counts "${t_inst[$id]}" "${t_zone[$id]}")
        echo "$l0 $l1" | awk '{ print $7 - $1, $8 - $2, $9 - $3, $10 - $4, $11 - $5, $12 - $6 }' \
            >> "$dir/results/$id.lease"
    fi
    if [ -n "${t_cmds[$id]}" ]; then
        redis_cmdstats "${t_redis[$id]}" | awk '
            NR == FNR { c[$1] = $2; u[$1] = $3; next }
            { print $1, $2 - c[$1], $3 - u[$1] }' "$dir/results/$id.cmds0" - \
            >> "$dir/results/$id.cmds"
    fi
    if [ -n "${t_settle[$id]}" ]; then
        s1=$(settle_counts "${t_inst[$id]}" "${t_settle[$id]}")
        echo "$s0 $s1" | awk '{ print $3 - $1, $4 - $2 }' >> "$dir/results/$id.settle"
    fi
    echo "$out" >> "$dir/results/$id.wrk"
    echo "$out" | awk -v e="$((after[0] - before[0]))" -v c="$((after[1] - before[1]))" \
                      -v cpu0="${before[2]}" -v cpu1="${after[2]}" \
                      -v usec="$((after[3] - before[3]))" \
                      -v worker="$(awk -v t="$((t1 - t0))" -v hz="$hz" 'BEGIN { print t / hz }')" '
        function ms(v) {
            if (v ~ /us$/) return v / 1000
            if (v ~ /ms$/) return v + 0
            if (v ~ /m$/) return v * 60000
            return v * 1000
        }
        /^ +50%/ { p50 = ms($2) }
        /^ +99%/ { p99 = ms($2) }
        / requests in / { req = $1 }
        /^Requests\/sec/ { rps = $2 }
        /Non-2xx/ { non2xx = $NF }
        /Socket errors/ { errors = $0 }
        END { printf "%s %s %s %d %d %d %d %.6f %.2f %d\n", rps, p50, p99, req, non2xx, e, c,
                     cpu1 - cpu0, worker, usec
              if (errors != "") print errors > "/dev/stderr" }' \
        >> "$dir/results/$id" 2>> "$dir/results/$id.errors"
}

# "steal total" CPU ticks of the machine: steal is the time the hypervisor
# gave to others, a cause of noise on a VM
cpu_steal() { awk '/^cpu / { print $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

run() { # ID...: rounds, rotating the order, each after a warm-up of its
          # target (targets made): a round starts from the target's
          # steady state, not from its keys idle since its last round
          # (a lease= zone forgets a key's demand after 2 s idle)
    local ids=() n r i id s0
    for id in "$@"; do
        if has "$id"; then ids+=("$id"); fi
    done
    n=${#ids[@]}
    s0=$(cpu_steal)
    for id in "${ids[@]}"; do
        rss_before[$id]=$(rss_kb "${t_inst[$id]}")
    done
    for r in $(seq 0 $((rounds - 1))); do
        for i in $(seq 0 $((n - 1))); do
            id=${ids[$(((r + i) % n))]}
            wrk_run "$id" 1 > /dev/null
            measure "$id"
        done
    done
    for id in "${ids[@]}"; do
        rss_after[$id]=$(rss_kb "${t_inst[$id]}")
    done
    steal=$(echo "$s0 $(cpu_steal)" | awk '{ printf "%.1f", ($4 > $2 ? 100 * ($3 - $1) / ($4 - $2) : 0) }')
}

# ID -> "rps spread% p50 p99 rejected% worker_cpu_ms/1k evalsha/req cmds/req
#        redis_cpu_ms/1k": medians over the rounds; the spread is
#        (max - min) / median of req/s; the rest over all the requests
summary() {
    awk -v redis="${t_redis[$1]}" '
        function median(a, n,   i, j, t) {
            for (i = 2; i <= n; i++)
                for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        { n++; rps[n] = $1; p50[n] = $2; p99[n] = $3
          req += $4; non2xx += $5; evalsha += $6; cmds += $7; cpu += $8; worker += $9 }
        END {
            m = median(rps, n)
            printf "%.0f %.0f %.2f %.2f %.1f %.1f", m, m ? 100 * (rps[n] - rps[1]) / m : 0,
                   median(p50, n), median(p99, n), req ? 100 * non2xx / req : 0,
                   worker * 1e6 / req
            if (redis == "-") printf " - - -\n"
            else printf " %.3f %.2f %.3f\n", evalsha / req, cmds / req, cpu * 1e6 / req
        }' "$dir/results/$1"
}

rps_of() { summary "$1" | cut -d' ' -f1; }
p50_of() { summary "$1" | cut -d' ' -f3; }
ratio() { awk -v a="$(rps_of "$1")" -v b="$(rps_of "$2")" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
p50_ratio() { awk -v a="$(p50_of "$1")" -v b="$(p50_of "$2")" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }

# ID: what a lease= target's metrics say, over its measured runs
lease_line() {
    awk -v zone="${t_zone[$1]}" -v label="${t_label[$1]}" -v req="$(awk '{ r += $4 } END { print r }' "$dir/results/$1")" '
        { for (i = 1; i <= 6; i++) v[i] += $i }
        END { d = v[1] + v[2]; k = req ? 1000 / req : 0
              printf "  %s (%s): %.1f%% of requests decided from a lease (%d of %d); per 1,000" \
                     " requests: leases taken %.2f, renewed %.2f, given back %.2f, refused %.2f\n",
                     label, zone, d ? 100 * v[1] / d : 0, v[1], d, v[3] * k, v[4] * k, v[5] * k, v[6] * k }' \
        "$dir/results/$1.lease"
}

table() { # TITLE ID...
    local title=$1 id s
    shift
    echo
    echo "$title"
    echo "  wrk -t1 -c64, ${table_keys:-$nkeys} keys unless one key; $rounds round(s) x ${seconds} s, medians; CPU steal ${steal}%"
    printf '  %-27s %6s %6s %6s %7s %5s %9s %7s %8s %9s  %s\n' \
        "" "req/s" "spread" "p50" "p99" "rej" "nginx CPU" "EVALSHA" "Redis" "Redis CPU" "worker RSS kB" \
        "" "" "%" "ms" "ms" "%" "ms/1k req" "/req" "cmds/req" "ms/1k req" "before -> after"
    for id in "$@"; do
        has "$id" || continue
        read -r -a s <<< "$(summary "$id")"
        printf '  %-27s %6s %6s %6s %7s %5s %9s %7s %8s %9s  %s -> %s\n' "${t_label[$id]}" \
            "${s[@]}" "${rss_before[$id]}" "${rss_after[$id]}"
    done
    for id in "$@"; do
        if has "$id" && [ -n "${t_zone[$id]}" ]; then lease_line "$id"; fi
    done
}

ratios() { # BARE LIMIT_REQ PEER MODULE
    echo "  ratios (req/s): module/bare $(ratio "$4" "$1")  module/peer $(ratio "$4" "$3")  peer/bare $(ratio "$3" "$1")  limit_req/bare $(ratio "$2" "$1")"
}

lease_ratios() { # BARE MODULE LEASE
    if has "$3"; then
        echo "  ratios (req/s): module lease=/bare $(ratio "$3" "$1")  module lease=/exact $(ratio "$3" "$2")"
    else
        echo "  module lease=: skipped (${skipped[lease]})"
    fi
}

# ID -> "evalsha_usec_per_call entries_per_evalsha settled/req failed/req
#        evalsha_usec/req": over all its measured runs; entries are the
#        requests plus the settlements counted (each a check or a settle
#        entry of a batch)
settle_summary() {
    local settled=0 failed=0
    if [ -f "$dir/results/$1.settle" ]; then
        read -r settled failed <<< "$(awk '{ s += $1; f += $2 } END { print s + 0, f + 0 }' \
            "$dir/results/$1.settle")"
    fi
    awk -v s="$settled" -v f="$failed" '
        { req += $4; evalsha += $6; usec += $10 }
        END { printf "%.1f %.1f %.3f %.3f %.2f\n", evalsha ? usec / evalsha : 0,
                     evalsha ? (req + s) / evalsha : 0, req ? s / req : 0, req ? f / req : 0,
                     req ? usec / req : 0 }' \
        "$dir/results/$1"
}

# WITHOUT WITH NAME: the cost of settle= on the same load (same upstream)
settle_ratios() {
    local a b x y
    if ! has "$2"; then
        echo "  $3 with settle=: skipped"
        return
    fi
    read -r -a a <<< "$(summary "$1")"
    read -r -a b <<< "$(summary "$2")"
    read -r -a x <<< "$(settle_summary "$1")"
    read -r -a y <<< "$(settle_summary "$2")"
    awk -v label="$3" -v r0="${a[0]}" -v r1="${b[0]}" \
        -v p50a="${a[2]}" -v p50b="${b[2]}" -v p99a="${a[3]}" -v p99b="${b[3]}" \
        -v ea="${a[6]}" -v eb="${b[6]}" -v ca="${a[8]}" -v cb="${b[8]}" \
        -v ua="${x[0]}" -v ub="${y[0]}" -v na="${x[1]}" -v nb="${y[1]}" \
        -v settled="${y[2]}" -v failed="${y[3]}" -v qa="${x[4]}" -v qb="${y[4]}" '
        function r(p, q) { return q > 0 ? sprintf("%.2f", p / q) : "-" }
        BEGIN {
            printf "  %s, with/without: req/s %s, p50 %s, p99 %s;" \
                   " Redis CPU per request %.1f us vs %.1f us: %s%s;" \
                   " EVALSHA per request %.3f vs %.3f: %s\n",
                   label, r(r1, r0), r(p50b, p50a), r(p99b, p99a), cb, ca, r(cb, ca),
                   (ca > 0 && cb / ca > 1.3 ? " (OVER 1.3x)" : ""), eb, ea, r(eb, ea)
            printf "    in the script (EVALSHA usec) per request %.2f us vs %.2f us: %s;" \
                   " EVALSHA usec_per_call %.1f vs %.1f; entries (checks + settlements)" \
                   " per EVALSHA %.1f vs %.1f\n", qb, qa, r(qb, qa), ub, ua, nb, na
            printf "    settlements per request (metrics): settled %.3f, settle_failed %.3f\n",
                   settled, failed
        }'
}

# WITHOUT WITH: Redis's time per request by command (INFO commandstats;
# a script's own calls are counted in their commands and in EVALSHA's time;
# those under 0.005 a request left out),
# the script's Lua alone (EVALSHA's time less its calls') and per entry
cmds_profile() {
    has "$2" || return 0
    local id
    for id in "$1" "$2"; do
        awk -v req="$(awk '{ r += $4 } END { print r }' "$dir/results/$id")" '
            { c[$1] += $2; u[$1] += $3 }
            END { for (n in c) if (c[n] >= 0.005 * req) printf "%s %.3f %.2f\n", n, c[n] / req, u[n] / req }' \
            "$dir/results/$id.cmds" > "$dir/results/$id.profile"
    done
    awk -v e1="$(settle_summary "$1" | cut -d' ' -f2)" -v e2="$(settle_summary "$2" | cut -d' ' -f2)" '
        NR == FNR { c1[$1] = $2; u1[$1] = $3; names[$1] = 1; next }
        { c2[$1] = $2; u2[$1] = $3; names[$1] = 1 }
        END {
            line = "    per request, with vs without settle= (calls, us):"
            for (n in names) {
                line = line sprintf(" %s %.2f/%.2f %.2f/%.2f;", n, c2[n], c1[n], u2[n], u1[n])
                if (n != "evalsha") { n1 += u1[n]; n2 += u2[n] }
            }
            print line
            l1 = u1["evalsha"] - n1; l2 = u2["evalsha"] - n2
            printf "    the script less its commands (Lua) per request %.2f us vs %.2f us;" \
                   " per entry: EVALSHA %.2f us vs %.2f us, of it Lua %.2f us vs %.2f us\n",
                   l2, l1, e2 && c2["evalsha"] ? u2["evalsha"] / (c2["evalsha"] * e2) : 0,
                   e1 && c1["evalsha"] ? u1["evalsha"] / (c1["evalsha"] * e1) : 0,
                   e2 && c2["evalsha"] ? l2 / (c2["evalsha"] * e2) : 0,
                   e1 && c1["evalsha"] ? l1 / (c1["evalsha"] * e1) : 0
        }' "$dir/results/$1.profile" "$dir/results/$2.profile"
}
