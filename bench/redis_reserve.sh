#!/bin/sh
# BF.RESERVE's cost on the server: the first BF.RESERVE of a fresh server (its microseconds in INFO
# commandstats, the server's own clock: what the event loop spent on it) and the rate of
# `redis-benchmark -c 1 -n N -r 1000000000 BF.RESERVE k:__rand_int__ ERROR CAPACITY` (new keys only),
# for the module and, when a second module is given (another build, or RedisBloom), for that one too,
# the two servers on two loopback ports and the runs alternated. Prints the load average before and
# after. Figures only: nothing here passes or fails.
#
# usage: bench/redis_reserve.sh [path/to/bloomkit.so [path/to/other_module.so]]
# env:   N=3000 requests per run, ROUNDS=3, FIRST=5 fresh servers per module for the first call,
#        ERROR=0.01, CAPACITY=1000, MODULE_ARGS="" (the first module's arguments)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
m1=${1:-$root/build/redis/bloomkit.so}
m2=${2:-}
N=${N:-3000}
ROUNDS=${ROUNDS:-3}
FIRST=${FIRST:-5}
ERROR=${ERROR:-0.01}
CAPACITY=${CAPACITY:-1000}
for m in "$m1" $m2; do [ -f "$m" ] || { echo "module not found: $m" >&2; exit 1; }; done
m1=$(realpath "$m1")
[ -z "$m2" ] || m2=$(realpath "$m2")

. "$root/bench/redis_server.sh"

reserve_usec() { # port: usec of the calls so far, from INFO commandstats
    redis-cli -p "$1" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_bf\.reserve:calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2/p'
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "first BF.RESERVE k $ERROR $CAPACITY of a fresh server, then the next one (usec, INFO commandstats), $FIRST servers each:"
idx=0
for m in "$m1" $m2; do
    idx=$((idx + 1))
    args=""
    [ $idx -eq 1 ] && args=${MODULE_ARGS-}
    firsts="" seconds=""
    f=0
    while [ $f -lt "$FIRST" ]; do
        f=$((f + 1))
        redis_start "$m" $args
        redis-cli -p "$port" BF.RESERVE first "$ERROR" "$CAPACITY" >/dev/null
        u1=$(reserve_usec "$port" | cut -d' ' -f2)
        redis-cli -p "$port" BF.RESERVE second "$ERROR" "$CAPACITY" >/dev/null
        u2=$(reserve_usec "$port" | cut -d' ' -f2)
        firsts="$firsts $u1" seconds="$seconds $((u2 - u1))"
        redis_stop "$pid" "$port"
    done
    echo "  $m"
    echo "    first:$firsts   second:$seconds"
done

echo "redis-benchmark -c 1 -n $N -r 1000000000 BF.RESERVE k:__rand_int__ $ERROR $CAPACITY (requests per second; server usec per call):"
redis_start "$m1" ${MODULE_ARGS-}
ports=$port
if [ -n "$m2" ]; then
    redis_start "$m2"
    ports="$ports $port"
fi
r=0
while [ $r -lt "$ROUNDS" ]; do
    r=$((r + 1))
    line="  round $r:"
    for port in $ports; do
        redis-cli -p "$port" flushall >/dev/null
        redis-cli -p "$port" config resetstat >/dev/null
        rps=$(redis-benchmark -p "$port" -c 1 -n "$N" -r 1000000000 -q BF.RESERVE k:__rand_int__ "$ERROR" "$CAPACITY" |
            tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1)
        us=$(redis-cli -p "$port" info commandstats | tr -d '\r' |
            sed -n 's/^cmdstat_bf\.reserve:.*usec_per_call=\([0-9.]*\).*/\1/p')
        line="$line   $rps rps ($us us/call)"
    done
    echo "$line"
done
echo "  (columns: $m1${m2:+, then $m2})"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
