#!/bin/bash
# Runs every test: the unit tests (GoogleTest, ctest) and the end-to-end
# tests (prove t/) against real redis-server and nginx processes. Installs
# what is missing and builds first.
#
# RRL_ASAN=1 also builds the core, the tests and the module with ASan and
# UBSan into build-asan/ and runs both suites again under them; any
# sanitizer report fails the run.
#
# RRL_COVERAGE=1 also prints the core's coverage by the unit tests alone
# and fails under 90% of its lines (scripts/coverage.sh).
#
# RRL_PACKAGE=1 also builds the Debian package (debian/), installs it,
# runs a request through the installed module and purges it again
# (scripts/package-test.sh).

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

scripts/install-deps.sh

# The shim's shape: layers without cycles, no file writing another's
# globals, no file over 700 lines. Issue 13 asks for 4,500 lines in all;
# this ceiling is today's size, below that, and only goes down.
echo "== the shim's shape"
perl scripts/check-shape.pl --max-total "${RRL_SHAPE_MAX_TOTAL:-4100}"

run_suites() {
    local build=$1

    echo "== unit tests ($build)"
    ctest --test-dir "$build" --output-on-failure

    echo "== end-to-end tests ($build)"
    RRL_MODULE="$build/ngx_http_redis_ratelimit_module.so" prove -r t/
}

echo "== build"
mkdir -p build
RRL_SANITIZE=0 scripts/build.sh build > build/build.log 2>&1 \
    || RRL_SANITIZE=0 scripts/build.sh build
run_suites build

if [ "${RRL_ASAN:-0}" = 1 ]; then
    echo "== build with ASan and UBSan"
    mkdir -p build-asan
    RRL_SANITIZE=1 scripts/build.sh build-asan > build-asan/build.log 2>&1 \
        || RRL_SANITIZE=1 scripts/build.sh build-asan

    reports=$(mktemp -d)
    chmod 777 "$reports"

    # nginx itself is not instrumented: the runtime is preloaded into it
    export RRL_NGINX_PRELOAD
    RRL_NGINX_PRELOAD=$(gcc -print-file-name=libasan.so)
    export ASAN_OPTIONS="detect_leaks=0:log_path=$reports/asan"
    export UBSAN_OPTIONS="print_stacktrace=1:log_path=$reports/ubsan"

    run_suites build-asan

    # each t/ file checks for reports too; this catches the unit tests'
    if compgen -G "$reports/*" > /dev/null; then
        echo "sanitizer reports:"
        cat "$reports"/*
        exit 1
    fi
fi
if [ "${RRL_COVERAGE:-0}" = 1 ]; then scripts/coverage.sh; fi
if [ "${RRL_PACKAGE:-0}" = 1 ]; then scripts/package-test.sh; fi
if [ "${RRL_FUZZ:-0}" = 1 ]; then scripts/fuzz.sh; fi
