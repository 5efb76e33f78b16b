#!/bin/sh
# One-key throughput on small CF keys, packed (the default) against the ordinary form (CF_PACKED no), same
# module, rounds alternated: CF.EXISTS of random items on a key of capacity 1024 holding 400 items and on
# one of capacity 100 holding 80 (every command opens a view of the packed key: a copy of its array), and
# CF.ADDNX of random items into up to 100,000 keys (most commands create a small key). Prints requests per
# second and the server's own time per call (INFO commandstats), with the load. Figures only.
#
# usage: bench/redis_smallkeys.sh [path/to/bloomkit.so]      env: N=200000 requests per run, ROUNDS=2
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
module=${1:-$root/build/redis/bloomkit.so}
N=${N:-200000}
ROUNDS=${ROUNDS:-2}
[ -f "$module" ] || { echo "module not found: $module (build it first)" >&2; exit 1; }
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")

. "$root/bench/redis_server.sh"

rps() { # rps <command...>: requests per second of one redis-benchmark run
    redis-benchmark -p "$port" -c 50 -n "$N" -q "$@" | tr '\r' '\n' | grep -o '[0-9.]* requests per second' |
        tail -1 | cut -d' ' -f1
}

echo "small CF keys, packed vs CF_PACKED no: redis-benchmark -c 50 -n $N, $ROUNDS alternated rounds"
printf '  %-8s %-6s %10s %10s %10s   %s\n' round packed "EXISTS/1k" "EXISTS/100" ADDNX "us/call: EXISTS ADDNX (load)"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    for mode in yes no; do
        redis_start "$module" CF_PACKED "$mode"
        redis-cli -p "$port" CF.RESERVE small 1024 >/dev/null
        redis-cli -p "$port" CF.INSERT small ITEMS $(seq 1 400) >/dev/null
        redis-cli -p "$port" CF.RESERVE small100 100 >/dev/null
        redis-cli -p "$port" CF.INSERT small100 ITEMS $(seq 1 80) >/dev/null
        e1=$(rps -r 1000000 CF.EXISTS small __rand_int__)
        e2=$(rps -r 1000000 CF.EXISTS small100 __rand_int__)
        a=$(rps -r 100000 CF.ADDNX k:__rand_int__ __rand_int__)
        stats=$(redis-cli -p "$port" INFO commandstats | tr -d '\r')
        ue=$(printf '%s\n' "$stats" | sed -n 's/^cmdstat_cf.exists:.*usec_per_call=\([0-9.]*\).*/\1/p')
        ua=$(printf '%s\n' "$stats" | sed -n 's/^cmdstat_cf.addnx:.*usec_per_call=\([0-9.]*\).*/\1/p')
        printf '  %-8s %-6s %10s %10s %10s   %s %s (%s)\n' "$r" "$mode" "$e1" "$e2" "$a" "$ue" "$ua" \
            "$(cut -d' ' -f1-3 /proc/loadavg)"
        redis_stop "$pid" "$port"
    done
    r=$((r + 1))
done
