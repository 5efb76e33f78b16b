#!/bin/sh
# Renders the README's charts from the bench program: measured FPR against bits per key for every
# filter type (with the theoretical curves), and throughput per type.
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

# 1. FPR against bits per key: one run per target p, single-key forms only.
for p in 0.2 0.1 0.05 0.02 0.01 0.005 0.002 0.001 0.0005 0.0002 0.0001; do
    "$bench" -n "$n" -p "$p" --csv --no-batch | tail -n +2
done > "$work/fpr.csv"
# 2. Throughput at p = 1%, single and batch forms.
"$bench" -n "$n" -p 0.01 --csv | tail -n +2 > "$work/speed.csv"

# one data file per filter: bits_per_key fpr
names=$(cut -d, -f1 "$work/fpr.csv" | grep -vx floor | sort -u) # floor: a memory-speed reference, not a filter
plotcmd=""
for name in $names; do
    awk -F, -v n="$name" '$1 == n && $7 > 0 { print $6, $7 }' "$work/fpr.csv" | sort -g > "$work/fpr-$name.dat"
    [ -s "$work/fpr-$name.dat" ] || continue
    plotcmd="$plotcmd \"$work/fpr-$name.dat\" using 1:2 with linespoints title \"$name\","
done
gnuplot <<GP
set terminal pngcairo size 900,600 enhanced font "sans,11"
set output "$out/fpr.png"
set title "Measured false-positive rate against space (n = $n, 1 run per target p)"
set xlabel "bits per key"
set ylabel "false-positive rate"
set logscale y
set format y "10^{%L}"
set key top right
set grid
set xrange [2:28]
set yrange [5e-6:0.5]
ln2 = log(2)
classic(b) = exp(-b * ln2 * ln2)
fuse(b) = 2**(-b / 1.125)
bound(b) = 2**(-b)
plot $plotcmd classic(x) with lines dashtype 2 lw 2 title "classic optimum e^{-b ln^2 2}", \
     fuse(x) with lines dashtype 3 lw 2 title "binary fuse 2^{-b/1.125}", \
     bound(x) with lines dashtype 4 lw 2 title "information bound 2^{-b} (Ribbon: about 2^{-b/1.04})"
GP

awk -F, '$2 == "inline-prehashed" || $1 == "floor" { next } { label = $1 ($2 == "batch" ? " (batch)" : ""); printf "\"%s\" %.2f %.2f %.2f\n", label, 1000/$8, 1000/$9, 1000/$11 }' \
    "$work/speed.csv" > "$work/speed.dat"
gnuplot <<GP
set terminal pngcairo size 1000,600 enhanced font "sans,11"
set output "$out/throughput.png"
set title "Throughput per filter type (n = $n 8-byte keys, p = 1%)"
set ylabel "million operations per second"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -30
set rmargin 8
set grid ytics
set key top right
plot "$work/speed.dat" using 2:xtic(1) title "insert", "" using 3 title "query (hit)", "" using 4 title "query (miss)"
GP
echo "plots: wrote $out/fpr.png and $out/throughput.png"
