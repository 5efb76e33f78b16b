#!/bin/sh
# Benchmark of the bloomkit command (figures, never pass/fail):
#   1. `bloomkit build` over two 10,000,000-line files of URLs, against `wc -l` on the same file
#      (reading is the floor; target: build at most 2x wc -l): long generated URLs (about 67 bytes a
#      line) and host URLs of the shape https://host123.example.net/p/4567/1a2b3c (about 47 bytes);
#   2. `bloomkit filter` over 10,000,000 short lines with an in-cache filter (100,000 keys, 117 KiB)
#      (target: at least 20 million lines per second per core);
#   3. one-pass dedup, `bloomkit filter --add` (in memory, and into a filter file), against
#      `awk '!s[$0]++'` and `sort -u`, over 10,000,000 short lines drawn from 100,000 distinct values
#      (the filter stays in cache; target: at least 20 million lines per second per core).
# Each command runs REPEAT times (default 3), files warm in the page cache; the best wall time is
# reported, with its user+system CPU time (on a busy machine the CPU time is the fairer figure: check
# the load printed first). Rows marked "(1 thread)" run without the read-ahead thread
# (BLOOMKIT_READAHEAD=0) and, for build, with one thread for the fill (BLOOMKIT_THREADS=1): their
# lines per CPU-second are the per-core figure.
#
# Usage: bench/cli_bench.sh [BUILD_DIR]   env: N (lines, default 10000000), REPEAT, DIR (work dir),
#                                              TYPES (build types, default "bloom blocked"),
#                                              BUILD_ONLY=1 (stop after the build rows)
set -eu

BUILD=${1:-build}
BK="$BUILD/src/cli/bloomkit"
N=${N:-10000000}
REPEAT=${REPEAT:-3}
DIR=${DIR:-$BUILD/bench-cli}
TYPES=${TYPES:-bloom blocked}
[ -x "$BK" ] || { echo "cli_bench: $BK not built" >&2; exit 2; }
mkdir -p "$DIR"

URLS="$DIR/urls-$N.txt"
HOSTS="$DIR/hosturls-$N.txt"
SHORT="$DIR/short-$N.txt"
if [ ! -s "$URLS" ]; then
    echo "generating $URLS ..." >&2
    awk -v n="$N" 'BEGIN { x = 7; for (i = 0; i < n; i++) { x = (x * 16807) % 2147483647;
        printf "https://www.example-crawl.test/section-%d/item/%d-%d.html\n", x % 500, i, x % 100003 } }' > "$URLS"
fi
if [ ! -s "$HOSTS" ]; then
    echo "generating $HOSTS ..." >&2
    awk -v n="$N" 'BEGIN { x = 11; for (i = 0; i < n; i++) { x = (x * 16807) % 2147483647;
        printf "https://host%d.example.net/p/%d/%06x\n", x % 100000, i, x % 16777216 } }' > "$HOSTS"
fi
if [ ! -s "$SHORT" ]; then
    echo "generating $SHORT ..." >&2
    awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "k%d\n", i * 7 }' > "$SHORT"
fi
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "k%d\n", i * 13 }' | "$BK" build -q "$DIR/small.bf"
cat "$URLS" "$HOSTS" "$SHORT" > /dev/null

# best-of-REPEAT: prints "wall cpu" of the fastest run of the command given as arguments. The wall
# time is read with date +%s%N around the run (to the millisecond; /usr/bin/time's own is in 10 ms
# steps, 5% of a 0.2 s run), the CPU time (user + system) from /usr/bin/time.
TIMES="$DIR/times"
best() {
    : > "$TIMES"
    i=0
    while [ "$i" -lt "$REPEAT" ]; do
        t0=$(date +%s%N)
        /usr/bin/time -f "%U %S" -o "$TIMES.one" "$@" > /dev/null
        t1=$(date +%s%N)
        echo "$(((t1 - t0) / 1000)) $(cat "$TIMES.one")" >> "$TIMES"
        i=$((i + 1))
    done
    sort -n "$TIMES" | head -1 | awk '{ printf "%.3f %.3f", $1 / 1e6, $2 + $3 }'
}

