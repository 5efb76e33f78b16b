#!/bin/sh
# Every symbol the shared library exports must carry the bk_ prefix.
lib="$1"
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^bk_' | grep -v '^_' )
if [ -n "$bad" ]; then
    echo "symbols without the bk_ prefix:"; echo "$bad"; exit 1
fi
echo "all $(nm -D --defined-only "$lib" | grep -c ' bk_') exported symbols carry the bk_ prefix"
