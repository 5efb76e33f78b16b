#!/usr/bin/env python3
"""ARCHITECTURE.md names every source file of the library, the programs and the Python extension.

A file dir/name.c is named when ARCHITECTURE.md has its whole path, or one line (a table row, a list item)
that names both its folder (dir/) and the file's own name: the map must not fall behind the tree.
Usage: check_architecture.py REPO_ROOT
"""
import os
import re
import sys

FOLDERS = ("src", "redis", "python/ext")


def sources(root):
    for top in FOLDERS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def named(path, text, lines):
    if path in text:
        return True
    folder, name = os.path.dirname(path) + "/", os.path.basename(path)
    word = re.compile(r"(?<![\w/.])" + re.escape(name) + r"(?!\w)")
    return any(folder in line and word.search(line) for line in lines)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    with open(os.path.join(root, "ARCHITECTURE.md"), encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines()
    missing = [p for p in sources(root) if not named(p, text, lines)]
    if missing:
        print("FAIL: source files ARCHITECTURE.md does not name (its path, or its folder and name on one line):")
        for p in missing:
            print("  " + p)
        return 1
    print("ARCHITECTURE.md names all %d source files" % sum(1 for _ in sources(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