echo "bloomkit CLI benchmark, $(date -u +%Y-%m-%dT%H:%MZ); load: $(uptime | sed 's/.*load average: //')"
echo "CPU: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; best of $REPEAT runs"
printf "%-66s %8s %8s %10s %9s %9s\n" "command" "wall s" "cpu s" "lines/s" "x wc wall" "x wc cpu"
for file in "$URLS" "$HOSTS"; do
    name=urls; [ "$file" = "$HOSTS" ] && name=hosturls
    bytes=$(wc -c < "$file")
    echo
    set -- $(best wc -l "$file")
    wc_wall=$1 wc_cpu=$2
    printf "%-66s %8s %8s %10s %9s %9s\n" "wc -l $name ($N lines, $((bytes / 1048576)) MiB)" "$wc_wall" "$wc_cpu" \
        "$(awk -v n="$N" -v t="$wc_wall" 'BEGIN { printf "%.1fM", n / t / 1e6 }')" "1.00" "1.00"
    for t in $TYPES; do
        if ! "$BK" calc -n 1000 -p 1% --type "$t" > /dev/null 2>&1; then continue; fi
        for ra in 1 0; do
            label="bloomkit build -q out.bf $name --type $t -p 1%"
            [ "$ra" = 0 ] && label="$label (1 thread)"
            th=; [ "$ra" = 0 ] && th=1
            set -- $(BLOOMKIT_READAHEAD=$ra BLOOMKIT_THREADS=$th best "$BK" build -q "$DIR/$name-$t.bf" "$file" --type "$t" -p 1%)
            printf "%-66s %8s %8s %10s %9s %9s\n" "$label" "$1" "$2" \
                "$(awk -v n="$N" -v t="$1" 'BEGIN { printf "%.1fM", n / t / 1e6 }')" \
                "$(awk -v a="$1" -v b="$wc_wall" 'BEGIN { printf "%.2f", a / b }')" \
                "$(awk -v a="$2" -v b="$wc_cpu" 'BEGIN { printf "%.2f", a / (b > 0.001 ? b : 0.001) }')"
        done
    done
done
echo "load at end: $(uptime | sed 's/.*load average: //')"
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0
echo
set -- $(best wc -l "$SHORT")
sw=$1 sc=$2
printf "%-66s %8s %8s %10s\n" "wc -l short ($N lines, $(($(wc -c < "$SHORT") / 1048576)) MiB)" "$sw" "$sc" \
    "$(awk -v n="$N" -v t="$sw" 'BEGIN { printf "%.1fM", n / t / 1e6 }')"
for mode in --absent --present; do
    for ra in 1 0; do
        label="bloomkit filter $mode small.bf < short > /dev/null"
        [ "$ra" = 0 ] && label="$label (1 thread)"
        set -- $(BLOOMKIT_READAHEAD=$ra best sh -c "\"$BK\" filter $mode \"$DIR/small.bf\" < \"$SHORT\" > /dev/null")
        printf "%-66s %8s %8s %10s   (per cpu-second: %s)\n" "$label" "$1" "$2" \
            "$(awk -v n="$N" -v t="$1" 'BEGIN { printf "%.1fM", n / t / 1e6 }')" \
            "$(awk -v n="$N" -v t="$2" 'BEGIN { printf "%.1fM", n / (t > 0.001 ? t : 0.001) / 1e6 }')"
    done
done
set -- $(best sh -c "\"$BK\" filter \"$DIR/urls-bloom.bf\" < \"$URLS\" > /dev/null")
printf "%-66s %8s %8s %10s\n" "bloomkit filter urls-bloom.bf < urls > /dev/null (out of cache)" "$1" "$2" \
    "$(awk -v n="$N" -v t="$1" 'BEGIN { printf "%.1fM", n / t / 1e6 }')"

echo
REP="$DIR/repeats-$N.txt"
if [ ! -s "$REP" ]; then
    echo "generating $REP ..." >&2
    awk -v n="$N" 'BEGIN { x = 7; for (i = 0; i < n; i++) { x = (x * 16807) % 2147483647; printf "k%d\n", x % 100000 } }' > "$REP"
fi
cat "$REP" > /dev/null
"$BK" filter --add < "$REP" | "$BK" build -q "$DIR/dedup.bf"
printf "%-66s %8s %8s %10s\n" "dedup of $N lines ($(wc -c < "$REP") bytes, 100,000 distinct)" "wall s" "cpu s" "lines/s"
dedup_row() { # label, then the command
    label=$1
    shift
    set -- $(best "$@")
    printf "%-66s %8s %8s %10s   (per cpu-second: %s)\n" "$label" "$1" "$2" \
        "$(awk -v n="$N" -v t="$1" 'BEGIN { printf "%.1fM", n / t / 1e6 }')" \
        "$(awk -v n="$N" -v t="$2" 'BEGIN { printf "%.1fM", n / (t > 0.001 ? t : 0.001) / 1e6 }')"
}
for ra in 1 0; do
    sfx=; [ "$ra" = 0 ] && sfx=" (1 thread)"
    dedup_row "bloomkit filter --add < rep > /dev/null$sfx" env BLOOMKIT_READAHEAD=$ra sh -c "\"$BK\" filter --add < \"$REP\" > /dev/null"
    dedup_row "bloomkit filter --add seen.bf < rep > /dev/null$sfx" env BLOOMKIT_READAHEAD=$ra sh -c \
        "cp \"$DIR/dedup.bf\" \"$DIR/seen.bf\" && \"$BK\" filter --add \"$DIR/seen.bf\" < \"$REP\" > /dev/null"
done
REPEAT=${REPEAT_SLOW:-1}
dedup_row "awk '!s[\$0]++' rep > /dev/null" sh -c "awk '!s[\$0]++' \"$REP\" > /dev/null"
dedup_row "sort -u rep > /dev/null" sh -c "sort -u \"$REP\" > /dev/null"
rm -f "$TIMES" "$TIMES.one" "$DIR/seen.bf"
