#!/bin/bash
# Builds the core, the unit tests and the module into BUILD_DIR (build/).
# RRL_SANITIZE=1 builds everything with ASan and UBSan. RRL_HIREDIS_ROOT=DIR
# builds against the hiredis installed under DIR (scripts/hiredis.sh),
# linked statically; a build dir keeps the hiredis it was first given.
# RRL_TARGET=module builds that target alone (the module, without the unit
# tests).
#
#   scripts/build.sh [BUILD_DIR]

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}

hiredis=()
if [ -n "${RRL_HIREDIS_ROOT:-}" ]; then
    hiredis=(-DRRL_HIREDIS_ROOT="$(realpath "$RRL_HIREDIS_ROOT")")
fi

cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRRL_SANITIZE="${RRL_SANITIZE:-0}" "${hiredis[@]}" > /dev/null
cmake --build "$build" -j "$(nproc)" ${RRL_TARGET:+--target "$RRL_TARGET"}
