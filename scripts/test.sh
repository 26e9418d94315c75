#!/bin/bash
# Runs every test: the unit tests (GoogleTest, ctest, 4 at a time) and
# the end-to-end tests (scripts/e2e.sh: prove t/, several files at a time,
# then the few timing-sensitive ones alone) against real redis-server and
# nginx processes. Installs what is missing and builds first. Each phase
# line shows the seconds since the start.
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
#
# RRL_HIREDIS1=1 also builds hiredis 1.2 with TLS from Debian trixie's
# source package (scripts/hiredis.sh), builds the core, the tests and the
# module against it (statically) into build-hiredis1/ and runs both suites
# with that build (the TLS tests, t/tls*.t, among them). With RRL_ASAN=1
# too, the module alone is also built against it with ASan and UBSan into
# build-hiredis1-asan/, and the TLS tests run again under them.
#
# RRL_VALKEY=1 also installs valkey-server 8 from bookworm-backports
# (scripts/install-deps.sh) and runs the end-to-end tests against it, with
# the plain build.

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

scripts/install-deps.sh

# The shim's shape: layers without cycles, no file writing another's
# globals, no file over 700 lines. Issue 13 asks for 4,500 lines in all;
# this ceiling is today's size (delay=, overrides and leases included),
# below that: a feature that needs more moves a rule into the core first.
phase() { echo "== $* [${SECONDS}s]"; }

phase "the shim's shape"
perl scripts/check-shape.pl --max-total "${RRL_SHAPE_MAX_TOTAL:-4442}"

run_suites() {
    local build=$1

    # each test is a process of its own, the script tests with a
    # redis-server of their own on a unix socket: they wait as much as they
    # compute
    phase "unit tests ($build)"
    ctest --test-dir "$build" --output-on-failure -j "$((2 * $(nproc)))"

    phase "end-to-end tests ($build)"
    RRL_MODULE="$build/ngx_http_redis_ratelimit_module.so" scripts/e2e.sh
}

phase "build"
mkdir -p build
RRL_SANITIZE=0 scripts/build.sh build > build/build.log 2>&1 \
    || RRL_SANITIZE=0 scripts/build.sh build
run_suites build

if [ "${RRL_VALKEY:-0}" = 1 ]; then
    phase "end-to-end tests against $(valkey-server --version | cut -d' ' -f1,3) (build)"
    RRL_REDIS_SERVER=valkey-server \
        RRL_MODULE="build/ngx_http_redis_ratelimit_module.so" scripts/e2e.sh
fi

if [ "${RRL_HIREDIS1:-0}" = 1 ]; then
    phase "build with hiredis 1.x"
    scripts/hiredis.sh build-hiredis1
    RRL_SANITIZE=0 RRL_HIREDIS_ROOT=build-hiredis1/hiredis \
        scripts/build.sh build-hiredis1 > build-hiredis1/build.log 2>&1 \
        || RRL_SANITIZE=0 RRL_HIREDIS_ROOT=build-hiredis1/hiredis \
            scripts/build.sh build-hiredis1
    run_suites build-hiredis1
fi

if [ "${RRL_ASAN:-0}" = 1 ]; then
    phase "build with ASan and UBSan"
    mkdir -p build-asan
    RRL_SANITIZE=1 scripts/build.sh build-asan > build-asan/build.log 2>&1 \
        || RRL_SANITIZE=1 scripts/build.sh build-asan

    reports=$(mktemp -d)
    chmod 777 "$reports"

    # nginx itself is not instrumented: the runtime is preloaded into it,
    # with libstdc++, else ASan's __cxa_throw finds no real one (nginx, in
    # C, loads libstdc++ only with the module) and aborts at a C++ throw
    # (the core's TLS context throws for a bad file, for nginx -t)
    export RRL_NGINX_PRELOAD
    RRL_NGINX_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so.6)"
    export ASAN_OPTIONS="detect_leaks=0:log_path=$reports/asan"
    export UBSAN_OPTIONS="print_stacktrace=1:log_path=$reports/ubsan"

    run_suites build-asan

    if [ "${RRL_HIREDIS1:-0}" = 1 ]; then
        phase "build with hiredis 1.x, ASan and UBSan (the module)"
        mkdir -p build-hiredis1-asan
        RRL_SANITIZE=1 RRL_HIREDIS_ROOT=build-hiredis1/hiredis RRL_TARGET=module \
            scripts/build.sh build-hiredis1-asan \
            > build-hiredis1-asan/build.log 2>&1 \
            || RRL_SANITIZE=1 RRL_HIREDIS_ROOT=build-hiredis1/hiredis \
                RRL_TARGET=module scripts/build.sh build-hiredis1-asan

        phase "TLS end-to-end tests (build-hiredis1-asan)"
        RRL_MODULE="build-hiredis1-asan/ngx_http_redis_ratelimit_module.so" \
            scripts/e2e.sh t/tls*.t
    fi

    # each t/ file checks for reports too; this catches the unit tests'
    if compgen -G "$reports/*" > /dev/null; then
        echo "sanitizer reports:"
        cat "$reports"/*
        exit 1
    fi
fi
if [ "${RRL_COVERAGE:-0}" = 1 ]; then phase "coverage"; scripts/coverage.sh; fi
if [ "${RRL_PACKAGE:-0}" = 1 ]; then phase "package"; scripts/package-test.sh; fi
if [ "${RRL_FUZZ:-0}" = 1 ]; then phase "fuzz"; scripts/fuzz.sh; fi
phase "done"
