#!/bin/bash
# Installs, from Debian 12's own packages, whatever the build, the demo and
# the tests need and this machine lacks. Does nothing when all is there.
#
# --demo: only what scripts/demo.sh needs (the build and a Redis), not the
# tests' and benchmarks' tools (clang, wrk, prometheus, debhelper...).
#
# RRL_VALKEY=1 also installs valkey-server 8 (and valkey-cli) from
# bookworm-backports, adding a sources file for it (the archive of
# /etc/apt/sources.list.d/debian.sources) if none names it: for the t/ suite
# against Valkey (RRL_REDIS_SERVER=valkey-server). Only when asked, so that a
# plain run adds no suite to the machine's sources.

set -euo pipefail

# shellcheck source=scripts/apt-source.sh
. "$(dirname "$0")/apt-source.sh"

# the build (CMake finds GoogleTest even for the module alone) and the demo
packages=(
    build-essential cmake pkg-config curl
    nginx nginx-dev libhiredis-dev libssl-dev redis-server
    googletest libgtest-dev
)
if [ "${1:-}" != --demo ]; then
    packages+=(
        debhelper
        perl libtest-redisserver-perl
        clang libclang-rt-14-dev
        wrk
        prometheus
    )
fi

backports=()
if [ "${RRL_VALKEY:-0}" = 1 ]; then
    backports+=(valkey-server valkey-tools)
fi

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for p in "${packages[@]}"; do
    if ! installed "$p"; then
        missing+=("$p")
    fi
done
missing_backports=()
for p in "${backports[@]}"; do
    if ! installed "$p"; then
        missing_backports+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ] && [ ${#missing_backports[@]} -eq 0 ]; then
    exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive

if [ ${#missing_backports[@]} -gt 0 ] \
        && ! grep -rqs "bookworm-backports" /etc/apt/sources.list \
                /etc/apt/sources.list.d/; then
    apt_source /etc/apt/sources.list.d/rrl-backports.sources deb \
        bookworm-backports \
        "bookworm-backports, for valkey-server (scripts/install-deps.sh)"
fi

"${sudo[@]}" apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
        > /dev/null
fi
if [ ${#missing_backports[@]} -gt 0 ]; then
    echo "installing from bookworm-backports: ${missing_backports[*]}"
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
        -t bookworm-backports "${missing_backports[@]}" > /dev/null
fi
