#!/usr/bin/env python3
"""No code-generating macro in src/: every #define in src/ spans at most MAX_LINES lines.

A long macro that writes functions hides them from grep, a debugger and go-to-definition; the
library writes such code as inlined functions and short adapter tables instead (ARCHITECTURE.md).
Usage: check_macros.py SOURCE_DIR [MAX_LINES]
"""
import os
import re
import sys

DEFINE = re.compile(r'^\s*#\s*define\b')


def long_macros(src, limit):
    found = []
    for dirpath, _, names in os.walk(src):
        for name in sorted(names):
            if not name.endswith(('.c', '.h')):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding='utf-8') as f:
                lines = f.read().split('\n')
            i = 0
            while i < len(lines):
                if DEFINE.match(lines[i]):
                    start = i
                    while lines[i].rstrip().endswith('\\') and i + 1 < len(lines):
                        i += 1
                    span = i - start + 1
                    if span > limit:
                        found.append((os.path.relpath(path, os.path.dirname(src)), start + 1, span))
                i += 1
    return found


def main():
    if len(sys.argv) < 2:
        sys.exit('usage: check_macros.py SOURCE_DIR [MAX_LINES]')
    src = os.path.abspath(sys.argv[1])
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    if not os.path.isdir(src):
        sys.exit('check_macros: no directory %s' % src)
    found = long_macros(src, limit)
    for path, line, span in found:
        print('%s:%d: a macro of %d lines (at most %d): write it as functions' % (path, line, span, limit))
    if found:
        sys.exit(1)
    print('check_macros: no macro in %s spans more than %d lines' % (src, limit))


if __name__ == '__main__':
    main()
