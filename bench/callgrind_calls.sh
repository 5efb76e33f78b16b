#!/bin/sh
# Instructions per call counted by callgrind: exact and independent of the machine's load.
#
#   usage: sh bench/callgrind_calls.sh [build-dir] [n]           (n: keys, default 200000)
# Per plain one-key call (8-byte keys, p = 1%), over the profiled loop of bench/profile_calls, for the
# byte calls and the uint64-key calls of the classic, blocked, fuse (8- and 16-bit), Ribbon and cuckoo
# filters.
#
#   usage: sh bench/callgrind_calls.sh --peers [build-dir] [n]   (n: keys, default 100000)
# Per query of every contender of bench/calls (bloomkit's byte and uint64 calls through the public API,
# its header-inline readers, the peers as their users call them). Runs build/bench/calls_cg (calls built
# for x86-64-v3: callgrind cannot run AVX-512), one family at a time, one round, and divides each query
# loop's inclusive count (the library's functions it calls included) by the queries it made (the untimed
# warm-up pass over the absent keys, then present and absent keys: 3 n).
set -e
peers=
[ "$1" = --peers ] && { peers=1; shift; }
if [ -n "$peers" ]; then
    prog=${1:-build}/bench/calls_cg
    n=${2:-100000}
    how="cmake --build ${1:-build} --target calls_cg"
else
    prog=${1:-build}/bench/profile_calls
    n=${2:-200000}
    how="make build"
fi
[ -x "$prog" ] || { echo "no $prog: build it first ($how)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# callgrind over "$@" into $out/cg; its messages shown only when it fails
cg() {
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$@" >/dev/null 2>"$out/log" ||
        { cat "$out/log" >&2; exit 1; }
}

if [ -z "$peers" ]; then
    printf '%-8s %-7s %12s %12s\n' type op "bytes" "u64"
    for case in "blocked query" "blocked insert" "fuse query" "fuse16 query" "ribbon query" "cuckoo query" "bloom query" "bloom insert"; do
        set -- $case
        loop=query_loop; calls=$((2 * n))
        [ "$2" = insert ] && { loop=insert_loop; calls=$n; }
        line=$(printf '%-8s %-7s' "$1" "$2")
        for form in "" --u64; do
            cg --toggle-collect="$loop" "$prog" "$1" "$2" -n "$n" $form
            ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out/cg")
            line="$line $(awk -v i="$ir" -v c="$calls" 'BEGIN { printf "%12.1f", i / c }')"
        done
        echo "$line"
    done
    exit 0
fi

printf '%-9s %8s %8s %8s %8s %8s   %s\n' family bytes u64 reader peer rd-ph "(instructions per query, n = $n)"
for fam in bloom blocked fuse cuckoo cuckoo-p2; do
    cg "$prog" -n "$n" -q "$n" -r 1 --only "$fam"
    callgrind_annotate --inclusive=yes --threshold=100 "$out/cg" >"$out/ann" 2>/dev/null
    ir() { # inclusive instructions of query loop $1 per query, or "-"
        awk -v f="$1" -v q="$((3 * n))" '
            index($0, ":" f " [") { gsub(",", "", $1); printf "%.1f", $1 / q; found = 1; exit }
            END { if (!found) printf "-" }' "$out/ann"
    }
    case $fam in
        bloom) set -- bloom_bytes bloom_u64 none libbloom_q none ;;
        blocked) set -- blocked_bytes blocked_u64 blocked_reader sbbf_q blocked_rdph ;;
        fuse) set -- fuse_bytes fuse_u64 fuse_reader bfuse_q fuse_rdph ;;
        cuckoo) set -- cuckoo_bytes cuckoo_u64 cuckoo_reader10 cfp_q cuckoo_rdph10 ;;
        *) set -- cuckoo_bytes cuckoo_u64 cuckoo_reader12 cfp_q cuckoo_rdph12 ;;
    esac
    printf '%-9s %8s %8s %8s %8s %8s\n' "$fam" "$(ir "$1")" "$(ir "$2")" "$(ir "$3")" "$(ir "$4")" "$(ir "$5")"
done
