#!/bin/bash
# Builds the core, the unit tests and the module into BUILD_DIR (build/).
# RRL_SANITIZE=1 builds everything with ASan and UBSan.
#
#   scripts/build.sh [BUILD_DIR]

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}

cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRRL_SANITIZE="${RRL_SANITIZE:-0}" > /dev/null
cmake --build "$build" -j "$(nproc)"
