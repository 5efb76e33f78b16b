#!/bin/sh
# The shared library's exported symbols are exactly the functions the public headers declare with BK_API:
# every export carries the bk_ prefix, none is missing (declared but not exported: a link error for users)
# and none is extra (exported but undeclared: an accidental ABI promise). With a third argument, the
# Debian symbols file lists exactly the exported symbols too (a new call is recorded there with the
# version that adds it).
# Usage: check_symbols.sh LIBRARY INCLUDE_DIR [SYMBOLS_FILE]
set -eu
lib=$1; inc=$2; symfile=${3-}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' | sed 's/@.*//' | grep -v '^_' |
    LC_ALL=C sort -u >"$work/exported"
bad=$(grep -v '^bk_' "$work/exported" || true)
if [ -n "$bad" ]; then
    echo "FAIL: exported symbols without the bk_ prefix:"; echo "$bad"; exit 1
fi
# Each BK_API declaration, comments and preprocessor lines removed, joined onto one line: the name
# before its first "(".
find "$inc" -name '*.h' | LC_ALL=C sort | xargs cat |
    perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g; s{^[ \t]*#(?:[^\n]*\\\n)*[^\n]*}{}mg; s/\s+/ /g' |
    grep -oE 'BK_API [^;{}()]*\(' | sed -E 's/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*) *\($/\1/' |
    LC_ALL=C sort -u >"$work/declared"
[ -s "$work/declared" ] || { echo "FAIL: no BK_API declarations found under $inc"; exit 1; }
missing=$(LC_ALL=C comm -13 "$work/exported" "$work/declared")
extra=$(LC_ALL=C comm -23 "$work/exported" "$work/declared")
[ -z "$missing" ] || { echo "FAIL: declared with BK_API but not exported:"; echo "$missing"; }
[ -z "$extra" ] || { echo "FAIL: exported but not declared with BK_API in $inc:"; echo "$extra"; }
[ -z "$missing$extra" ] || exit 1
if [ -n "$symfile" ]; then
    sed -n 's/^ \(bk_[A-Za-z0-9_]*\)@Base .*/\1/p' "$symfile" | LC_ALL=C sort -u >"$work/listed"
    unlisted=$(LC_ALL=C comm -23 "$work/exported" "$work/listed")
    stale=$(LC_ALL=C comm -13 "$work/exported" "$work/listed")
    [ -z "$unlisted" ] || { echo "FAIL: exported but not listed in $symfile:"; echo "$unlisted"; }
    [ -z "$stale" ] || { echo "FAIL: listed in $symfile but not exported:"; echo "$stale"; }
    [ -z "$unlisted$stale" ] || exit 1
    echo "$symfile lists exactly the exported symbols"
fi
echo "all $(wc -l <"$work/exported") exported symbols carry the bk_ prefix and equal the BK_API declarations"
