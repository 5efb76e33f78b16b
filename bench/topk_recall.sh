#!/bin/sh
# Top-K recall through Redis: the Zipf(1.0) stream of bench_sketch (ITEMS items over 1,000,000 keys) sent
# as TOPK.ADD commands to a redis-server with bloomkit.so and, when OTHER names another module speaking
# TOPK.* (RedisBloom), to a second redis-server with it; per geometry, how many of the true top 100 the
# TOPK.LIST holds and MEMORY USAGE of the key. Figures only: nothing passes or fails.
#
# usage: bench/topk_recall.sh [path/to/bloomkit.so]
# env:   ITEMS=10000000, K=100, GEOMETRIES="8:7:0.9 461:5:0.9 -" (width:depth:decay; "-": k only),
#        OTHER=path/to/another/module.so, BENCH=build/bench/bench_sketch
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
module=${1:-$root/build/redis/bloomkit.so}
ITEMS=${ITEMS:-10000000}
K=${K:-100}
GEOMETRIES=${GEOMETRIES:-"8:7:0.9 461:5:0.9 -"}
BENCH=${BENCH:-$root/build/bench/bench_sketch}
OTHER=${OTHER:-}
[ -f "$module" ] || { echo "module not found: $module (build it first)" >&2; exit 1; }
[ -x "$BENCH" ] || { echo "bench_sketch not found: $BENCH (build it first)" >&2; exit 1; }

. "$root/bench/redis_server.sh"

"$BENCH" topk-truth "$ITEMS" | sort >"$redis_dir/truth"
"$BENCH" topk-resp "$ITEMS" t >"$redis_dir/stream"
echo "Top-K recall, Zipf(1.0), $ITEMS items over 1,000,000 keys, k = $K; load $(cut -d' ' -f1-3 /proc/loadavg)"
servers="bloomkit:$module"
[ -n "$OTHER" ] && servers="$servers other:$OTHER"
for s in $servers; do
    name=${s%%:*}
    redis_start "${s#*:}"
    for g in $GEOMETRIES; do
        redis-cli -p "$port" del t >/dev/null
        if [ "$g" = "-" ]; then
            redis-cli -p "$port" TOPK.RESERVE t "$K" >/dev/null
        else
            redis-cli -p "$port" TOPK.RESERVE t "$K" $(echo "$g" | tr ':' ' ') >/dev/null
        fi
        t0=$(date +%s.%N)
        redis-cli -p "$port" --pipe <"$redis_dir/stream" >/dev/null
        t1=$(date +%s.%N)
        redis-cli -p "$port" TOPK.LIST t | sort >"$redis_dir/list"
        hit=$(comm -12 "$redis_dir/truth" "$redis_dir/list" | wc -l)
        mem=$(redis-cli -p "$port" MEMORY USAGE t)
        info=$(redis-cli -p "$port" TOPK.INFO t | tr '\n' ' ')
        printf '%-8s %-14s %3d of the true top %d  MEMORY USAGE %7d B  (%s) %.1f s\n' "$name" "$g" "$hit" "$K" \
            "$mem" "$info" "$(echo "$t1 - $t0" | bc)"
    done
done
