#!/bin/sh
# make deb: the Debian packages libbloomkit1, libbloomkit-dev, bloomkit, redis-bloomkit and python3-bloomkit, built the usual
# way (dpkg-buildpackage -us -uc -b with debian/) from a copy of the source tree in OUT/bloomkit-VERSION,
# so the packages, .buildinfo and .changes land in OUT and the working tree stays clean; then lintian on
# them, failing on any error. Usage: deb.sh OUT [JOBS]
set -eu
out=$1; jobs=${2:-2}
top=$(cd "$(dirname "$0")/.." && pwd)
hdr="$top/include/bloomkit/common.h"
version=$(for p in MAJOR MINOR PATCH; do sed -n "s/^#define BK_VERSION_$p \([0-9]*\)$/\1/p" "$hdr"; done |
          paste -sd.)
changelog=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
if [ "$changelog" != "$version" ]; then
    echo "deb: debian/changelog is at $changelog but the header says $version: add a changelog entry" >&2
    exit 1
fi
if [ ! -s "$top/third_party/redis/redismodule.h" ]; then
    echo "deb: third_party/redis/redismodule.h is missing (run scripts/deps.sh): the Redis module" \
         "package needs it" >&2
    exit 1
fi

mkdir -p "$out"; out=$(cd "$out" && pwd)
src="$out/bloomkit-$version"
rm -rf "$src" "$out"/*.deb "$out"/*.ddeb "$out"/*.buildinfo "$out"/*.changes
mkdir -p "$src"
# The tracked and new (not ignored) files as they are in the working tree, plus redismodule.h.
cd "$top"
if [ -d .git ] || [ -f .git ]; then
    git ls-files -z --cached --others --exclude-standard |
        xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
        tar --null -T - -cf - | tar -xf - -C "$src"
else
    tar --exclude='./build*' --exclude='./obj-*' -cf - . | tar -xf - -C "$src"
fi
mkdir -p "$src/third_party/redis"
cp third_party/redis/redismodule.h "$src/third_party/redis/"

cd "$src"
# dpkg-genbuildinfo and dpkg-genchanges look for the packages in the parent directory, which is OUT.
BK_DEB_OUT="$out" dpkg-buildpackage -us -uc -b -j"$jobs" >"$out/build.log" 2>&1 || {
    tail -n 60 "$out/build.log"; echo "deb: dpkg-buildpackage failed (log: $out/build.log)" >&2; exit 1; }
cd "$out"
rm -rf "$src"
ls -1 "$out"/*.deb
lintian --fail-on error --tag-display-limit 0 "$out"/*.changes | tee "$out/lintian.log"
echo "deb: packages in $out (lintian: $(grep -c '^E:' "$out/lintian.log" || true) errors," \
     "$(grep -c '^W:' "$out/lintian.log" || true) warnings)"
