#!/bin/sh
# Throughput of the module's commands next to plain SET/GET, in the same run, with redis-benchmark:
# BF.ADD / BF.EXISTS (and CF.ADD / CF.EXISTS, CMS.INCRBY, TOPK.ADD) of random items (__rand_int__ over 1,000,000 values;
# CF.ADD's over 1,000,000,000, see below) against SET / GET of random keys, one request at a time and
# pipelined (-P 16). Prints requests per
# second (the median of ROUNDS interleaved rounds) and each command's ratio to SET (writes) or GET
# (reads). Figures only: nothing here passes or fails.
#
# usage: bench/redis_bench.sh [path/to/bloomkit.so]
# env:   N=200000 requests per run, ROUNDS=3, CLIENTS=50, PIPELINES="1 16",
#        CAPACITY=<what the runs add> capacity of the two filters (e.g. 10000000: larger than the caches),
#        MODULE_ARGS="" module arguments (the defaults: CF.ADD without a copy limit, as RedisBloom;
#        CF_MAX_COPIES n adds the count it makes before each add)
# CF.ADD stores every add, repeats included; its items come from 1,000,000,000 values, so the chain
# grows only with the load.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
module=${1:-$root/build/redis/bloomkit.so}
N=${N:-200000}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
[ -f "$module" ] || { echo "module not found: $module (build it first)" >&2; exit 1; }
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")

. "$root/bench/redis_server.sh"
redis_start "$module" ${MODULE_ARGS-}

# Filters sized for everything the runs add (so the Bloom filter stays one sub-filter at 1%, as a
# reserved production filter would, and the cuckoo filter does not expand).
total=${CAPACITY:-$((N * ROUNDS * 2 + 1000))}
redis-cli -p "$port" BF.RESERVE bench:bf 0.01 "$total" >/dev/null
redis-cli -p "$port" CF.RESERVE bench:cf "$total" >/dev/null
# the sketches: RedisBloom's example sizes (CMS.INITBYPROB 0.001 0.01: 2000 x 7; TOPK.RESERVE 50 with
# RedisBloom's rule of thumb for its geometry)
redis-cli -p "$port" CMS.INITBYPROB bench:cms 0.001 0.01 >/dev/null
redis-cli -p "$port" TOPK.RESERVE bench:topk 50 200 5 0.9 >/dev/null

echo "bloomkit.so vs SET/GET: redis-benchmark -c $CLIENTS -n $N -r 1000000, median of $ROUNDS rounds;"
echo "filters: BF.RESERVE bench:bf 0.01 $total, CF.RESERVE bench:cf $total"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(redis-server --version | cut -d' ' -f3)"

# rps <name> <pipeline> <command...>: one redis-benchmark run, prints requests per second
# (RANGE: the values of __rand_int__, 1000000 unless set for the call)
rps() {
    p=$1; shift
    redis-benchmark -p "$port" -c "$CLIENTS" -n "$N" -r "${RANGE:-1000000}" -P "$p" -q --csv "$@" 2>/dev/null |
        awk -F'"' 'NR == 2 { print $4 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for p in $PIPELINES; do
    : > "$redis_dir/res"
    r=1
    while [ $r -le "$ROUNDS" ]; do
        # one round: each command right after the plain command it is compared with
        s=$(rps "$p" SET key:__rand_int__ __rand_int__)
        echo "$r SET $s $s" >> "$redis_dir/res"
        echo "$r BF.ADD $(rps "$p" BF.ADD bench:bf __rand_int__) $s" >> "$redis_dir/res"
        echo "$r CF.ADD $(RANGE=1000000000 rps "$p" CF.ADD bench:cf __rand_int__) $s" >> "$redis_dir/res"
        echo "$r CMS.INCRBY $(rps "$p" CMS.INCRBY bench:cms __rand_int__ 1) $s" >> "$redis_dir/res"
        echo "$r TOPK.ADD $(rps "$p" TOPK.ADD bench:topk __rand_int__) $s" >> "$redis_dir/res"
        g=$(rps "$p" GET key:__rand_int__)
        echo "$r GET $g $g" >> "$redis_dir/res"
        echo "$r BF.EXISTS $(rps "$p" BF.EXISTS bench:bf __rand_int__) $g" >> "$redis_dir/res"
        echo "$r CF.EXISTS $(rps "$p" CF.EXISTS bench:cf __rand_int__) $g" >> "$redis_dir/res"
        r=$((r + 1))
    done
    echo ""
    echo "pipeline $p (requests/s: median over rounds; ratio: median of each round's ratio):"
    printf "  %-10s %12s %10s\n" command "requests/s" "ratio"
    for c in SET BF.ADD CF.ADD CMS.INCRBY TOPK.ADD GET BF.EXISTS CF.EXISTS; do
        v=$(awk -v c="$c" '$2 == c { print $3 }' "$redis_dir/res" | median)
        q=$(awk -v c="$c" '$2 == c { print 100 * $3 / $4 }' "$redis_dir/res" | median)
        case $c in SET|BF.ADD|CF.ADD|CMS.INCRBY|TOPK.ADD) bn=SET ;; *) bn=GET ;; esac
        printf "  %-10s %12.0f %9.1f%% of %s\n" "$c" "$v" "$q" "$bn"
    done
done
echo ""
# Server-side time per call over every run above (INFO commandstats): less sensitive to the client
# sharing the machine than requests per second.
echo "server time per call (INFO commandstats, all runs):"
redis-cli -p "$port" info commandstats | tr -d '\r' | awk -F'[:,=]' '
    /^cmdstat_(set|get|bf\.add|bf\.exists|cf\.add|cf\.exists|cms\.incrby|topk\.add):/ {
        name = toupper(substr($1, 9)); calls[name] = $3; usec[name] = $7 }
    END {
        split("SET BF.ADD CF.ADD CMS.INCRBY TOPK.ADD GET BF.EXISTS CF.EXISTS", order, " ")
        for (i = 1; i <= 8; i++) { c = order[i]; base = (i <= 5) ? usec["SET"] : usec["GET"]
            printf "  %-10s %8.3f us/call  %6.2fx %s  (%d calls)\n", c, usec[c], usec[c] / base,
                   (i <= 5) ? "SET" : "GET", calls[c] } }'
echo ""
redis-cli -p "$port" BF.INFO bench:bf | paste - - | sed 's/^/  bench:bf  /'
redis-cli -p "$port" CF.INFO bench:cf | paste - - | sed 's/^/  bench:cf  /'
echo "  CF.ADD calls refused: $(redis-cli -p "$port" info commandstats | tr -d '\r' |
    awk -F'failed_calls=' '/^cmdstat_cf\.add:/ { print $2 + 0 }')"
echo "  used_memory: $(redis-cli -p "$port" info memory | awk -F: '/^used_memory_human/ { print $2 }' | tr -d '\r')"
