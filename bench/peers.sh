#!/bin/sh
# bloomkit's plain one-key calls against the peer designs (bench/c_peers.c), 8-byte keys, p = 1%,
# n = 1,000,000 (in cache) and 10,000,000: each run ends with the "bloomkit vs peer" table (ns per
# call, ratio ours / peer's, measured FPR with the FPR the design gives at its fill, cuckoo load
# factors) and prints the load average at its start and end. About a minute on an idle 2-core machine.
#   usage: sh bench/peers.sh [build-dir]
#   REPEAT=R (default 3): each figure is the fastest of R runs; figures are the process's CPU time
#   (--cpu-time), so time spent descheduled on a shared machine is not charged to a contender.
set -e
bench=${1:-build}/bench/bench
[ -x "$bench" ] || { echo "no $bench: build first (make build)" >&2; exit 1; }
for n in 1e6 10e6; do
    echo; echo "==== 8-byte keys, n = $n, p = 1% ===="
    "$bench" -n "$n" -p 0.01 --no-batch --cpu-time --repeat "${REPEAT:-3}" --only bloom,blocked,cuckoo,cuckoo-p2,fuse
done
