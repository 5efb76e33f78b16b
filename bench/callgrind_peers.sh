#!/bin/sh
# Instructions per query of every contender of bench/calls (bloomkit's byte and uint64 calls through the
# public API, its header-inline readers, the peers as their users call them), counted by callgrind:
# exact and independent of the machine's load. Runs build/bench/calls_cg (calls built for x86-64-v3:
# callgrind cannot run AVX-512), one family at a time, one round, and divides each query loop's
# inclusive count (the library's functions it calls included) by the queries it made (the untimed
# warm-up pass over the absent keys, then present and absent keys: 3 q).
#   usage: sh bench/callgrind_peers.sh [build-dir] [n]     (n: keys, default 100000)
set -e
prog=${1:-build}/bench/calls_cg
n=${2:-100000}
[ -x "$prog" ] || { echo "no $prog: build it first (cmake --build build --target calls_cg)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-9s %8s %8s %8s %8s   %s\n' family bytes u64 reader peer "(instructions per query, n = $n)"
for fam in bloom blocked fuse cuckoo cuckoo-p2; do
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$prog" -n "$n" -q "$n" -r 1 --only "$fam" \
        >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
    callgrind_annotate --inclusive=yes --threshold=100 "$out/cg" >"$out/ann" 2>/dev/null
    ir() { # inclusive instructions of query loop $1 per query, or "-"
        awk -v f="$1" -v q="$((3 * n))" '
            index($0, ":" f " [") { gsub(",", "", $1); printf "%.1f", $1 / q; found = 1; exit }
            END { if (!found) printf "-" }' "$out/ann"
    }
    case $fam in
        bloom) set -- bloom_bytes bloom_u64 none libbloom_q ;;
        blocked) set -- blocked_bytes blocked_u64 blocked_reader sbbf_q ;;
        fuse) set -- fuse_bytes fuse_u64 fuse_reader bfuse_q ;;
        cuckoo) set -- cuckoo_bytes cuckoo_u64 cuckoo_reader10 cfp_q ;;
        *) set -- cuckoo_bytes cuckoo_u64 cuckoo_reader12 cfp_q ;;
    esac
    printf '%-9s %8s %8s %8s %8s\n' "$fam" "$(ir "$1")" "$(ir "$2")" "$(ir "$3")" "$(ir "$4")"
done
