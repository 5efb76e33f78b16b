#!/bin/sh
# `make install PREFIX=... DESTDIR=...` of the built project into a scratch staging root: everything lands
# under DESTDIR/PREFIX and nothing elsewhere, the library carries its SONAME, the pkg-config file's version
# is the header's. Then an outside consumer is built and run with pkg-config and with CMake's
# find_package, against the shared and the static library.
set -eu
build=$(cd "$1" && pwd); src=$(cd "$(dirname "$0")" && pwd); top=$(cd "$src/../.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
prefix=/opt/bloomkit-test; stage="$work/stage"
unset MAKEFLAGS MAKELEVEL MFLAGS
make -s -C "$top" install BUILD="$build" PREFIX="$prefix" DESTDIR="$stage" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; exit 1; }
[ ! -e "$prefix" ] || { echo "FAIL: $prefix exists outside DESTDIR"; exit 1; }
outside=$(cd "$stage" && find . \( -type f -o -type l \) | grep -v "^\.$prefix/" || true)
[ -z "$outside" ] || { echo "FAIL: installed outside PREFIX:"; echo "$outside"; exit 1; }
root="$stage$prefix"
test -f "$root/include/bloomkit/bloomkit.h"
if [ -x "$build/src/cli/bloomkit" ]; then # the command, its manual and its shell completions
    for f in bin/bloomkit share/man/man1/bloomkit.1 share/bash-completion/completions/bloomkit \
             share/zsh/vendor-completions/_bloomkit; do
        test -f "$root/$f" || { echo "FAIL: $f not installed"; exit 1; }
    done
fi
libdir=$(ls -d "$root"/lib*/pkgconfig | head -n1); libdir=${libdir%/pkgconfig}
major=$(sed -n 's/^#define BK_VERSION_MAJOR \([0-9]*\)$/\1/p' "$top/include/bloomkit/common.h")
minor=$(sed -n 's/^#define BK_VERSION_MINOR \([0-9]*\)$/\1/p' "$top/include/bloomkit/common.h")
patch=$(sed -n 's/^#define BK_VERSION_PATCH \([0-9]*\)$/\1/p' "$top/include/bloomkit/common.h")
test -f "$libdir/libbloomkit.so.$major.$minor.$patch"
[ "$(readlink "$libdir/libbloomkit.so.$major")" = "libbloomkit.so.$major.$minor.$patch" ]
soname=$(readelf -d "$libdir/libbloomkit.so.$major.$minor.$patch" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libbloomkit.so.$major" ] || { echo "FAIL: SONAME '$soname'"; exit 1; }
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion bloomkit)" = "$major.$minor.$patch" ] || { echo "FAIL: pkg-config version"; exit 1; }
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags bloomkit) "$src/consumer.c" -o "$work/pc" \
   $(pkg-config --libs bloomkit) -Wl,-rpath,"$libdir"
"$work/pc"
cc -std=c11 $(pkg-config --cflags bloomkit) "$src/consumer.c" -o "$work/pc_static" \
   "$libdir/libbloomkit.a" $(pkg-config --libs-only-other --static bloomkit) -lm -lpthread
"$work/pc_static"
cmake -S "$src" -B "$work/cm" -DCMAKE_PREFIX_PATH="$root" >/dev/null
cmake --build "$work/cm" >/dev/null
"$work/cm/consumer_shared"
"$work/cm/consumer_static"
echo "install test: make install honours PREFIX and DESTDIR (SONAME $soname);" \
     "pkg-config and find_package consumers built and ran"
