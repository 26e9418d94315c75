#!/bin/bash
# Builds the dynamic module against Debian's nginx-dev tree, with the flags
# Debian's nginx was configured with, so that its nginx loads the result.
# The tree is copied first: configure writes into the directory it runs in.
#
#   tools/build-module.sh SOURCE_DIR BUILD_DIR [CC_OPT] [LD_OPT]

set -euo pipefail

src=$(realpath "$1")
build=$(realpath -m "$2")
cc_opt=${3:--g -O2 -fPIC}
ld_opt=${4:--fPIC}
nginx_src=${NGINX_SRC:-/usr/share/nginx/src}

if [ ! -f "$nginx_src/conf_flags" ]; then
    echo "build-module: no $nginx_src/conf_flags (apt-get install nginx-dev)" >&2
    exit 1
fi

mkdir -p "$build"
rm -rf "$build/nginx-src"
cp -r "$nginx_src" "$build/nginx-src"
cd "$build/nginx-src"

# shellcheck disable=SC1091
. ./conf_flags

./configure --with-cc-opt="$cc_opt" --with-ld-opt="$ld_opt" \
    "${NGX_CONF_FLAGS[@]}" \
    --add-dynamic-module="$src" --builddir="$build/nginx-objs" \
    > "$build/nginx-configure.log" 2>&1 \
    || { cat "$build/nginx-configure.log" >&2; exit 1; }

# a make of its own, not a child of CMake's jobserver
env -u MAKEFLAGS -u MFLAGS make -s -j "$(nproc)" \
    -f "$build/nginx-objs/Makefile" modules
cp "$build/nginx-objs/ngx_http_redis_ratelimit_module.so" "$build/"
