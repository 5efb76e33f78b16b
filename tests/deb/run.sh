#!/bin/sh
# The Debian packages as a user gets them: make deb's script builds them (lintian must report no error),
# dpkg -x extracts them into a scratch root, and there an outside program is built with pkg-config and
# with CMake's find_package and run, the bloomkit command runs, Debian's python3 imports the packaged
# module, and a real redis-server (Unix socket only, no TCP port) loads the packaged module and answers
# BF.* commands. Also: pip builds ./python offline (no build isolation).
set -eu
build=$(cd "$1" && pwd); here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
for tool in dpkg-buildpackage dh lintian fakeroot; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/deps.sh)"; exit 77; }
done
[ -s "$top/third_party/redis/redismodule.h" ] || { echo "SKIP: no redismodule.h (scripts/deps.sh)"; exit 77; }
work=$(mktemp -d); pid=""
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

out="$build/deb-test"
sh "$top/scripts/deb.sh" "$out" 2
root="$work/root"
for p in libbloomkit1 libbloomkit-dev bloomkit redis-bloomkit python3-bloomkit; do
    deb=$(ls "$out/${p}_"*.deb)
    dpkg-deb -f "$deb" Package Version | tr '\n' ' '; echo
    dpkg -x "$deb" "$root"
done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib="$root/usr/lib/$ma"
version=$(for p in MAJOR MINOR PATCH; do
              sed -n "s/^#define BK_VERSION_$p \([0-9]*\)$/\1/p" "$top/include/bloomkit/common.h"; done |
          paste -sd.)
major=${version%%.*}
fail() { echo "FAIL: $*"; exit 1; }
test -f "$lib/libbloomkit.so.$version" || fail "libbloomkit.so.$version not in libbloomkit1"
[ "$(dpkg-deb -f "$out/libbloomkit1_"*.deb Package)" = "libbloomkit$major" ] || fail "package name vs SONAME"
test -f "$lib/libbloomkit.a" && test -f "$lib/pkgconfig/bloomkit.pc" && test -d "$lib/cmake/bloomkit" ||
    fail "libbloomkit-dev lacks the static library, pkg-config file or CMake package"
test -f "$root/usr/lib/redis/modules/bloomkit.so" || fail "the module is not in /usr/lib/redis/modules"
grep -q '^# loadmodule /usr/lib/redis/modules/bloomkit.so$' \
    "$root/usr/share/doc/redis-bloomkit/examples/bloomkit.conf" || fail "no commented loadmodule line"
# What the project's install rules put into the command's man page and completion folders is packaged.
for d in usr/share/man/man1 usr/share/bash-completion/completions usr/share/zsh/vendor-completions; do
    for f in $(cd "$build" && cmake --install . --prefix "$work/inst" >/dev/null && cd "$work/inst" &&
               ls "$d" 2>/dev/null || true); do
        ls "$root/$d/$f" "$root/$d/$f.gz" 2>/dev/null | grep -q . || fail "$d/$f is not in the bloomkit package"
    done
done

"$root/usr/bin/bloomkit" --version | grep -F "$version" || fail "bloomkit --version"

export PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_LIBDIR="$lib/pkgconfig"
[ "$(pkg-config --modversion bloomkit)" = "$version" ] || fail "pkg-config --modversion"
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags bloomkit) "$top/tests/install/consumer.c" \
   -o "$work/pc" $(pkg-config --libs bloomkit)
LD_LIBRARY_PATH="$lib" "$work/pc"
[ "$(LD_LIBRARY_PATH="$lib" ldd "$work/pc" | sed -n "s/.*libbloomkit.so.$major => \([^ ]*\).*/\1/p")" = \
  "$lib/libbloomkit.so.$major" ] || fail "the pkg-config consumer does not load the packaged library"
cmake -S "$top/tests/install" -B "$work/cm" -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null
cmake --build "$work/cm" >/dev/null
LD_LIBRARY_PATH="$lib" "$work/cm/consumer_shared"
"$work/cm/consumer_static"

