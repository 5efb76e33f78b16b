#!/bin/sh
# The CPU time of `bloomkit build` against `wc -l` on the same file (figures, never pass/fail): the
# build's target is at most 2x `wc -l`'s CPU time (user + system), per filter type.
#
# The commands run alternately, ROUNDS times (wc -l, then each type's build, then again), so a
# change of the machine's load touches all of them alike; each row gives the median and the lowest
# CPU time (user + system, from /usr/bin/time) and wall time of its runs, and the ratio of the
# medians (and of the minima) to `wc -l`'s. The load average is printed before and after.
# With OLD=path/to/another/bloomkit, that binary's builds run in the same rounds (before/after), the
# two binaries taking turns at going first: a build's fresh memory costs more when no build freed
# memory just before it (on the virtual machines measured, the one run right after `wc -l` took
# 0.03-0.05 s more CPU time than the same binary run second), so a fixed order favoured the second.
#
# Usage: bench/cli_build_ratio.sh [BUILD_DIR] [FILE]
#   FILE: default a generated file of N lines (default 10,000,000) of URLs of the shape
#         https://host123.example.net/p/4567/1a2b3c (46.8 bytes a line), made once in DIR
#         (default $TMPDIR or /tmp); keep it out of the source tree.
#   env: ROUNDS (default 7), TYPES (default "bloom blocked"), OPTS (extra build options, e.g.
#        "-n 10M" or "-p 0.1%"), OLD (a second bloomkit binary), N, DIR.
set -eu

BUILD=${1:-build}
BK="$BUILD/src/cli/bloomkit"
N=${N:-10000000}
ROUNDS=${ROUNDS:-7}
TYPES=${TYPES:-bloom blocked}
OPTS=${OPTS:-}
OLD=${OLD:-}
DIR=${DIR:-${TMPDIR:-/tmp}}
[ -x "$BK" ] || { echo "cli_build_ratio: $BK not built" >&2; exit 2; }
FILE=${2:-$DIR/bloomkit-hosturls-$N.txt}
if [ ! -s "$FILE" ]; then
    echo "generating $FILE ..." >&2
    awk -v n="$N" 'BEGIN { x = 11; for (i = 0; i < n; i++) { x = (x * 16807) % 2147483647;
        printf "https://host%d.example.net/p/%d/%06x\n", x % 100000, i, x % 16777216 } }' > "$FILE"
fi
OUT=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-ratio.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
cat "$FILE" > /dev/null # into the page cache

# one timed run: appends "label wall cpu" to $OUT/runs
timed() {
    label=$1
    shift
    t0=$(date +%s%N)
    /usr/bin/time -f "%U %S" -o "$OUT/one" "$@" > /dev/null
    t1=$(date +%s%N)
    echo "$label $(((t1 - t0) / 1000)) $(awk '{ print $1 + $2 }' "$OUT/one")" >> "$OUT/runs"
}

labels="wc"
for t in $TYPES; do
    labels="$labels new:$t"
    [ -n "$OLD" ] && labels="$labels old:$t"
done
echo "bloomkit build against wc -l, $(date -u +%Y-%m-%dT%H:%MZ); $ROUNDS alternating rounds"
echo "file: $FILE ($(wc -c < "$FILE") bytes); build options: --type T -p 1% $OPTS"
echo "CPU: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
echo "load at start: $(uptime | sed 's/.*load average: //')"
: > "$OUT/runs"
r=0
while [ "$r" -lt "$ROUNDS" ]; do
    timed wc wc -l "$FILE"
    for t in $TYPES; do
        if [ -n "$OLD" ] && [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
        for which in $order; do
            case $which in
            new) bin=$BK ;;
            old) bin=$OLD ;;
            esac
            [ -n "$bin" ] || continue
            # shellcheck disable=SC2086
            timed "$which:$t" "$bin" build -q "$OUT/f.bf" "$FILE" --type "$t" -p 1% $OPTS
        done
    done
    r=$((r + 1))
done
echo "load at end:   $(uptime | sed 's/.*load average: //')"
# median and minimum of column $2 (wall us) and $3 (cpu s) per label
stat() { # label column -> "median min"
    awk -v l="$1" -v c="$2" '$1 == l { print $c }' "$OUT/runs" | sort -g |
        awk '{ v[NR] = $1 } END { printf "%s %s", v[int((NR + 1) / 2)], v[1] }'
}
set -- $(stat wc 3)
wc_med=$1 wc_min=$2
printf "%-28s %10s %9s %10s %9s %13s %11s\n" "command" "cpu med s" "cpu min s" "wall med s" "wall min" "x wc cpu med" "x wc cpu min"
for l in $labels; do
    set -- $(stat "$l" 3) $(stat "$l" 2)
    case $l in
    wc) name="wc -l" ;;
    new:*) name="build --type ${l#new:}" ;;
    old:*) name="(OLD) build --type ${l#old:}" ;;
    esac
    awk -v n="$name" -v cm="$1" -v cn="$2" -v wm="$3" -v wn="$4" -v rm="$wc_med" -v rn="$wc_min" 'BEGIN {
        printf "%-28s %10.3f %9.3f %10.3f %9.3f %12.2fx %10.2fx\n", n, cm, cn, wm / 1e6, wn / 1e6,
            cm / (rm > 0.001 ? rm : 0.001), cn / (rn > 0.001 ? rn : 0.001) }'
done
