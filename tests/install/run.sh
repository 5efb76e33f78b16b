#!/bin/sh
# Installs the built project into a scratch prefix, then builds and runs an outside consumer with
# pkg-config and with CMake's find_package, against the shared and the static library.
set -eu
build=$1; src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(ls -d "$work"/prefix/lib*/pkgconfig | head -n1); libdir=${libdir%/pkgconfig}
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags bloomkit) "$src/consumer.c" -o "$work/pc" \
   $(pkg-config --libs bloomkit) -Wl,-rpath,"$libdir"
"$work/pc"
cc -std=c11 $(pkg-config --cflags bloomkit) "$src/consumer.c" -o "$work/pc_static" \
   "$libdir/libbloomkit.a" $(pkg-config --libs-only-other --static bloomkit) -lm -lpthread
"$work/pc_static"
cmake -S "$src" -B "$work/cm" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cm" >/dev/null
"$work/cm/consumer_shared"
"$work/cm/consumer_static"
echo "install test: pkg-config and find_package consumers built and ran"
