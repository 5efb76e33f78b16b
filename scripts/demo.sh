#!/bin/sh
# `make demo`: the bloomkit command on a made-up web crawl, start to finish, no server or network.
#   1. generate 1,000,000 URLs the crawler has seen and 500,000 it has never seen (deterministic);
#   2. bloomkit build a filter of the seen URLs at 1% false positives;
#   3. bloomkit info on it;
#   4. pipe the seen URLs and then the unseen ones through bloomkit filter (keep the absent ones);
#   5. print what was measured: keys, file size, bits per key, FPR against the target, keys per second;
#   6. say where the command is (and how to put it on the PATH) and three things to try next.
# The commands are shown as the reader can type them: "bloomkit" when it is on the PATH, else its path.
# Usage: scripts/demo.sh BUILD_DIR   (the bloomkit binary is BUILD_DIR/src/cli/bloomkit)
set -eu

BUILD=${1:-build}
BK="$BUILD/src/cli/bloomkit"
DIR="$BUILD/demo"
SEEN=${BK_DEMO_SEEN:-1000000}      # smaller in the test that runs this script
UNSEEN=${BK_DEMO_UNSEEN:-500000}
P=1%
[ -x "$BK" ] || { echo "demo: $BK not built (run make build)" >&2; exit 2; }
mkdir -p "$DIR"

# The command as the reader can type it: "bloomkit" when that name on the PATH is this very binary,
# else its path (relative to the current directory when it is below it, as from the source tree).
bk_real=$(readlink -f "$BK")
on_path=$(command -v bloomkit 2>/dev/null || true)
if [ -n "$on_path" ] && [ "$(readlink -f "$on_path")" = "$bk_real" ]; then
    SHOW=bloomkit
else
    case "$bk_real" in
        "$(pwd -P)"/*) SHOW=${bk_real#"$(pwd -P)"/} ;;
        *) SHOW=$bk_real ;;
    esac
fi

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
echo "\$ $SHOW build $DIR/seen.bf $DIR/seen.txt -p $P"
t0=$(now)
"$BK" build "$DIR/seen.bf" "$DIR/seen.txt" -p "$P"
t1=$(now)

echo
echo "\$ $SHOW info $DIR/seen.bf"
"$BK" info "$DIR/seen.bf"

echo
echo "\$ $SHOW filter $DIR/seen.bf < $DIR/seen.txt | wc -l     # every seen URL is dropped"
missed=$("$BK" filter "$DIR/seen.bf" < "$DIR/seen.txt" | wc -l)
echo "$missed"
echo "\$ $SHOW filter $DIR/seen.bf < $DIR/unseen.txt > $DIR/new.txt  # the new URLs are kept"
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

# Where the command is, and what to try next.
echo
if [ "$SHOW" = bloomkit ]; then
    echo "The bloomkit command is $bk_real (on your PATH)."
else
    echo "The bloomkit command is $bk_real; it is not on your PATH. To type just bloomkit:"
    echo "  export PATH=\"$(dirname "$bk_real"):\$PATH\"      # this shell only; or: sudo make install"
fi
echo "Three things to try:"
echo "  1. what each of the nine filter types needs for 10 million keys at 0.1%:"
echo "       $SHOW calc -n 10M -p 0.1%"
echo "  2. ask the filter about a few keys (present/absent, one line each):"
echo "       head -3 $DIR/seen.txt | $SHOW query $DIR/seen.bf"
echo "  3. dedup in one pass, in constant memory: every URL twice in, once out:"
echo "       cat $DIR/seen.txt $DIR/seen.txt | $SHOW filter --add | wc -l"
echo "Then: $SHOW --help, man docs/bloomkit.1, docs/CLI.md and docs/GUIDE.md."
