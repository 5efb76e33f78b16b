#!/bin/sh
# Renders the README's charts from the bench program: measured FPR against bits per key for each of
# the nine filter types (with the theoretical curves), and throughput per type.
#   scripts/plots.sh [BUILD_DIR] [OUT_DIR] [N]
set -eu
build=${1:-build}
out=${2:-docs/img}
n=${3:-1000000}
bench="$build/bench/bench"
[ -x "$bench" ] || { echo "plots: $bench not built (libbloom-dev missing?)" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "plots: gnuplot not installed (scripts/deps.sh installs it)" >&2; exit 2; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One series per filter type (the names of `bloomkit --type`): bench contender, colour, point type,
# and a legend that says what was measured. "%n" is replaced by n with thousands separators.
series() {
    cat <<'LIST'
bloom|#1f77b4|5|bloom: classic, k probes anywhere in m bits
partitioned|#17becf|4|partitioned: classic, one slice of m/k bits per probe
blocked|#d62728|7|blocked: all probes in one 256-bit block
counting|#8c564b|9|counting: classic with 4-bit counters (deletes)
scalable|#ff7f0e|11|scalable: started at 100 keys, grown (x2 per sub-filter) to %n
cuckoo|#2ca02c|13|cuckoo: buckets of 4 fingerprints, 95% full at n
fuse|#9467bd|15|fuse: binary fuse, 8-bit (16-bit below p = 1/256), built from all keys
aging|#e377c2|1|aging: a window of the last n insertions, holding all n
quotient|#7f7f7f|2|quotient: one remainder and 2.5 metadata bits per slot
ribbon|#bcbd22|3|ribbon: a static set solved over GF(2), any p, built from all keys
LIST
}
only=$(series | cut -d'|' -f1 | paste -sd, -)
ngroup=$(printf '%s' "$n" | awk '{ s = $0; o = ""; while (length(s) > 3) { o = "," substr(s, length(s) - 2) o; s = substr(s, 1, length(s) - 3) } print s o }')

# 1. FPR against bits per key: one run per target p, single-key forms only.
for p in 0.2 0.1 0.05 0.02 0.01 0.005 0.002 0.001 0.0005 0.0002 0.0001; do
    "$bench" -n "$n" -p "$p" --csv --no-batch --only "$only" | tail -n +2
done > "$work/fpr.csv"
# 2. Throughput at p = 1%, one key per call.
"$bench" -n "$n" -p 0.01 --csv --no-batch --repeat 3 --only "$only" | tail -n +2 > "$work/speed.csv"

plotcmd=""
series | while IFS='|' read -r name colour pt label; do
    awk -F, -v n="$name" '$1 == n && $2 == "single" && $7 > 0 { print $6, $7 }' "$work/fpr.csv" | sort -g > "$work/fpr-$name.dat"
    [ -s "$work/fpr-$name.dat" ] || { echo "plots: no FPR figures for $name" >&2; exit 2; }
done
for name in $(series | cut -d'|' -f1); do
    line=$(series | grep "^$name|")
    colour=$(echo "$line" | cut -d'|' -f2)
    pt=$(echo "$line" | cut -d'|' -f3)
    label=$(echo "$line" | cut -d'|' -f4 | sed "s/%n/$ngroup/")
    plotcmd="$plotcmd \"$work/fpr-$name.dat\" using 1:2 with linespoints lw 2 pt $pt ps 1.2 lc rgb \"$colour\" title \"$label\","
done
gnuplot <<GP
set terminal pngcairo size 1250,620 enhanced font "sans,11"
set output "$out/fpr.png"
set title "Measured false-positive rate against memory, n = $ngroup keys (one run per target p, 20% to 0.01%)" offset 22,0
set xlabel "bits per key (memory of the filter's arrays x 8 / n)"
set ylabel "false-positive rate (measured on absent keys)"
set logscale y
set format y "10^{%L}"
set key outside right top Left reverse spacing 1.25 samplen 3
set lmargin 10
set grid
set xrange [2:40]
set yrange [5e-6:0.5]
ln2 = log(2)
classic(b) = exp(-b * ln2 * ln2)
fuse(b) = 2**(-b / 1.125)
bound(b) = 2**(-b)
plot $plotcmd classic(x) with lines dashtype 2 lw 2 lc rgb "#000000" title "theory: classic optimum e^{-b ln^2 2}", \
     fuse(x) with lines dashtype 3 lw 2 lc rgb "#555555" title "theory: binary fuse 2^{-b/1.125}", \
     bound(x) with lines dashtype 4 lw 2 lc rgb "#999999" title "theory: information bound 2^{-b}"
GP

# insert, query of a present key, query of an absent key: ns per operation -> million per second
: > "$work/speed.dat"
tics=""
i=0
for name in $(series | cut -d'|' -f1); do
    case $name in
        scalable) tic='scalable\n(from 100)' ;;
        fuse) tic='fuse\n(insert =\nbuild)' ;;
        aging) tic='aging\n(window n)' ;;
        ribbon) tic='ribbon\n(insert =\nbuild)' ;;
        *) tic=$name ;;
    esac
    awk -F, -v n="$name" '$1 == n && $2 == "single" { printf "%s %.2f %.2f %.2f\n", n, 1000/$8, 1000/$9, 1000/$11 }' \
        "$work/speed.csv" >> "$work/speed.dat"
    tics="$tics${tics:+, }\"$tic\" $i"
    i=$((i + 1))
done
gnuplot <<GP
set terminal pngcairo size 1100,640 enhanced font "sans,11"
set bmargin 5
set output "$out/throughput.png"
set title "Throughput per filter type (n = $ngroup 8-byte keys, p = 1%, one key per call, one core)"
set ylabel "million operations per second"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics nomirror ($tics)
set grid ytics
set key outside top center horizontal
set yrange [0:*]
plot "$work/speed.dat" using 2 lc rgb "#1f77b4" title "insert", \
     "" using 3 lc rgb "#2ca02c" title "query, key present", \
     "" using 4 lc rgb "#ff7f0e" title "query, key absent"
GP
echo "plots: wrote $out/fpr.png and $out/throughput.png"
