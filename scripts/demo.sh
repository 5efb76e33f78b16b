#!/bin/sh
# `make demo`: the bloomkit command on a made-up web crawl, start to finish, no server or network.
#   1. generate 1,000,000 URLs the crawler has seen and 500,000 it has never seen (deterministic);
#   2. bloomkit build a filter of the seen URLs at 1% false positives;
#   3. bloomkit info on it;
#   4. pipe the seen URLs and then the unseen ones through bloomkit filter (keep the absent ones);
#   5. print what was measured: keys, file size, bits per key, FPR against the target, keys per second.
# Usage: scripts/demo.sh BUILD_DIR   (the bloomkit binary is BUILD_DIR/src/cli/bloomkit)
set -eu

BUILD=${1:-build}
BK="$BUILD/src/cli/bloomkit"
DIR="$BUILD/demo"
SEEN=1000000
UNSEEN=500000
P=1%
[ -x "$BK" ] || { echo "demo: $BK not built (run make build)" >&2; exit 2; }
mkdir -p "$DIR"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# URLs of a made-up crawl: a few hosts, paths and query strings drawn from a Park-Miller generator
# (exact in awk's doubles), so every run produces the same files. Seen and unseen URLs come from
# different streams of the same shape, and are all distinct (the serial number is part of the path).
gen() { # gen COUNT SEED TAG
    awk -v n="$1" -v x="$2" -v tag="$3" 'BEGIN {
        split("news.example shop.example docs.example blog.example wiki.example video.example forum.example maps.example", host, " ");
        split("article product page post topic watch thread place", kind, " ");
        for (i = 0; i < n; i++) {
            x = (x * 16807) % 2147483647; h = x % 8 + 1;
            x = (x * 16807) % 2147483647; y = x % 30 + 1995;
            x = (x * 16807) % 2147483647;
            printf "https://%s/%d/%s/%s-%d-%d.html?ref=%d\n", host[h], y, kind[h], tag, i, x % 100000, x % 997;
        }
    }'
}

if [ ! -s "$DIR/seen.txt" ] || [ ! -s "$DIR/unseen.txt" ]; then
    echo "generating $SEEN seen and $UNSEEN never-seen URLs in $DIR ..."
    gen "$SEEN" 42 c > "$DIR/seen.txt"
    gen "$UNSEEN" 4242 u > "$DIR/unseen.txt"
fi
echo
echo "\$ head -3 $DIR/seen.txt"
head -3 "$DIR/seen.txt"

echo
echo "\$ bloomkit build $DIR/seen.bf $DIR/seen.txt -p $P"
t0=$(now)
"$BK" build "$DIR/seen.bf" "$DIR/seen.txt" -p "$P"
t1=$(now)

echo
echo "\$ bloomkit info $DIR/seen.bf"
"$BK" info "$DIR/seen.bf"

echo
echo "\$ bloomkit filter $DIR/seen.bf < seen.txt | wc -l     # every seen URL is dropped"
missed=$("$BK" filter "$DIR/seen.bf" < "$DIR/seen.txt" | wc -l)
echo "$missed"
echo "\$ bloomkit filter $DIR/seen.bf < unseen.txt > new.txt  # the new URLs are kept"
t2=$(now)
"$BK" filter "$DIR/seen.bf" < "$DIR/unseen.txt" > "$DIR/new.txt"
t3=$(now)
kept=$(wc -l < "$DIR/new.txt")
size=$(wc -c < "$DIR/seen.bf")

echo
echo "bloomkit demo: what was measured"
awk -v seen="$SEEN" -v unseen="$UNSEEN" -v kept="$kept" -v missed="$missed" -v size="$size" \
    -v tb="$(secs "$t0" "$t1")" -v tf="$(secs "$t2" "$t3")" -v p=0.01 'BEGIN {
    fpr = (unseen - kept) / unseen;
    printf "  keys in the filter:        %d URLs\n", seen;
    printf "  file size:                 %d bytes (%.2f MiB)\n", size, size / 1048576;
    printf "  bits per key:              %.2f (file bytes x 8 / keys)\n", size * 8 / seen;
    printf "  seen URLs kept by filter:  %d (false negatives: must be 0)\n", missed;
    printf "  unseen URLs wrongly dropped: %d of %d = %.3f%% measured FPR (target %.3f%%)\n", unseen - kept, unseen, 100 * fpr, 100 * p;
    printf "  build:  %.2f s, %.2f M keys/s (read, count distinct, size, insert, save with fsync)\n", tb, seen / tb / 1e6;
    printf "  filter: %.2f s, %.2f M keys/s (unseen URLs through filter --absent)\n", tf, unseen / tf / 1e6;
    if (missed != 0) exit 1;
}'
