#!/bin/sh
# The ABI record of the shared library (libabigail, Debian's abigail-tools).
#   abi.sh record BUILD   writes abi/libbloomkit.so.<major>.xml from BUILD's library (make abi-record)
#   abi.sh check BUILD    compares BUILD's library with that record (a test of make check): fails on an
#                         incompatible change (abidiff's bit 8: a removed symbol), on any change to a
#                         recorded function or variable (its parameters, return type, or a type it reaches:
#                         abidiff reports these with bit 4 only, like additions, so its summary is read)
#                         and on abidiff errors; added functions and abidiff's harmless changes (such as a
#                         new enumerator) pass, and abidiff's report is printed either way.
# Only the types of the public headers count (include/bloomkit); the library must have debug information
# (the default RelWithDebInfo build has it).
set -eu
mode=$1; build=$(cd "$2" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
major=$(sed -n 's/^#define BK_VERSION_MAJOR \([0-9]*\)$/\1/p' "$top/include/bloomkit/common.h")
lib="$build/libbloomkit.so.$major"
record="$top/abi/libbloomkit.so.$major.xml"
for tool in abidw abidiff; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (abigail-tools, scripts/deps.sh)"; exit 77; }
done
[ -f "$lib" ] || { echo "abi: $lib not built"; exit 1; }
case $mode in
record)
    mkdir -p "$top/abi"
    # No source locations and no build paths: the record says what users link against, not where it was built.
    abidw --headers-dir "$top/include/bloomkit" --drop-private-types --no-corpus-path --no-show-locs \
          --no-comp-dir-path --out-file "$record.tmp" "$lib"
    sed "s|path='$top/|path='|" "$record.tmp" >"$record"; rm -f "$record.tmp"
    echo "abi: recorded $(grep -c '<elf-symbol ' "$record") symbols of $lib in abi/$(basename "$record")"
    ;;
check)
    [ -f "$record" ] || { echo "abi: no record $record (make abi-record)"; exit 1; }
    rc=0
    report=$(abidiff --headers-dir2 "$top/include/bloomkit" --drop-private-types "$record" "$lib") || rc=$?
    printf '%s\n' "$report"
    # "Functions changes summary: R Removed, C Changed (F filtered out), A Added functions", and the
    # same for variables: R or C above 0 breaks programs built against the record.
    changed=$(printf '%s\n' "$report" | sed -n 's/^\(Functions\|Variables\) changes summary: \([0-9]*\) Removed[^,]*, \([0-9]*\) Changed.*/\2 \3/p' |
              awk '{ n += $1 + $2 } END { print n + 0 }')
    if [ $((rc & 8)) -ne 0 ] || [ "$changed" -ne 0 ]; then
        echo "FAIL: an incompatible ABI change against abi/$(basename "$record") (abidiff exit $rc, $changed removed or changed)"; exit 1
    elif [ $((rc & 3)) -ne 0 ]; then
        echo "FAIL: abidiff could not compare (exit $rc)"; exit 1
    fi
    echo "abi: compatible with abi/$(basename "$record") (abidiff exit $rc: 0 = identical, 4 = compatible additions)"
    ;;
*) echo "usage: abi.sh record|check BUILD" >&2; exit 2 ;;
esac
