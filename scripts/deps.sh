#!/bin/sh
# Installs the Debian packages bloomkit needs to build, test and benchmark. As root it installs what
# is missing; otherwise it prints the exact apt-get line to run and fails.
set -eu

PACKAGES="gcc g++ make cmake pkg-config clang libclang-rt-14-dev libxxhash-dev libcmocka-dev \
libbloom-dev redis-server redis-tools python3 python3-redis python3-pytest libhiredis-dev \
gnuplot-nox dpkg-dev time"
# The Python package; the file-system fault tests (btrfs, XFS loop images); packaging and the ABI
# record (debhelper, lintian, abigail-tools); the man page (mandoc) and shell completions.
PACKAGES="$PACKAGES python3-dev python3-setuptools python3-numpy btrfs-progs xfsprogs e2fsprogs"
PACKAGES="$PACKAGES debhelper fakeroot lintian abigail-tools mandoc bash-completion zsh"
# The Python package's wheel build (python3 -m build) and its docs' pandas example; its Debian package
# (dh-python) and the type check of its stubs with Debian's mypy.
PACKAGES="$PACKAGES python3-wheel python3-build python3-pandas dh-python python3-mypy"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done

if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "bloomkit needs these Debian packages; run as root:" >&2
        echo "  apt-get update && apt-get install -y$missing" >&2
        exit 1
    fi
    echo "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# Further set-up steps (the Redis module header) are added below by their features.

# ---- redismodule.h for the Redis module (redis/) ----
# The header is in no Debian binary package, only in the `redis` source package. Fetch that source
# package through a private apt configuration (a deb-src copy of this machine's own Debian entries,
# private lists and cache in a scratch directory: the system's apt state is not touched, apt still
# verifies the download against the signed index) and keep src/redismodule.h alone, in
# third_party/redis/ (git-ignored, never committed). Prefer the source version of the installed
# redis-server. Nothing to do when the header is already there. A failure here only warns: the rest of
# bloomkit builds without the module (CMake reports it), or point -DBK_REDISMODULE_H at another copy.
bk_root=$(cd "$(dirname "$0")/.." && pwd)
bk_hdr="$bk_root/third_party/redis/redismodule.h"
if [ ! -s "$bk_hdr" ]; then
    bk_fetch_redismodule_h() {
        tmp=$(mktemp -d "${TMPDIR:-/tmp}/bk-redis-src.XXXXXX") || return 1
        trap 'rm -rf "$tmp"' EXIT
        mkdir -p "$tmp/parts" "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/src"
        found=0
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -f "$f" ] || continue
            # deb822 stanzas: the same entries as source entries.
            sed -n 's/^Types:.*\bdeb\b.*$/Types: deb-src/;p' "$f" > "$tmp/parts/src-$(basename "$f")"
            found=1
        done
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
            [ -f "$f" ] || continue
            grep -E '^[[:space:]]*deb[[:space:]]' "$f" | sed 's/^[[:space:]]*deb[[:space:]]/deb-src /' \
                > "$tmp/parts/src-$(basename "$f")"
            found=1
        done
        [ "$found" = 1 ] || { echo "no apt source entries found" >&2; return 1; }
        # (.sources copies are read as deb822, .list copies as one-line entries: the suffixes are kept.)
        set -- -o Dir::Etc::SourceParts="$tmp/parts" -o Dir::Etc::SourceList=/dev/null \
            -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache" -o Debug::NoLocking=1 \
            -o APT::Sandbox::User=root -qq
        # Entries without source indexes (third-party repositories) make update complain: go on, the
        # download below is what has to succeed.
        apt-get "$@" update >/dev/null 2>&1 || echo "note: apt-get update reported errors; trying anyway" >&2
        ver=$(dpkg-query -W -f='${source:Version}' redis-server 2>/dev/null || true)
        ( cd "$tmp/src" && { { [ -n "$ver" ] && apt-get "$@" source --download-only "redis=$ver"; } ||
                             apt-get "$@" source --download-only redis; } ) >/dev/null 2>&1 || return 1
        orig=$(ls "$tmp"/src/redis_*.orig.tar.* 2>/dev/null | head -n 1)
        [ -n "$orig" ] || return 1
        tar -xf "$orig" -C "$tmp/src" --wildcards '*/src/redismodule.h' || return 1
        mkdir -p "$(dirname "$bk_hdr")"
        cp "$tmp"/src/*/src/redismodule.h "$bk_hdr.tmp" && mv "$bk_hdr.tmp" "$bk_hdr" || return 1
        echo "redismodule.h: from $(basename "$orig") (BSD-3-Clause) into third_party/redis/"
    }
    if ! ( bk_fetch_redismodule_h ); then
        echo "warning: could not obtain redismodule.h from the Debian source package; the Redis module" >&2
        echo "         will not be built (or pass -DBK_REDISMODULE_H=/path/to/redismodule.h)" >&2
    fi
fi
