#!/bin/sh
# Instructions per plain one-key call (8-byte keys, p = 1%), counted by callgrind over the profiled
# loop of bench/profile_calls (exact and independent of the machine's load), for the byte calls and
# the uint64-key calls of the classic, blocked, fuse (8- and 16-bit), Ribbon and cuckoo filters.
#   usage: sh bench/callgrind_calls.sh [build-dir] [n]     (n: keys, default 200000)
set -e
prog=${1:-build}/bench/profile_calls
n=${2:-200000}
[ -x "$prog" ] || { echo "no $prog: build first (make build)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-8s %-7s %12s %12s\n' type op "bytes" "u64"
for case in "blocked query" "blocked insert" "fuse query" "fuse16 query" "ribbon query" "cuckoo query" "bloom query" "bloom insert"; do
    set -- $case
    loop=query_loop; calls=$((2 * n))
    [ "$2" = insert ] && { loop=insert_loop; calls=$n; }
    line=$(printf '%-8s %-7s' "$1" "$2")
    for form in "" --u64; do
        valgrind --tool=callgrind --toggle-collect="$loop" --callgrind-out-file="$out/cg" \
            "$prog" "$1" "$2" -n "$n" $form >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
        ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out/cg")
        line="$line $(awk -v i="$ir" -v c="$calls" 'BEGIN { printf "%12.1f", i / c }')"
    done
    echo "$line"
done
