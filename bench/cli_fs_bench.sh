#!/bin/sh
# In-place `bloomkit add` on different file systems (figures, never pass/fail; needs root): ext4,
# btrfs (plain and a chattr +C directory) and XFS, each a loop image mounted in a temporary
# directory. For each filter type: create a filter for 1,000,000 keys at 1% on the mount, then time
# one `bloomkit add` of KEYS keys (default 200,000) and count the bytes the loop device wrote during
# it. Types with atomic inserts are updated through a shared mapping on ext4 and XFS; on btrfs they
# are loaded, changed and saved (a mapping there costs a copy-on-write of a page per write).
#
# Usage: bench/cli_fs_bench.sh [BUILD_DIR]   env: KEYS, TYPES (default "bloom blocked counting"), REPEAT
set -eu

BUILD=${1:-build}
BK="$(cd "$BUILD" && pwd)/src/cli/bloomkit"
KEYS=${KEYS:-200000}
TYPES=${TYPES:-bloom blocked counting}
REPEAT=${REPEAT:-3}
[ -x "$BK" ] || { echo "cli_fs_bench: $BK not built" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "cli_fs_bench: needs root (it mounts loop images)" >&2; exit 2; }

W=$(mktemp -d /tmp/bloomkit-fsbench.XXXXXX)
cleanup() {
    for m in "$W"/m-*; do umount "$m" 2>/dev/null || true; done
    rm -rf "$W"
}
trap cleanup EXIT INT TERM

awk -v n="$KEYS" 'BEGIN { for (i = 0; i < n; i++) printf "https://www.example-crawl.test/a/%d/p.html\n", i }' > "$W/keys"

mountfs() { # fs -> prints the mount point
    truncate -s 512M "$W/$1.img"
    case $1 in
    ext4) mkfs.ext4 -q -F "$W/$1.img" ;;
    btrfs) mkfs.btrfs -q -f "$W/$1.img" > /dev/null ;;
    xfs) mkfs.xfs -q -f "$W/$1.img" ;;
    esac
    mkdir -p "$W/m-$1"
    mount -o loop "$W/$1.img" "$W/m-$1"
    echo "$W/m-$1"
}

written() { # mount point -> sectors written so far by its loop device
    dev=$(findmnt -n -o SOURCE "$1")
    awk '{ print $7 }' "/sys/block/$(basename "$dev")/stat"
}

echo "bloomkit add on file systems, $(date -u +%Y-%m-%dT%H:%MZ); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$KEYS keys into a filter for 1,000,000 at 1%; best of $REPEAT runs (each on a new filter)"
printf "%-10s %-16s %10s %12s %10s\n" type "file system" "wall s" "MiB written" "x ext4"
for t in $TYPES; do
    ext4=
    for fs in ext4 btrfs btrfs+C xfs; do
        base=${fs%+C}
        mnt=$(findmnt -n -o TARGET "$W/m-$base" 2>/dev/null || mountfs "$base")
        d="$mnt"
        if [ "$fs" = btrfs+C ]; then d="$mnt/nocow"; mkdir -p "$d"; chattr +C "$d"; fi
        best=
        i=0
        while [ "$i" -lt "$REPEAT" ]; do
            rm -f "$d/f.bf"
            "$BK" create -q "$d/f.bf" -n 1M -p 1% --type "$t"
            sync
            s0=$(written "$mnt")
            t0=$(date +%s%N)
            "$BK" add -q "$d/f.bf" < "$W/keys"
            sync
            t1=$(date +%s%N)
            s1=$(written "$mnt")
            wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
            if [ -z "$best" ] || awk -v a="$wall" -v b="$best" 'BEGIN { exit !(a < b) }'; then
                best=$wall mib=$(awk -v s="$((s1 - s0))" 'BEGIN { printf "%.1f", s * 512 / 1048576 }')
            fi
            i=$((i + 1))
        done
        [ "$fs" = ext4 ] && ext4=$best
        printf "%-10s %-16s %10s %12s %10s\n" "$t" "$fs" "$best" "$mib" \
            "$(awk -v a="$best" -v b="$ext4" 'BEGIN { printf "%.2f", a / b }')"
    done
done
