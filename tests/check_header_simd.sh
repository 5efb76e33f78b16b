#!/bin/sh
# Including <bloomkit/bloomkit.h> (the stable tier) never brings <immintrin.h> into a user's program,
# whatever the target flags; the experimental tier (<bloomkit/experimental.h>) is where it comes from,
# which this also checks on x86 so that the test can see an inclusion when there is one.
# Usage: check_header_simd.sh CC INCLUDE_DIR
set -eu
cc=$1; inc=$2
included() { # $1: header, rest: flags. Prints the immintrin.h line markers of the preprocessed program.
    h=$1; shift
    printf '#include <bloomkit/%s>\nint main(void) { return 0; }\n' "$h" |
        "$cc" -E -I"$inc" "$@" -x c - | grep -E '^# [0-9]+ "[^"]*immintrin\.h"' || true
}
for flags in "" "-mavx2" "-march=x86-64-v4" "-DBK_BLOCKED_VIEW_HAVE_AVX2"; do
    case $flags in -m*) uname -m | grep -q 'x86_64\|i.86' || continue ;; esac
    # shellcheck disable=SC2086
    [ -z "$(included bloomkit.h $flags)" ] || { echo "FAIL: bloomkit.h pulls <immintrin.h> (flags: $flags)"; exit 1; }
done
if uname -m | grep -q 'x86_64\|i.86'; then
    [ -n "$(included experimental.h -mavx2)" ] ||
        { echo "FAIL: the experimental tier should bring <immintrin.h> on x86 (the check would see nothing)"; exit 1; }
fi
echo "bloomkit.h does not include <immintrin.h>; experimental.h does, as documented"
