#!/bin/sh
# Crawler frontier: "have we seen this URL?" for a crawl whose size nobody knows in advance, with a
# scalable Bloom filter file and one bloomkit command in a shell pipeline.
#
# Each round the crawler discovers links (crawl_gen prints them: new pages mixed with links to pages
# seen before). The frontier keeps only the URLs the filter has certainly not seen:
#
#     crawl_gen gen --round R ... | bloomkit filter --add seen.bk > new.txt
#
# `filter --add` (one-pass dedup) drops every URL already in the filter (no false negatives: a seen
# page is never crawled twice) and, at the filter's false-positive rate, a page that is new (skipped
# wrongly: the price of the filter); it prints each other URL and adds it at once, so a repeat later
# in the round is dropped too. The filter is scalable, so it starts small and grows a sub-filter at
# a time while its compound false-positive rate stays under the target p.
#
# The script checks every round against the generator's truth and reports the URLs skipped wrongly
# against the bound p. Exit status 0 when no seen page was kept and the wrongly skipped stay within
# the bound (with room for sampling noise), 1 otherwise, 2 on errors.
#
#   crawler_frontier.sh [--rounds R] [--fresh F] [--repeat-share X] [--fpr P] [--initial N]
#                       [--seed S] [--bloomkit PATH] [--crawl-gen PATH] [--dir DIR]
set -eu

rounds=10
fresh=200000
repeat_share=0.6
fpr=0.01
initial=100000
seed=1
here=$(cd "$(dirname "$0")" && pwd)
bloomkit=${BLOOMKIT:-bloomkit}
crawl_gen=${CRAWL_GEN:-crawl_gen}
dir=

usage() {
    sed -n '21,22p' "$0" | sed 's/^# *//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage
    case $1 in
    --rounds) rounds=$2 ;;
    --fresh) fresh=$2 ;;
    --repeat-share) repeat_share=$2 ;;
    --fpr) fpr=$2 ;;
    --initial) initial=$2 ;;
    --seed) seed=$2 ;;
    --bloomkit) bloomkit=$2 ;;
    --crawl-gen) crawl_gen=$2 ;;
    --dir) dir=$2 ;;
    *) usage ;;
    esac
    shift 2
done
# The programs: from PATH, or the build tree next to this script's source (build/...).
for prog in bloomkit crawl_gen; do
    eval "p=\$$prog"
    if ! command -v "$p" >/dev/null 2>&1; then
        for cand in "$here/../build/src/cli/$prog" "$here/../build/examples/$prog" "$here/$prog"; do
            if [ -x "$cand" ]; then p=$cand; break; fi
        done
    fi
    command -v "$p" >/dev/null 2>&1 || { echo "crawler_frontier: cannot find $prog (use --$prog PATH)" >&2; exit 2; }
    eval "$prog=\$p"
done
crawl_gen_cmd=$crawl_gen

cleanup_dir=
if [ -z "$dir" ]; then
    dir=$(mktemp -d "${TMPDIR:-/tmp}/crawler_frontier.XXXXXX")
    cleanup_dir=$dir
    trap 'rm -rf "$cleanup_dir"' EXIT
fi
mkdir -p "$dir"
seen=$dir/seen.bk
rm -f "$seen"

"$bloomkit" create "$seen" --type scalable -n "$initial" -p "$fpr" --seed "$((seed * 7919 + 17))" -q

now() { date +%s.%N; }
frontier_s=0
total_lines=0
total_fresh=0
total_kept=0
total_wrong=0
total_old=0
printf '%6s %12s %10s %10s %15s %14s\n' round discovered new kept "skipped wrongly" "seen re-kept"
r=0
while [ "$r" -lt "$rounds" ]; do
    "$crawl_gen_cmd" gen --round "$r" --fresh "$fresh" --repeat-share "$repeat_share" --seed "$seed" \
        >"$dir/discovered.txt"
    # The frontier itself: one bloomkit command (through files so that set -e sees its failure; in a
    # crawler this is the pipeline at the top of this file).
    ta=$(now)
    "$bloomkit" filter --add "$seen" -q <"$dir/discovered.txt" >"$dir/new.txt"
    tb=$(now)
    frontier_s=$(awk -v a="$ta" -v b="$tb" -v s="$frontier_s" 'BEGIN { printf "%.6f", s + b - a }')

    lines=$(wc -l <"$dir/discovered.txt")
    set -- $("$crawl_gen_cmd" check --round "$r" --fresh "$fresh" <"$dir/new.txt")
    kept=$1
    old=$2
    wrong=$((fresh - kept))
    printf '%6d %12d %10d %10d %15d %14d\n' "$r" "$lines" "$fresh" "$kept" "$wrong" "$old"
    total_lines=$((total_lines + lines))
    total_fresh=$((total_fresh + fresh))
    total_kept=$((total_kept + kept))
    total_wrong=$((total_wrong + wrong))
    total_old=$((total_old + old))
    r=$((r + 1))
done

echo
"$bloomkit" info "$seen" || true
echo
bytes=$(wc -c <"$seen")
awk -v lines="$total_lines" -v fresh="$total_fresh" -v wrong="$total_wrong" -v old="$total_old" \
    -v p="$fpr" -v t="$frontier_s" -v bytes="$bytes" '
BEGIN {
    rate = wrong / fresh
    expect = p * fresh
    printf "crawl: %d discovered links, %d distinct pages; the frontier (filter --add) took %.2f s, %.0f links/s\n",
        lines, fresh, t, lines / t
    printf "filter file: %.1f KB for %d pages (%.2f bits per page)\n", bytes / 1e3, fresh, bytes * 8 / fresh
    printf "skipped wrongly: %d of %d new pages = %.4f%% (bound: the scalable filter keeps it under p = %.4f%%)\n",
        wrong, fresh, 100 * rate, 100 * p
    printf "seen pages kept again (false negatives, must be 0): %d\n", old
    fail = 0
    if (old > 0) { print "FAIL: pages already seen were kept as new"; fail = 1 }
    if (wrong > expect + 4 * sqrt(expect) + 1) { print "FAIL: more new pages skipped than the bound allows"; fail = 1 }
    if (!fail) print "check: no seen page was kept; pages skipped wrongly within the bound"
    exit fail
}'
