#!/bin/bash
# Installs, from Debian 12's own packages, whatever the build, the demo and
# the tests need and this machine lacks. Does nothing when all is there.

set -euo pipefail

packages=(
    build-essential cmake pkg-config curl
    nginx nginx-dev libhiredis-dev redis-server
    debhelper
    googletest libgtest-dev
    perl libtest-redisserver-perl
    clang libclang-rt-14-dev
    wrk
    prometheus
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null \
            | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "installing: ${missing[*]}"

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    > /dev/null
