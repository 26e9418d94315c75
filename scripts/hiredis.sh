#!/bin/bash
# Builds hiredis 1.2.0 with TLS (hiredis_ssl) from Debian trixie's own
# source package and installs it into a private prefix under BUILD_DIR
# (build-hiredis1/): BUILD_DIR/hiredis/include/hiredis and
# BUILD_DIR/hiredis/lib (static and shared libraries). Does nothing when it
# is there already. Then, for example:
#
#   cmake -S . -B build-hiredis1 -DRRL_HIREDIS_ROOT=$PWD/build-hiredis1/hiredis
#   RRL_HIREDIS_ROOT=... ./configure --add-dynamic-module=...
#
# Debian 12 has only hiredis 0.14; the sources come through a deb-src line
# for trixie main in a sources file of its own (the archive of
# /etc/apt/sources.list.d/debian.sources), which adds no binary package.
#
#   scripts/hiredis.sh [BUILD_DIR]

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/apt-source.sh
. "$top/scripts/apt-source.sh"
build=$(realpath -m "${1:-$top/build-hiredis1}")
prefix=$build/hiredis
version=1.2.0

if [ -f "$prefix/lib/libhiredis.a" ] && [ -f "$prefix/lib/libhiredis_ssl.a" ] \
        && [ -f "$prefix/include/hiredis/hiredis_ssl.h" ] \
        && grep -q "HIREDIS_MAJOR 1" "$prefix/include/hiredis/hiredis.h"; then
    echo "hiredis: $version with TLS already in $prefix"
    exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive

# dpkg-source (dpkg-dev) unpacks the source package; libssl-dev for USE_SSL
missing=()
for p in dpkg-dev libssl-dev build-essential; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null \
            | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "hiredis: installing ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
        > /dev/null
fi

src_list=/etc/apt/sources.list.d/rrl-trixie-src.sources
if [ ! -f "$src_list" ]; then
    apt_source "$src_list" deb-src trixie \
        "trixie's sources, for scripts/hiredis.sh (hiredis 1.x); no binaries"
    "${sudo[@]}" apt-get update -qq
fi

scratch=$build/hiredis-src
rm -rf "$scratch"
mkdir -p "$scratch"
echo "hiredis: fetching the source package hiredis/trixie into $scratch"
if ! (cd "$scratch" && apt-get source -qq hiredis/trixie > source.log 2>&1); then
    # the lists may predate the deb-src line (or be stale): once more, fresh
    "${sudo[@]}" apt-get update -qq
    (cd "$scratch" && apt-get source -qq hiredis/trixie > source.log 2>&1) \
        || { cat "$scratch/source.log" >&2; exit 1; }
fi
dir=$(find "$scratch" -mindepth 1 -maxdepth 1 -type d -name 'hiredis-*' | head -n 1)
if [ -z "$dir" ] || ! grep -q "HIREDIS_MAJOR 1" "$dir/hiredis.h"; then
    echo "hiredis: no hiredis 1.x sources in $scratch" >&2
    exit 1
fi
found=$(awk '/define HIREDIS_(MAJOR|MINOR|PATCH)/ { v = v (v ? "." : "") $3 }
             END { print v }' "$dir/hiredis.h")
if [ "$found" != "$version" ]; then
    echo "hiredis: note: trixie has $found (expected $version)"
fi

# LIBRARY_PATH is the Makefile's install folder for the libraries, and some
# environments set it for the linker: it is given here, relative to PREFIX
echo "hiredis: building $found with USE_SSL=1 into $prefix"
env -u MAKEFLAGS -u MFLAGS make -s -C "$dir" -j "$(nproc)" USE_SSL=1 \
    > "$build/hiredis-make.log" 2>&1 \
    || { cat "$build/hiredis-make.log" >&2; exit 1; }
rm -rf "$prefix"
env -u MAKEFLAGS -u MFLAGS make -s -C "$dir" USE_SSL=1 PREFIX="$prefix" \
    LIBRARY_PATH=lib install >> "$build/hiredis-make.log" 2>&1 \
    || { cat "$build/hiredis-make.log" >&2; exit 1; }

for f in lib/libhiredis.a lib/libhiredis_ssl.a include/hiredis/hiredis.h \
         include/hiredis/hiredis_ssl.h; do
    if [ ! -f "$prefix/$f" ]; then
        echo "hiredis: $prefix/$f missing after make install" >&2
        exit 1
    fi
done
echo "hiredis: $found with TLS installed in $prefix"
