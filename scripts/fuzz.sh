#!/bin/bash
# Fuzzes the core's C API with libFuzzer (ASan + UBSan): the targets in
# tests/fuzz/ (fuzz_reply, fuzz_config, fuzz_key), each for
# RRL_FUZZ_SECONDS (60) on a copy of its seed corpus in
# tests/fuzz/corpus/<target>/, so the repository is left as it is; as many
# targets at a time as there are cores (RRL_FUZZ_JOBS), each on one. Any
# crash, leak, timeout, sanitizer report or broken invariant fails the run;
# the input is kept and its path printed.
#
# The targets need clang, so they are built in a build dir of their own,
# configured with CC=clang CXX=clang++ and -DRRL_FUZZ=ON (build-fuzz/, or
# RRL_FUZZ_BUILD); only the `fuzz` target is built there.
#
#   scripts/fuzz.sh            fuzz every target
#   scripts/fuzz.sh --merge    and then add the inputs that found new
#                              coverage to tests/fuzz/corpus/<target>/, if it
#                              stays under 200 files and 200 KB
#
# Reproduce a crash: build-fuzz/fuzz/<target> <crash-file>

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

build=${RRL_FUZZ_BUILD:-$top/build-fuzz}
seconds=${RRL_FUZZ_SECONDS:-60}
merge=0
if [ "${1:-}" = --merge ]; then
    merge=1
fi

max_files=200
max_kb=200

echo "== fuzz build ($build)"
mkdir -p "$build"
if ! { CC=clang CXX=clang++ cmake -S "$top" -B "$build" \
            -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRRL_FUZZ=ON \
        && cmake --build "$build" --target fuzz -j "$(nproc)"; } \
        > "$build/fuzz-build.log" 2>&1; then
    cat "$build/fuzz-build.log"
    echo "fuzz: build failed"
    exit 1
fi

# Own sanitizer settings (scripts/test.sh exports ASan ones for nginx).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

work=$(mktemp -d "${TMPDIR:-/tmp}/rrl-fuzz.XXXXXX")
targets=()
for src in tests/fuzz/fuzz_*.cpp; do
    targets+=("$(basename "$src" .cpp)")
done

# one target: its exit status in $dir/rc
fuzz_one() {
    local t=$1 dir=$work/$1 rc=0
    mkdir -p "$dir/corpus" "$dir/artifacts"
    if [ -d "tests/fuzz/corpus/$t" ]; then
        cp -R "tests/fuzz/corpus/$t/." "$dir/corpus/"
    fi
    "$build/fuzz/$t" -max_len=4096 -timeout=10 -max_total_time="$seconds" \
        -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
        "$dir/corpus" > "$dir/log" 2>&1 || rc=$?
    echo "$rc" > "$dir/rc"
}

fuzz_jobs=${RRL_FUZZ_JOBS:-$(nproc)}
running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$fuzz_jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    fuzz_one "$t" &
    running=$((running + 1))
done
wait

failed=()
for t in "${targets[@]}"; do
    dir=$work/$t
    rc=$(cat "$dir/rc" 2>/dev/null || echo 1)

    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log")
    cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$dir/log" | tail -n 1 || true)
    files=$(find "$dir/corpus" -type f | wc -l)

    if [ "$rc" -ne 0 ] || compgen -G "$dir/artifacts/*" > /dev/null; then
        failed+=("$t")
        echo "fuzz: $t FAILED (exit $rc); its report:"
        first=$(grep -nE 'runtime error|==ERROR|invariant failed|deadly signal|-timeout' \
                    "$dir/log" | head -n 1 | cut -d: -f1 || true)
        if [ -n "$first" ]; then
            sed -n "${first},\$p" "$dir/log" | grep -v '^stat::' | head -n 60
        else
            tail -n 40 "$dir/log"
        fi | sed 's/^/    /'
        for a in "$dir"/artifacts/*; do
            [ -e "$a" ] || continue
            echo "    input $a:"
            od -An -tx1 -v "$a" | head -n 16 | sed 's/^/     /'
        done
        continue
    fi
    echo "fuzz: $t: ${execs:-?} execs in ${seconds} s (${rate:-?}/s)," \
         "${cov:-cov: ?}, corpus $files files"

    if [ "$merge" = 1 ]; then
        keep=$dir/merged
        mkdir -p "$keep"
        if [ -d "tests/fuzz/corpus/$t" ]; then
            cp -R "tests/fuzz/corpus/$t/." "$keep/"
        fi
        "$build/fuzz/$t" -merge=1 -max_len=4096 -timeout=10 \
            "$keep" "$dir/corpus" > "$dir/merge.log" 2>&1
        n=$(find "$keep" -type f | wc -l)
        kb=$(( ($(find "$keep" -type f -printf "%s\n" | awk "{s+=\$1} END {print s+0}") + 1023) / 1024 ))
        if [ "$n" -le "$max_files" ] && [ "$kb" -le "$max_kb" ]; then
            mkdir -p "tests/fuzz/corpus/$t"
            cp -R "$keep/." "tests/fuzz/corpus/$t/"
            echo "fuzz: $t: corpus merged, now $n files, $kb KB"
        else
            echo "fuzz: $t: corpus not merged ($n files, $kb KB is too big)"
        fi
    fi
done

if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz: ${#targets[@]} targets, crash in: ${failed[*]} (inputs and" \
         "logs kept in $work)"
    exit 1
fi
rm -rf "$work"
echo "fuzz: ${#targets[@]} targets, no crash"