# python3-bloomkit: the module for Debian's python3, in its dist-packages, with a python3 dependency
# that matches the interpreter it was built for; it imports and works from the scratch root (the
# library is inside the extension: nothing else of the scratch root on the library path).
pydeb=$(ls "$out/python3-bloomkit_"*.deb)
pyver=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
dpkg-deb -f "$pydeb" Depends | grep -q "python3 (>= $pyver" || fail "python3-bloomkit Depends: $(dpkg-deb -f "$pydeb" Depends)"
dist="$root/usr/lib/python3/dist-packages"
ls "$dist"/bloomkit/_bloomkit.cpython-*.so "$dist/bloomkit/__init__.py" "$dist/bloomkit/__init__.pyi" \
   "$dist/bloomkit/py.typed" >/dev/null || fail "python3-bloomkit lacks the extension, the package or its stubs"
env -u LD_LIBRARY_PATH PYTHONPATH="$dist" /usr/bin/python3 -c "
import bloomkit, sys
assert bloomkit.__file__.startswith('$dist/'), bloomkit.__file__
f = bloomkit.Blocked(1000, 0.01)
f.add('packaged')
assert 'packaged' in f and bloomkit.__version__ == '$version', bloomkit.__version__
f.save('$work/py.bf')
print('python3-bloomkit', bloomkit.__version__, 'from', bloomkit.__file__)
" || fail "import bloomkit from python3-bloomkit"
"$root/usr/bin/bloomkit" query -q "$work/py.bf" packaged || fail "the command reads the packaged module's file"
# The other install path: pip builds the same package offline from the source tree with Debian's own
# setuptools (pyproject.toml, no build isolation), without the legacy setup.py install.
if /usr/bin/python3 -m pip --version >/dev/null 2>&1; then
    # from a copy of what setup.py reads (pip builds in the tree: the source tree stays as it is)
    mkdir -p "$work/tree"
    (cd "$top" && tar --exclude=__pycache__ -cf - python src include) | tar -xf - -C "$work/tree"
    /usr/bin/python3 -m pip install --no-build-isolation --no-index --no-deps --target "$work/pip" \
        "$work/tree/python" >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; fail "pip install --no-build-isolation ./python"; }
    ! grep -i "deprecat" "$work/pip.log" || fail "pip warned of a deprecated install path"
    PYTHONPATH="$work/pip" /usr/bin/python3 -c "
import bloomkit
f = bloomkit.Bloom(10)
f.add('k')
assert 'k' in f and bloomkit.__file__.startswith('$work/pip/'), bloomkit.__file__" || fail "pip's bloomkit"
    echo "pip built and installed ./python offline"
else
    echo "pip not installed (python3-pip): the offline pip build is skipped"
fi

if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
    sock="$work/redis.sock"
    redis-server --port 0 --unixsocket "$sock" --save '' --appendonly no --dir "$work" \
        --loadmodule "$root/usr/lib/redis/modules/bloomkit.so" >"$work/redis.log" 2>&1 &
    pid=$!
    i=0
    while [ "$(redis-cli -s "$sock" PING 2>/dev/null)" != PONG ] && [ $i -lt 100 ] && kill -0 "$pid" 2>/dev/null
    do sleep 0.1; i=$((i + 1)); done
    [ "$(redis-cli -s "$sock" PING 2>/dev/null)" = PONG ] ||
        { cat "$work/redis.log"; fail "redis-server did not start with the packaged module"; }
    [ "$(stat -c %a "$root/usr/lib/redis/modules/bloomkit.so")" = 755 ] || fail "module mode"
    [ "$(redis-cli -s "$sock" BF.ADD seen packaged)" = 1 ] || fail "BF.ADD"
    [ "$(redis-cli -s "$sock" BF.EXISTS seen packaged)" = 1 ] || fail "BF.EXISTS of an added key"
    redis-cli -s "$sock" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    wait "$pid" || true; pid=""
    echo "redis-server loaded the packaged module and answered BF.ADD/BF.EXISTS"
else
    echo "redis-server not installed: the module's load check is skipped (scripts/deps.sh installs it)"
fi
rm -rf "$out"
echo "deb test: the packages install into a scratch root and outside programs build and run against them"
