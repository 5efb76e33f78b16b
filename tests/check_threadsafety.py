#!/usr/bin/python3
"""Every public function (BK_API) in include/bloomkit/*.h states its thread-safety with the legend of
common.h: [any], [query] or [excl]. A declaration is covered by a tag
  - on its own lines (a trailing comment),
  - in the paragraph above it (the non-blank lines right before it: one comment for a group),
  - in the nearest section header above it ("/* ---- title. [tag] ---- */"), or
  - in the file's opening comment when that says "All functions are ... [tag]" (math.h).
Usage: check_threadsafety.py INCLUDE_DIR"""
import glob
import os
import re
import sys

TAG = re.compile(r"\[(any|query|excl)\]")
SECTION = re.compile(r"^/\* ----")


def uncovered(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    head = []
    for line in lines:
        head.append(line)
        if "*/" in line:
            break
    file_wide = re.search(r"All functions are[^.]*\[(any|query|excl)\]", " ".join(head)) is not None
    missing = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("BK_API"):
            i += 1
            continue
        j = i
        while ";" not in lines[j]:
            j += 1
        decl = " ".join(lines[i:j + 1])
        name = re.search(r"(\w+)\s*\(", decl).group(1)
        ok = file_wide or TAG.search(decl) is not None
        k = i - 1
        while not ok and k >= 0 and lines[k].strip():
            ok = TAG.search(lines[k]) is not None
            k -= 1
        k = i - 1
        while not ok and k >= 0:
            if SECTION.match(lines[k]):
                ok = TAG.search(lines[k]) is not None
                break
            k -= 1
        if not ok:
            missing.append("%s:%d: %s" % (os.path.basename(path), i + 1, name))
        i = j + 1
    return missing


def main():
    headers = sorted(glob.glob(os.path.join(sys.argv[1], "bloomkit", "*.h")))
    if not headers:
        print("no headers under %s" % sys.argv[1])
        return 1
    missing = [m for h in headers for m in uncovered(h)]
    if missing:
        print("public functions without a thread-safety statement ([any]/[query]/[excl], common.h):")
        print("\n".join(missing))
        return 1
    print("every public function in %d headers states its thread-safety" % len(headers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
