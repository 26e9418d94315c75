#!/bin/bash
# Prints how much of the C++ core (src/core/) the unit tests alone cover:
# builds the core and its GoogleTest tests with gcov into build-coverage/,
# runs them (ctest, no nginx, no t/), and prints gcovr's summary per file
# and in all (lines and branches). Fails when the unit tests cover less
# than RRL_COVERAGE_MIN percent (90) of the core's lines: every rule lives
# in the core so that it can be tested without nginx (issue 13).
#
#   scripts/coverage.sh [BUILD_DIR]

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build-coverage}
min=${RRL_COVERAGE_MIN:-90}
cd "$top"

scripts/install-deps.sh
if ! command -v gcovr > /dev/null; then
    sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
        --no-install-recommends gcovr > /dev/null
fi

cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DRRL_COVERAGE=ON \
    > /dev/null
cmake --build "$build" -j "$(nproc)" --target rrl_tests > /dev/null

find "$build" -name '*.gcda' -delete
ctest --test-dir "$build" -j "$((2 * $(nproc)))" > "$build/ctest.log" 2>&1 \
    || { tail -20 "$build/ctest.log"; exit 1; }
tail -3 "$build/ctest.log"

gcovr --root "$top" --filter "$top/src/core/" --object-directory "$build" \
    --exclude-unreachable-branches --print-summary --fail-under-line "$min" \
    || { echo "coverage: under $min% of src/core/'s lines"; exit 1; }
