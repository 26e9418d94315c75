#!/bin/bash
# Moves the flat src/core/ and tests/ into folders by subsystem (issue 26),
# with git mv, and rewrites the #include lines to the new paths: a core file
# as its path under src/core/ ("engine/engine.hpp", "api/rrl_conf.h"), a
# test's helper as its path from the top ("tests/support/redis_server.hpp").
#
# Every file directly in src/core/ or tests/ must have a row in the tables
# below (by stem, so that foo.hpp and foo.cpp go together; a whole file
# name takes precedence over its stem): a file without one stops the script
# before anything moves, with its name. A row whose file is not there is
# skipped. A test X_test.cpp goes where the core's X goes, under tests/unit/,
# unless the test table says otherwise. tests/fuzz/ stays.
#
# The build files (CMakeLists.txt, config) and t/config_syntax.t find the
# sources in any folder; the script only checks that they do. Run it on a
# clean work tree, then build, test and commit (it stages what it did):
#
#   tools/move-core.sh && git commit -qm "core in folders (issue 26)"
#
# On a tree already moved it moves nothing and rewrites nothing.

set -euo pipefail

top=$(git rev-parse --show-toplevel)
cd "$top"

# The core: folder, then the stems (or file names) that go there.
#   api/       the C API: the headers the shim includes (rrl*.h)
#   api/wrap/  their extern "C" wrappers (capi_*.cpp) and their guard
#   conf/      the directives' grammar, shared memory sizes, TLS contexts
#   script/    algorithms, rates, costs, keys, slots, SHA-1, the script,
#              its call's arguments and replies, delay
#   decide/    a request's decision, what it shows (headers, variables,
#              problem+json), the log callback
#   engine/    the only folder that includes hiredis: the engine, its
#              nodes, batches, calls, RESP, retries, breaker, backoff,
#              handshake, replies owed
#   topology/  Cluster slots, Sentinel's primary, redirects, addresses,
#              the refresh of the topology, the nodes' use
#   local/     the deny cache and the local fallback
#   lease/     leases and settlement
#   metrics/   the counters and the exposition
core_table='
api       rrl rrl_backoff rrl_call rrl_call_args rrl_conf rrl_decision
          rrl_deny_cache rrl_engine rrl_handshake rrl_lease rrl_lease_call
          rrl_local_zone rrl_metrics_count rrl_node_use rrl_primary
          rrl_refresher rrl_reply_count rrl_settle rrl_shown rrl_slot_map
          rrl_tls rrl_topology_answer rrl_request
api/wrap  capi capi_backoff capi_call capi_call_args capi_conf capi_decision
          capi_deny_cache capi_engine capi_handshake capi_lease
          capi_lease_call capi_local_zone capi_metrics_count capi_node_use
          capi_primary capi_refresher capi_reply_count capi_settle
          capi_shown capi_slot_map capi_tls capi_topology_answer
          capi_request
conf      conf_word limit_conf server_conf shm_conf value_conf zone_conf tls
script    algorithm rate cost key slot sha1 script call_args call_reply
          script_reply delay small_vector
decide    decision shown fields problem log request
engine    engine engine_batches engine_node engine_topology batch
          open_batches call_plan resp retry breaker backoff handshake
          owed_replies
topology  topology_replies topology_fault slot_map refresher primary
          node_use address redis_errors
local     local_algorithms local_zone deny_entry deny_cache
lease     lease settle
metrics   metrics metrics_count
'

# The tests: folder (under tests/), then the stems (or file names) that do
# not follow the core's X -> unit/<X's folder>.
#   script/   against a real redis-server: the script, and the local and
#             deny-cache arithmetic checked against it
#   engine/   the engine's harness and the tests that drive it
#   support/  helpers of tests in several folders
test_table='
script        script_fixture script_test script_algorithms_test
              script_batch_test script_bounds_test script_lease_test
              script_overrides_test script_release_test script_settle_test
              script_sliding_log_test deny_entry_test local_algorithms_test
engine        engine_harness engine_fixture engine_test engine_breaker_test
              engine_cluster_test engine_harness_test engine_redis_test
              engine_sentinel_test
support       redis_server call_limit
unit/conf     conf_parse
unit/script   sha1_reference overrides_test
unit/engine   call_probe_test
unit/topology cluster_test
unit/lease    lease_call_test
'

die() { echo "move-core: $*" >&2; exit 1; }

# table TEXT: "key folder" lines
table() {
    awk '/^[^ ]/ { dir = $1; for (i = 2; i <= NF; i++) print $i, dir; next }
         NF { for (i = 1; i <= NF; i++) print $i, dir }' <<< "$1"
}

declare -A core_dir test_dir
while read -r k d; do core_dir[$k]=$d; done < <(table "$core_table")
while read -r k d; do test_dir[$k]=$d; done < <(table "$test_table")

[ -z "$(git status --porcelain --untracked-files=no)" ] \
    || die "the work tree has changes: commit or stash them first"
grep -q 'GLOB_RECURSE core_sources' CMakeLists.txt \
    && grep -q 'find "$ngx_addon_dir/src/core"' config \
    && grep -q 'src/core/{,\*/,\*/\*/}\*.cpp' t/config_syntax.t \
    || die "CMakeLists.txt, config and t/config_syntax.t do not find" \
           "sources in folders yet"

# where each flat file goes; none moves unless all have a place
declare -A dest=()
missing=()
for f in $(git ls-files src/core tests | grep -E '^(src/core|tests)/[^/]+$'); do
    name=${f##*/}
    stem=${name%.*}
    if [ "${f%%/*}" = src ]; then
        d=${core_dir[$name]:-${core_dir[$stem]:-}}
        [ -n "$d" ] && dest[$f]=src/core/$d/$name || missing+=("$f")
    else
        d=${test_dir[$name]:-${test_dir[$stem]:-}}
        if [ -z "$d" ] && [[ $stem == *_test ]]; then
            c=${core_dir[${stem%_test}]:-}
            [ -n "$c" ] && d=unit/$c
        fi
        [ -n "$d" ] && dest[$f]=tests/$d/$name || missing+=("$f")
    fi
done
[ ${#missing[@]} -eq 0 ] \
    || die "no folder for: ${missing[*]} (add them to the tables)"

for f in $(printf '%s\n' "${!dest[@]}" | sort); do
    mkdir -p "$(dirname "${dest[$f]}")"
    git mv "$f" "${dest[$f]}"
done
echo "move-core: moved ${#dest[@]} files"

# #include "NAME" -> the file's new path, for every core file and every
# test helper (a header of tests/ outside tests/fuzz/)
map=$(mktemp)
trap 'rm -f "$map"' EXIT
git ls-files src/core | grep -E '\.(h|hpp)$' | sed 's|^src/core/||' > "$map"
git ls-files tests | grep -E '\.(h|hpp)$' | grep -v '^tests/fuzz/' >> "$map"
dups=$(sed 's|.*/||' "$map" | sort | uniq -d)
[ -z "$dups" ] || die "two headers of one name: $dups"

git ls-files src/core src/ngx tests tools/simulate \
    | grep -E '\.(c|h|cpp|hpp)$' \
    | xargs perl -i -ne '
        BEGIN {
            open my $m, "<", shift @ARGV or die;
            while (<$m>) { chomp; (my $n = $_) =~ s{.*/}{}; $to{$n} = $_ }
        }
        s{^(\s*#\s*include\s+)"([^"/]+)"}{
            exists $to{$2} ? qq($1"$to{$2}") : qq($1"$2")
        }e;
        print' "$map"
echo "move-core: rewrote $(git diff --name-only | wc -l) files' includes"
git add -u src tests tools
