#!/bin/sh
# Installs the Debian packages bloomkit needs to build, test and benchmark. As root it installs what
# is missing; otherwise it prints the exact apt-get line to run and fails.
set -eu

PACKAGES="gcc g++ make cmake pkg-config clang libclang-rt-14-dev libxxhash-dev libcmocka-dev \
libbloom-dev redis-server redis-tools python3 python3-redis python3-pytest libhiredis-dev \
gnuplot-nox dpkg-dev time"

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
