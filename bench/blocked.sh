#!/bin/sh
# The blocked filter's figures in one run of about 2-3 minutes on an idle 2-core machine,
# at most ~1.1 GiB of memory at a time:
#   8-byte and ~31-byte URL keys; n = 1,000,000 (in cache) and a filter of about 1 GiB (out of cache);
#   single key, batched, and header-inline pre-hashed; 0/50/100% hits; ns/op, bits/key, FPR; next to
#   the classic filter and libbloom, with the memory floor measured in the same run; then the issue's
#   targets at 10,000,000 8-byte keys.
# The 1 GiB case: every filter is sized for 800M keys at 1% (--capacity; SPLIT256: 1004 MiB) but only
# 10M keys are inserted and queried (generating 800M keys would take minutes), so its bits/key is per
# sized key and its FPR that of an underfilled filter; libbloom 1.6 cannot exceed 256 MiB and is
# clamped to that (still 8x the last-level cache).
#   usage: sh bench/blocked.sh [build-dir]      (or: make bench-blocked)
#   BENCH_ARGS="--repeat 2 --cpu-time" sh bench/blocked.sh   passes options to every run (on a busy
#   shared machine: the fastest of two runs, CPU time; about twice as long)
set -e
bench=${1:-build}/bench/bench
[ -x "$bench" ] || { echo "no $bench: build first (make build)" >&2; exit 1; }
echo "load before: $(uptime)"
echo "options: ${BENCH_ARGS:-none}"
for keys in u64 url; do
    echo; echo "==== $keys keys, n = 1,000,000 (in cache) ===="
    "$bench" $BENCH_ARGS -n 1e6 --keys "$keys" --only bloom,blocked,blocked512,floor
    echo; echo "==== $keys keys, filters of about 1 GiB (sized for 800M keys, 10M inserted and queried) ===="
    "$bench" $BENCH_ARGS -n 10e6 --capacity 800e6 --keys "$keys" --only bloom,blocked,floor
done
echo; echo "==== targets: 8-byte keys, n = 10,000,000 ===="
"$bench" $BENCH_ARGS -n 10e6 --only bloom,blocked,floor
echo; echo "load after: $(uptime)"
