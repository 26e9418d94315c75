# shellcheck shell=bash
# Sourced by the scripts that add a suite to apt: apt_source FILE TYPES
# SUITE COMMENT writes the deb822 sources FILE (unless it is there) for
# TYPES ("deb", "deb-src") of SUITE's main, from the archive that
# /etc/apt/sources.list.d/debian.sources names (Debian's own by default),
# with Debian's keyring; the caller runs apt-get update. Uses ${sudo[@]}.

# shellcheck disable=SC2154 # sudo is the caller's
apt_source() {
    local file=$1 types=$2 suite=$3 comment=$4 uri
    [ -f "$file" ] && return 0
    uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources \
          2>/dev/null || true)
    uri=${uri:-http://deb.debian.org/debian}
    echo "adding $file ($types $uri $suite main)"
    printf '%s\n' \
        "# $comment" \
        "Types: $types" \
        "URIs: $uri" \
        "Suites: $suite" \
        "Components: main" \
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" \
        | "${sudo[@]}" tee "$file" > /dev/null
}
